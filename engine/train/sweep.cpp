// Scaling sweeps and the two laws fitted to them (see sweep.h).
#include "train/sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "emulated_parts.h"
#include "train/trainer.h"

namespace paralab {

namespace {

// R² of predictions against measurements: 1 - SS_res / SS_tot. Both laws pass through S(1) = 1
// whatever their one parameter, so the point at one rank is fitted by construction and a single
// other point is fitted exactly by the parameter: R² says something only from two points beside
// N = 1 (NaN otherwise, which the window shows as n/a).
double rSquared(const std::vector<int>& ranks, const std::vector<double>& measured,
                const std::vector<double>& predicted) {
  if (std::count_if(ranks.begin(), ranks.end(), [](int n) { return n != 1; }) < 2)
    return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (double m : measured) mean += m / double(measured.size());
  double res = 0, tot = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    res += (measured[i] - predicted[i]) * (measured[i] - predicted[i]);
    tot += (measured[i] - mean) * (measured[i] - mean);
  }
  return tot > 0 ? 1.0 - res / tot : std::numeric_limits<double>::quiet_NaN();
}

// Least squares through the origin: the c minimising sum (y - c x)^2.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i];
  return xx > 0 ? xy / xx : 0.0;
}

// A fitted fraction outside [0, 1] is no fraction of the work: the run did what the law leaves
// out. `slower`: the direction in which it means more ranks slowed the work down.
std::string fractionCaveat(double f, bool slower) {
  if (!std::isfinite(f) || (f >= 0 && f <= 1)) return {};
  return slower ? "outside 0..1: more ranks made the work slower here (communication and "
                  "overheads, which the law leaves out, outweigh the split)"
                : "outside 0..1: faster than ideal here (super-linear: each rank's share fits "
                  "in cache, which the law leaves out)";
}

}  // namespace

std::string r2Text(double r2) {
  if (!std::isfinite(r2)) return "n/a";
  char text[16];
  std::snprintf(text, sizeof text, "%.3f", r2);
  return text;
}

std::string AmdahlFit::caveat() const { return fractionCaveat(p, p < 0); }
std::string GustafsonFit::caveat() const { return fractionCaveat(s, s > 1); }

AmdahlFit fitAmdahl(const std::vector<int>& ranks, const std::vector<double>& speedups) {
  // 1/S - 1 = p (1/N - 1)
  std::vector<double> x, y;
  for (size_t i = 0; i < ranks.size(); ++i) {
    x.push_back(1.0 / ranks[i] - 1.0);
    y.push_back(1.0 / speedups[i] - 1.0);
  }
  AmdahlFit f;
  f.p = slope(x, y);
  std::vector<double> predicted;
  for (int n : ranks) predicted.push_back(f.speedup(n));
  f.r2 = rSquared(ranks, speedups, predicted);
  return f;
}

GustafsonFit fitGustafson(const std::vector<int>& ranks, const std::vector<double>& speedups) {
  // N - S = s (N - 1)
  std::vector<double> x, y;
  for (size_t i = 0; i < ranks.size(); ++i) {
    x.push_back(ranks[i] - 1.0);
    y.push_back(ranks[i] - speedups[i]);
  }
  GustafsonFit f;
  f.s = slope(x, y);
  std::vector<double> predicted;
  for (int n : ranks) predicted.push_back(f.speedup(n));
  f.r2 = rSquared(ranks, speedups, predicted);
  return f;
}

SweepResult analyseSweep(Scaling scaling, const std::vector<int>& ranks,
                         const std::vector<double>& stepMs, int globalBatchAtOne) {
  SweepResult r;
  r.scaling = scaling;
  std::vector<double> speedups;
  const bool weak = scaling == Scaling::Weak;
  for (size_t i = 0; i < ranks.size(); ++i) {
    SweepPoint p;
    p.ranks = ranks[i];
    p.stepMs = stepMs[i];
    const double batch = weak ? double(globalBatchAtOne) * ranks[i] : globalBatchAtOne;
    p.samplesPerS = batch / (p.stepMs * 1e-3);
    p.speedup = (weak ? ranks[i] : 1) * stepMs[0] / p.stepMs;
    p.efficiency = p.speedup / ranks[i];
    speedups.push_back(p.speedup);
    r.points.push_back(p);
  }
  r.amdahl = fitAmdahl(ranks, speedups);
  r.gustafson = fitGustafson(ranks, speedups);
  return r;
}

std::string coresCaveat(const SweepResult& r) {
  int most = 0;
  for (const SweepPoint& p : r.points) most = std::max(most, p.ranks);
  if (r.cores <= 0 || most <= r.cores) return {};
  return "ranks beyond this machine's " + std::to_string(r.cores) +
         " cores took turns on them: those points measure sharing, not scaling";
}

std::string fitCaveat(const SweepResult& r) {
  return r.scaling == Scaling::Weak ? r.gustafson.caveat() : r.amdahl.caveat();
}

std::string fitNotes(const SweepResult& r) {
  std::string notes;
  for (std::string s : {fitCaveat(r), coresCaveat(r)}) {
    if (s.empty()) continue;
    s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
    notes += (notes.empty() ? "" : " ") + s + ".";
  }
  return notes;
}

