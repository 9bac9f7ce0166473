// Failures at random and the checkpoint interval, measured: --mtbf SECONDS draws emulated
// failures with that mean (exponential gaps in the run's wall time, from the run's seed); with
// --checkpoint-every K the run writes a checkpoint file every K steps, and at a failure loses the
// steps since the last one, reads it back and goes on, to its step count. It reports goodput
// (useful steps per second of wall time), the time lost to redone steps and to checkpointing,
// and Young/Daly's interval sqrt(2 C MTBF) from the measured checkpoint cost C.
// See tests/engine/tst_goodput.cpp and `paralab-run --mtbf 0.5 --checkpoint-every 8`.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "metrics/metrics.h"

namespace paralab {

class Trainer;
struct RunConfig;

struct GoodputReport {
  double mtbfS = 0;         // the emulated failures' mean gap, s
  int checkpointEvery = 0;  // K, steps (0: none: a failure restarts from the first step)
  int64_t steps = 0;        // useful steps: the run's step count
  int64_t stepsRun = 0;     // steps executed, redone ones included
  int failures = 0;
  int checkpoints = 0;
  double wallS = 0;            // the whole run, s
  double lostS = 0;            // steps lost to failures and the restarts' reading, s
  double restartS = 0;         // of lostS: reading the checkpoint back at the restarts, s
  double checkpointS = 0;      // writing checkpoints, s
  double checkpointCostS = 0;  // C: one checkpoint's mean time, s (0 without any)
  double stepS = 0;            // a useful step's mean time, s
  double goodput = 0;          // steps / wallS, steps/s
  // Young/Daly: the checkpoint interval sqrt(2 C MTBF), s of work, and in steps (/ stepS).
  double youngDalyS = 0, youngDalySteps = 0;
};

// The emulated failures: exponential gaps of mean `mtbfS`, drawn from `seed`.
class FailureClock {
 public:
  FailureClock(double mtbfS, uint64_t seed) : m_rng(seed), m_gap(1.0 / mtbfS) {}
  double nextGapS() { return m_gap(m_rng); }

 private:
  std::mt19937_64 m_rng;
  std::exponential_distribution<double> m_gap;
};

// Trains `t` (fresh, at step 0) to its config's step count under its --mtbf and
// --checkpoint-every, calling `onStep` for every step run (redone ones again). The checkpoint
// is `checkpointPath` (written atomically, train/checkpoint.h; removed at the end). Throws
// std::runtime_error when failures come so often that no step survives (after 1000 failures).
// `failureSeed` draws the failure times (default: the run's seed).
GoodputReport trainWithFailures(Trainer& t, const std::string& checkpointPath,
                                const std::function<void(const StepMetrics&)>& onStep = {},
                                std::optional<uint64_t> failureSeed = std::nullopt);

// Young (1974) / Daly (2006): sqrt(2 C MTBF), the first-order optimal interval between
// checkpoints, s.
double youngDalyIntervalS(double checkpointCostS, double mtbfS);

// The summary line's "goodput" block (lessons/reference/metrics.md).
nlohmann::json toJson(const GoodputReport& r);

}  // namespace paralab
