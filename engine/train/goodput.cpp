// Training through emulated failures with periodic checkpoints, and its goodput (goodput.h).
// See tests/engine/tst_goodput.cpp.
#include "train/goodput.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "config.h"
#include "metrics/span_recorder.h"  // nowNs
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace paralab {

double youngDalyIntervalS(double checkpointCostS, double mtbfS) {
  return std::sqrt(2 * checkpointCostS * mtbfS);
}

GoodputReport trainWithFailures(Trainer& t, const std::string& checkpointPath,
                                const std::function<void(const StepMetrics&)>& onStep) {
  const RunConfig& c = t.config();
  GoodputReport r;
  r.mtbfS = c.mtbfS;
  r.checkpointEvery = c.checkpointEvery;
  r.steps = c.steps;
  FailureClock clock(c.mtbfS, c.seed);
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
      if (haveCheckpoint)
        t.loadState(readCheckpoint(checkpointPath).state);
      else
        t.loadState(initial);
      const int64_t now = nowNs();
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
          {"checkpoint_s", r.checkpointS},
          {"checkpoint_cost_s", r.checkpointCostS},
          {"step_s", r.stepS},
          {"goodput", r.goodput},
          {"young_daly_s", r.youngDalyS},
          {"young_daly_steps", r.youngDalySteps}};
}

}  // namespace paralab
