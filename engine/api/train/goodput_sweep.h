// The goodput sweep: the same run under the same emulated failures (--mtbf, seeded) at each
// checkpoint interval K, its goodput (useful steps per second of wall time) against K beside
// Young/Daly's optimum sqrt(2 C MTBF), C the checkpoint cost measured over the sweep's
// checkpoints. See tests/engine/tst_goodput.cpp and
// `paralab-run --mtbf 0.1 --steps 2000 --sweep checkpoint-every=1,2,4,8,16,32,64`.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config.h"

namespace paralab {

struct GoodputPoint {
  int checkpointEvery = 0;  // K, steps
  double goodput = 0;       // useful steps / wall s over the point's runs, steps/s
  int failures = 0;         // over its runs
  int checkpoints = 0;
  double wallS = 0, lostS = 0, checkpointS = 0;  // over its runs, s
  double stepS = 0;                              // a useful step's mean time in its runs, s
};

struct GoodputSweepResult {
  double mtbfS = 0;
  int64_t steps = 0;  // useful steps of each run
  int repeats = 0;    // runs per K, each with its own failure times (the same ones at every K)
  std::vector<GoodputPoint> points;
  // C, what a checkpoint costs the run, s: the slope of the time a run spends on anything but
  // lost work (its useful steps and its checkpoints) against its checkpoints' count, over the
  // Ks (least squares). It holds the write (the state gathered, the file written and synced)
  // and what the write does to the steps beside it (their caches, the processor's share), which
  // the write's own time leaves out. checkpointWriteS: the writes' mean time alone, s.
  double checkpointCostS = 0, checkpointWriteS = 0;
  // The step's time (the fit's intercept / steps), s; Young/Daly's interval sqrt(2 C MTBF) in s
  // of work and in steps (youngDalyS / stepS).
  double stepS = 0, youngDalyS = 0, youngDalySteps = 0;
  double restartS = 0;  // one restart's mean cost (the checkpoint read back), s
  int bestK = 0;        // the K of the highest goodput (0: no point)
  bool cancelled = false;
};

// "checkpoint-every=1,2,4,8" -> {1, 2, 4, 8} (1..1000000); throws ConfigError naming the field.
// Whether `spec` asks for it at all: isCheckpointSweep (its prefix).
std::vector<int> parseCheckpointSweep(const std::string& spec);
bool isCheckpointSweep(const std::string& spec);

// Runs `base` (its --mtbf > 0) at each K, `repeats` times each with failure seeds seed,
// seed + 1, ... (the same at every K, so the points differ by K alone); checkpoints go to a file
// in `dir`. `progress(done, total)` in useful steps; returning false cancels (the points
// finished are kept).
GoodputSweepResult runGoodputSweep(const RunConfig& base, const std::vector<int>& ks, int repeats,
                                   const std::string& dir,
                                   const std::function<bool(int, int)>& progress = {});

// The sweep as one JSON object (paralab-run --sweep checkpoint-every=... --json).
nlohmann::json toJson(const GoodputSweepResult& r);

}  // namespace paralab
