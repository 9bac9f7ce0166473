// False sharing, measured over thread counts: 1..N threads each bump their own counter, the
// counters side by side in one 64-byte cache line (shared) or each on its own line (padded),
// timed as nanoseconds per increment (kernels/cpu/teach.h does one thread count). `paralab-bench
// teach` prints it; a lesson's ```bench {"kind": "false-sharing"} step draws it.
// See tests/engine/tst_teach_bench.cpp.
#pragma once
#include <vector>

#include "teach/gemm_ladder.h"  // BenchProgress

namespace paralab::teach {

struct FalseSharingOptions {
  int maxThreads = 2;           // 1..8: thread counts 1, 2, ..., maxThreads
  long increments = 2'000'000;  // per thread, per timed run
  int repeats = 3;              // timed runs per layout and thread count (the median is kept)
};

struct FalseSharingPoint {
  int threads = 0;
  // Wall time of the run over the increments each thread did, ns: what one increment costs a
  // thread while the others run beside it.
  double sharedNs = 0;  // counters in one cache line
  double paddedNs = 0;  // one line each
  double slowdown() const { return paddedNs > 0 ? sharedNs / paddedNs : 0; }
};

struct FalseSharingSweep {
  long increments = 0;
  int cores = 0;  // hardware threads the OS reports: more threads than this take turns
  std::vector<FalseSharingPoint> points;  // by thread count, 1 first
  bool cancelled = false;
};

// Throws std::invalid_argument naming a bad option.
FalseSharingSweep runFalseSharing(const FalseSharingOptions& options,
                                  const BenchProgress& progress = {});

}  // namespace paralab::teach