SweepResult runSweep(const RunConfig& base, std::vector<int> ranks, int steps, int warmup,
                     const std::function<bool(int, int)>& progress) {
  const int cores = int(std::thread::hardware_concurrency());
  if (ranks.empty() || ranks.front() != 1) ranks.insert(ranks.begin(), 1);
  const int total = int(ranks.size()) * (steps + warmup);
  int done = 0;
  std::vector<int> measuredRanks;
  std::vector<double> medians;
  std::vector<std::vector<double>> losses;  // per point, every step's loss
  for (int n : ranks) {
    RunConfig c = base;
    c.ranks = n;
    c.steps = 0;
    c.evalEvery = 0;
    Trainer t(c);
    std::vector<double> times;
    losses.emplace_back();
    for (int s = 0; s < warmup + steps; ++s) {
      const StepMetrics m = t.step();
      losses.back().push_back(m.loss);
      if (s >= warmup) times.push_back(m.stepMs);
      if (progress && !progress(++done, total)) {
        SweepResult partial = measuredRanks.empty()
                                  ? SweepResult{}
                                  : analyseSweep(base.scaling, measuredRanks, medians, base.batch);
        partial.scaling = base.scaling;
        partial.cancelled = true;
        partial.cores = cores;
        return partial;
      }
    }
    std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
    measuredRanks.push_back(n);
    medians.push_back(times[times.size() / 2]);
  }
  SweepResult r = analyseSweep(base.scaling, measuredRanks, medians, base.batch);
  r.cores = cores;
  if (r.scaling == Scaling::Strong)  // the same global batch at every rank count: the same losses
    for (size_t i = 0; i < r.points.size(); ++i) {
      double gap = 0;
      for (size_t s = 0; s < losses[i].size(); ++s)
        gap = std::max(gap, std::abs(losses[i][s] - losses[0][s]));
      r.points[i].lossGap = gap;
    }
  return r;
}

double SweepResult::maxLossGap() const {
  double gap = std::numeric_limits<double>::quiet_NaN();
  for (const SweepPoint& p : points)
    if (std::isfinite(p.lossGap)) gap = std::isfinite(gap) ? std::max(gap, p.lossGap) : p.lossGap;
  return gap;
}

nlohmann::json toJson(const SweepResult& r, const RunConfig& base) {
  nlohmann::json j = {{"schema", kMetricsSchema},
                      {"sweep", true},
                      {"scaling", nameOf(r.scaling)},
                      {"amdahl_p", r.amdahl.p},
                      {"amdahl_r2", r.amdahl.r2},
                      {"gustafson_serial_fraction", r.gustafson.s},
                      {"gustafson_r2", r.gustafson.r2},
                      {"config", base.toJson()},
                      {"points", nlohmann::json::array()}};
  if (const std::string e = emulatedBriefs(base); !e.empty()) j["emulated"] = e;
  if (r.cores > 0) j["cores"] = r.cores;
  if (std::isfinite(r.maxLossGap())) j["loss_gap_max"] = r.maxLossGap();
  for (const SweepPoint& p : r.points) {
    nlohmann::json point = {{"ranks", p.ranks},
                            {"step_ms", p.stepMs},
                            {"samples_per_s", p.samplesPerS},
                            {"speedup", p.speedup},
                            {"efficiency", p.efficiency}};
    if (std::isfinite(p.lossGap)) point["loss_gap"] = p.lossGap;
    j["points"].push_back(point);
  }
  return j;
}

int machineCores() { return std::max(1, int(std::thread::hardware_concurrency())); }

std::optional<std::vector<int>> coresSizedRanks(const std::string& form, int cores) {
  const bool multiple =
      form.size() == 7 && form.substr(1) == "*cores" && form[0] >= '2' && form[0] <= '8';
  if (form != "cores" && !multiple) return std::nullopt;
  const int times = multiple ? form[0] - '0' : 1;
  const int most = std::clamp(times * cores, 2, 64);  // 64: the engine's largest world
  std::vector<int> out;
  for (int n = 1; n < most; n *= 2) out.push_back(n);
  if (cores < most) out.push_back(cores);  // the point at the cores, to compare past it with
  out.push_back(most);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string fitBasis(int first, int last, int cores) {
  const std::string over = "ranks " + std::to_string(first) + "–" + std::to_string(last);
  if (cores <= 0) return over;
  return over + (last <= cores ? ", a core each" : ", cores shared past " + std::to_string(cores));
}

std::vector<int> parseSweep(const std::string& spec) {
  const std::string prefix = "ranks=";
  if (spec.rfind(prefix, 0) != 0)
    throw ConfigError("sweep: expected ranks=1,2,4,..., ranks=cores or ranks=2*cores (got '" +
                      spec + "')");
  if (auto sized = coresSizedRanks(spec.substr(prefix.size()), machineCores())) return *sized;
  std::vector<int> out;
  std::stringstream ss(spec.substr(prefix.size()));
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int n = std::stoi(item, &used);
      if (used != item.size() || n < 1 || n > 64) throw std::invalid_argument(item);
      out.push_back(n);
    } catch (const std::exception&) {
      throw ConfigError("sweep: '" + item +
                        "' is not a rank count (allowed: 1..64, or ranks=cores, ranks=2*cores .. "
                        "ranks=8*cores)");
    }
  }
  if (out.empty()) throw ConfigError("sweep: no rank counts given (e.g. ranks=1,2,4,8)");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace paralab
