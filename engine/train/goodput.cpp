// Training through emulated failures with periodic checkpoints, and its goodput (goodput.h).
// See tests/engine/tst_goodput.cpp.
#include "train/goodput.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "config.h"
#include "metrics/span_recorder.h"  // nowNs
#include "train/checkpoint.h"
#include "train/goodput_sweep.h"
#include "train/trainer.h"

namespace paralab {

double youngDalyIntervalS(double checkpointCostS, double mtbfS) {
  return std::sqrt(2 * checkpointCostS * mtbfS);
}

GoodputReport trainWithFailures(Trainer& t, const std::string& checkpointPath,
                                const std::function<void(const StepMetrics&)>& onStep,
                                std::optional<uint64_t> failureSeed) {
  const RunConfig& c = t.config();
  GoodputReport r;
  r.mtbfS = c.mtbfS;
  r.checkpointEvery = c.checkpointEvery;
  r.steps = c.steps;
  FailureClock clock(c.mtbfS, failureSeed.value_or(c.seed));
  // Before the first checkpoint a failure restarts from the start: the initial state, kept in
  // memory (a real job rebuilds it from the seed), its reading not counted.
  const TrainingState initial = t.saveState();
  bool haveCheckpoint = false;
  const int64_t start = nowNs();
  int64_t nextFailure = start + int64_t(clock.nextGapS() * 1e9);
  int64_t sinceCheckpoint = start;  // work since then is lost at a failure
  double usefulStepNs = 0;          // the last successful pass over each step, summed
  std::vector<double> stepNs(size_t(c.steps) + 1, 0);
  while (t.stepsDone() < c.steps) {
    const int64_t s0 = nowNs();
    const StepMetrics m = t.step();
    ++r.stepsRun;
    stepNs[size_t(m.step)] = double(nowNs() - s0);
    if (onStep) onStep(m);
    if (nowNs() >= nextFailure) {
      // A failure in this step (emulated): the steps since the last checkpoint are lost, and
      // the run restarts from it (read back from the file) or from the start.
      if (++r.failures > 1000)
        throw std::runtime_error("mtbf: " + std::to_string(c.mtbfS) +
                                 " s leaves no step standing after 1000 failures (allowed: a "
                                 "mean gap longer than a checkpoint interval)");
      const int64_t r0 = nowNs();
      if (haveCheckpoint)
        t.loadState(readCheckpoint(checkpointPath).state);
      else
        t.loadState(initial);
      const int64_t now = nowNs();
      r.restartS += double(now - r0) * 1e-9;
      r.lostS += double(now - sinceCheckpoint) * 1e-9;
      sinceCheckpoint = now;
      nextFailure = now + int64_t(clock.nextGapS() * 1e9);
      continue;
    }
    if (c.checkpointEvery > 0 && t.stepsDone() % c.checkpointEvery == 0 &&
        t.stepsDone() < c.steps) {
      const int64_t c0 = nowNs();
      const TrainingState state = t.saveState();  // collective: every rank takes part
      writeCheckpoint(checkpointPath, state, c, t.parameterCount());
      const int64_t c1 = nowNs();
      r.checkpointS += double(c1 - c0) * 1e-9;
      ++r.checkpoints;
      haveCheckpoint = true;
      sinceCheckpoint = c1;
    }
  }
  r.wallS = double(nowNs() - start) * 1e-9;
  for (int64_t s = 1; s <= c.steps; ++s) usefulStepNs += stepNs[size_t(s)];
  r.stepS = usefulStepNs * 1e-9 / double(c.steps);
  r.goodput = r.wallS > 0 ? double(c.steps) / r.wallS : 0;
  r.checkpointCostS = r.checkpoints > 0 ? r.checkpointS / r.checkpoints : 0;
  if (r.checkpointCostS > 0) {
    r.youngDalyS = youngDalyIntervalS(r.checkpointCostS, c.mtbfS);
    r.youngDalySteps = r.stepS > 0 ? r.youngDalyS / r.stepS : 0;
  }
  std::error_code ec;
  std::filesystem::remove(checkpointPath, ec);
  return r;
}

nlohmann::json toJson(const GoodputReport& r) {
  return {{"mtbf_s", r.mtbfS},
          {"checkpoint_every", r.checkpointEvery},
          {"steps_run", r.stepsRun},
          {"failures", r.failures},
          {"checkpoints", r.checkpoints},
          {"wall_s", r.wallS},
          {"lost_s", r.lostS},
          {"restart_s", r.restartS},
          {"checkpoint_s", r.checkpointS},
          {"checkpoint_cost_s", r.checkpointCostS},
          {"step_s", r.stepS},
          {"goodput", r.goodput},
          {"young_daly_s", r.youngDalyS},
          {"young_daly_steps", r.youngDalySteps}};
}

// [SECTION] The sweep over K

namespace {
constexpr char kSweepPrefix[] = "checkpoint-every=";
struct SweepCancelled {};
}  // namespace

bool isCheckpointSweep(const std::string& spec) { return spec.rfind(kSweepPrefix, 0) == 0; }

std::vector<int> parseCheckpointSweep(const std::string& spec) {
  if (!isCheckpointSweep(spec))
    throw ConfigError("sweep: expected checkpoint-every=1,2,4,... (got '" + spec + "')");
  std::vector<int> out;
  std::stringstream ss(spec.substr(sizeof(kSweepPrefix) - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int k = std::stoi(item, &used);
      if (used != item.size() || k < 1 || k > 1000000) throw std::invalid_argument(item);
      out.push_back(k);
    } catch (const std::exception&) {
      throw ConfigError("sweep: '" + item +
                        "' is not a checkpoint interval (allowed: 1..1000000 steps)");
    }
  }
  if (out.empty()) throw ConfigError("sweep: checkpoint-every= needs at least one interval");
  return out;
}

GoodputSweepResult runGoodputSweep(const RunConfig& base, const std::vector<int>& ks, int repeats,
                                   const std::string& dir,
                                   const std::function<bool(int, int)>& progress) {
  GoodputSweepResult out;
  out.mtbfS = base.mtbfS;
  out.steps = base.steps;
  out.repeats = std::max(1, repeats);
  const std::string file = (std::filesystem::path(dir) / "goodput-sweep.ckpt").string();
  const int total = int(ks.size()) * out.repeats * int(base.steps);
  int done = 0, checkpoints = 0, restarts = 0;
  double checkpointS = 0, stepS = 0, restartS = 0;
  int runs = 0;
  std::vector<GoodputPoint> points(ks.size());
  std::vector<int64_t> useful(ks.size(), 0);
  std::vector<int> runsOf(ks.size(), 0);
  for (size_t j = 0; j < ks.size(); ++j) points[j].checkpointEvery = ks[j];
  try {
    // Repeat by repeat over every K, so a change in the machine's load while the sweep runs
    // (another program) falls on every K alike rather than on the Ks measured then.
    for (int i = 0; i < out.repeats; ++i)
      for (size_t j = 0; j < ks.size(); ++j) {
        RunConfig c = base;
        c.checkpointEvery = ks[j];
        Trainer t(c);
        const int before = done;
        const GoodputReport r = trainWithFailures(
            t, file,
            [&](const StepMetrics& m) {
              done = before + int(m.step);
              if (progress && !progress(std::min(done, total), total)) throw SweepCancelled{};
            },
            base.seed + uint64_t(i));
        done = before + int(base.steps);
        GoodputPoint& p = points[j];
        useful[j] += r.steps;
        ++runsOf[j];
        p.failures += r.failures;
        p.checkpoints += r.checkpoints;
        p.wallS += r.wallS;
        p.lostS += r.lostS;
        p.checkpointS += r.checkpointS;
        p.stepS += r.stepS;
        checkpoints += r.checkpoints;
        checkpointS += r.checkpointS;
        restarts += r.failures;
        restartS += r.restartS;
        stepS += r.stepS;
        ++runs;
      }
  } catch (const SweepCancelled&) {
    out.cancelled = true;
    std::error_code ec;
    std::filesystem::remove(file, ec);
  }
  // Ks with as many runs as the first (a cancelled sweep: those the last repeat reached), so the
  // points kept share their failure times.
  for (size_t j = 0; j < ks.size(); ++j) {
    GoodputPoint& p = points[j];
    if (runsOf[j] == 0 || runsOf[j] != runsOf[0]) break;
    p.goodput = p.wallS > 0 ? double(useful[j]) / p.wallS : 0;
    p.stepS /= runsOf[j];
    out.points.push_back(p);
  }
  out.checkpointWriteS = checkpoints > 0 ? checkpointS / checkpoints : 0;
  out.restartS = restarts > 0 ? restartS / restarts : 0;
  out.stepS = runs > 0 ? stepS / runs : 0;
  out.checkpointCostS = out.checkpointWriteS;
  // What a checkpoint costs the run: per run, time not lost (y) against checkpoints (x).
  if (out.points.size() >= 2) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const GoodputPoint& p : out.points) {
      const double runsK = double(runsOf[0]);
      const double x = p.checkpoints / runsK, y = (p.wallS - p.lostS) / runsK;
      n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double d = n * sxx - sx * sx;
    const double slope = d > 0 ? (n * sxy - sx * sy) / d : 0;
    const double intercept = (sy - slope * sx) / n;
    if (slope > 0 && intercept > 0) {
      out.checkpointCostS = slope;
      out.stepS = intercept / double(base.steps);
    }
  }
  if (out.checkpointCostS > 0 && out.mtbfS > 0) {
    out.youngDalyS = youngDalyIntervalS(out.checkpointCostS, out.mtbfS);
    out.youngDalySteps = out.stepS > 0 ? out.youngDalyS / out.stepS : 0;
  }
  const auto best = std::max_element(
      out.points.begin(), out.points.end(),
      [](const GoodputPoint& a, const GoodputPoint& b) { return a.goodput < b.goodput; });
  if (best != out.points.end()) out.bestK = best->checkpointEvery;
  return out;
}

nlohmann::json toJson(const GoodputSweepResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const GoodputPoint& p : r.points)
    points.push_back({{"checkpoint_every", p.checkpointEvery},
                      {"goodput", p.goodput},
                      {"failures", p.failures},
                      {"checkpoints", p.checkpoints},
                      {"wall_s", p.wallS},
                      {"lost_s", p.lostS},
                      {"checkpoint_s", p.checkpointS},
                      {"step_s", p.stepS}});
  return {{"goodput_sweep",
           {{"mtbf_s", r.mtbfS},
            {"steps", r.steps},
            {"repeats", r.repeats},
            {"points", points},
            {"checkpoint_cost_s", r.checkpointCostS},
            {"checkpoint_write_s", r.checkpointWriteS},
            {"restart_s", r.restartS},
            {"step_s", r.stepS},
            {"young_daly_s", r.youngDalyS},
            {"young_daly_steps", r.youngDalySteps},
            {"best_k", r.bestK},
            {"cancelled", r.cancelled}}}};
}

}  // namespace paralab
