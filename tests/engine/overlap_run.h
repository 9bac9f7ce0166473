// What the overlap tests share: a run's overlap meter, every rank's summed over its steps.
// Used by tst_overlap (bucketed against per-tensor data parallelism) and tst_tp_overlap.
#pragma once
#include "metrics/overlap.h"
#include "train/trainer.h"

namespace paralab::test {

// Every rank's meter summed over `steps` steps after a first one (its buffers are made then);
// empty when a step carries no meter.
inline OverlapMeter meterOverSteps(const RunConfig& c, int steps) {
  Trainer t(c);
  t.step();
  OverlapMeter sum;
  for (int s = 0; s < steps; ++s)
    for (const RankMetrics& r : t.step().ranks) {
      if (!r.overlap) return {};
      sum += *r.overlap;
    }
  return sum;
}

}  // namespace paralab::test
