// ZeRO's model-state formula as the lesson states it (Rajbhandari et al. 2020), in one place:
// bytes of params + grads + Adam state per rank for P fp32 parameters over N ranks (4 + 4 + 8
// bytes each): 16P; stage 1: 8P + 8P/N; stage 2: 4P + 12P/N; stage 3: 16P/N. Written out apart
// from the engine's policy (parallel/data/zero_policy.h) so that the tests comparing the two can
// fail. Used by tst_zero and tst_grad_sync.
#pragma once

#include "memory/memory_tracker.h"

namespace paralab::test {

inline double zeroFormulaBytes(int stage, int n, double p) {
  switch (stage) {
    case 0:
      return 16 * p;
    case 1:
      return 4 * p + 4 * p + 8 * p / n;
    case 2:
      return 4 * p + 12 * p / n;
    default:
      return 16 * p / n;
  }
}

// What the formula counts, from a rank's tracking allocator.
inline int64_t modelStates(const MemorySnapshot& m) {
  return m[MemCategory::Params] + m[MemCategory::Grads] + m[MemCategory::Optimizer];
}

}  // namespace paralab::test
