// Scaling sweeps: the same run at 1, 2, 4, ... ranks, the speedup and efficiency of each, and
// the Amdahl and Gustafson laws fitted to the measured points (drawn beside them as
// references). See tests/engine/tst_sweep.cpp and `paralab-run --sweep ranks=1,2,4,8`.
#pragma once
#include <functional>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config.h"

namespace paralab {

struct SweepPoint {
  int ranks = 1;
  double stepMs = 0;       // median step time, ms
  double samplesPerS = 0;  // global batch / median step time
  double speedup = 1;      // strong: T1 / TN; weak (scaled speedup): N * T1 / TN
  double efficiency = 1;   // speedup / N
  // Strong scaling (the same global batch and seed at every rank count): the largest
  // |loss − the 1-rank run's loss| over the steps run, warm-up included (nats). A synchronous
  // strategy keeps it at rounding (about 1e-8 measured at 4 ranks); an asynchronous one
  // drifts. Weak scaling trains on more samples per step, so no gap is taken (NaN).
  double lossGap = std::numeric_limits<double>::quiet_NaN();
};

// Amdahl (1967): a fraction p of the work parallelises perfectly, the rest not at all:
// S(N) = 1 / ((1 - p) + p / N). Least squares on 1/S (linear in p); r2 is on S.
struct AmdahlFit {
  double p = 0;
  double r2 = 0;  // NaN with fewer than two points beside N = 1 (one would be fitted exactly)
  double speedup(double n) const { return 1.0 / ((1.0 - p) + p / n); }
  // Empty when 0 <= p <= 1; otherwise what a fraction outside it says about the run.
  std::string caveat() const;
};
// Gustafson (1988): with the work grown with N, the scaled speedup is S(N) = N - s (N - 1),
// s the serial fraction of the parallel run. Least squares on N - S (linear in s).
struct GustafsonFit {
  double s = 0;
  double r2 = 0;  // as AmdahlFit::r2
  double speedup(double n) const { return n - s * (n - 1.0); }
  std::string caveat() const;  // as AmdahlFit's, for s
};

AmdahlFit fitAmdahl(const std::vector<int>& ranks, const std::vector<double>& speedups);
GustafsonFit fitGustafson(const std::vector<int>& ranks, const std::vector<double>& speedups);

struct SweepResult {
  Scaling scaling = Scaling::Strong;
  std::vector<SweepPoint> points;
  AmdahlFit amdahl;
  GustafsonFit gustafson;
  bool cancelled = false;
  int cores = 0;  // hardware threads of the machine that ran it (0: not known)
  double maxLossGap() const;  // the largest point's lossGap (NaN: none taken)
};

// Empty unless the sweep ran more ranks than its machine has cores; then one sentence: those
// ranks took turns on the cores, so their points measure sharing, not scaling.
std::string coresCaveat(const SweepResult& result);
// The caveat of the law the sweep's scaling is fitted with (Amdahl strong, Gustafson weak).
std::string fitCaveat(const SweepResult& result);
// Both caveats as sentences to follow the fit where it is shown (sweep panel, summary):
// "Outside 0..1: ... . Ranks beyond ... ." — "" when neither applies.
std::string fitNotes(const SweepResult& result);

// Computes speedups, efficiencies and both fits from measured (ranks, median step ms) pairs;
// the first point must be the 1-rank baseline.
SweepResult analyseSweep(Scaling scaling, const std::vector<int>& ranks,
                         const std::vector<double>& stepMs, int globalBatchAtOne);

// Runs `base` at each rank count (1 is added first when missing): `warmup` steps, then the
// median of `steps` step times. `progress(done, total)` is called after every step; returning
// false cancels (the result holds the points finished so far).
SweepResult runSweep(const RunConfig& base, std::vector<int> ranks, int steps, int warmup,
                     const std::function<bool(int, int)>& progress = {});

// The sweep as one JSON object (paralab-run --sweep --json, the lessons' comparisons):
// scaling, both fits, the configuration and a row per point; "emulated" under a link model.
nlohmann::json toJson(const SweepResult& result, const RunConfig& base);

// [SECTION] Sweeps sized to the machine.
// The machine's cores as the engine counts them: hardware threads, at least 1 (what runSweep
// records and what a thread group compares its ranks with to call itself oversubscribed).
int machineCores();
// The rank counts a sweep sized to the machine runs, for a form "cores" (1, 2, 4, ... up to
// `cores`, and `cores` itself) or "K*cores", K = 2..8 (the same continued to K x `cores`: the
// points past the cores show what oversubscription looks like). Always at least {1, 2}; at most
// 64 ranks. nullopt when `form` is neither.
std::optional<std::vector<int>> coresSizedRanks(const std::string& form, int cores);
// What a fit over ranks first..last stands on, for its label: "ranks 1–2, a core each" or
// "ranks 1–8, cores shared past 2" (just "ranks 1–8" where `cores` is 0, not known).
std::string fitBasis(int first, int last, int cores);
// A fit's R² as every text prints it: "0.987", or "n/a" where it says nothing (NaN: fewer than
// two rank counts beside one).
std::string r2Text(double r2);

// "ranks=1,2,4,8" -> {1, 2, 4, 8}; "ranks=cores", "ranks=2*cores": coresSizedRanks on this
// machine; throws ConfigError naming the field otherwise.
std::vector<int> parseSweep(const std::string& spec);

}  // namespace paralab
