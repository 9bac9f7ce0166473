// Teaching experiments on the CPU: each runs a small measurement and returns what it saw.
// False sharing: two threads bump their own counters, either side by side in one 64-byte cache
// line or padded to a line each. See tests/kernels/tst_teach.cpp and `paralab-bench teach`.
#pragma once

namespace paralab::kernels {

struct FalseSharingResult {
  int threads = 0;
  long increments = 0;         // per thread
  double packedSeconds = 0;    // counters 8 bytes apart, in one cache line (median of repeats)
  double paddedSeconds = 0;    // each counter alone on its own 64-byte line
  // How many times slower sharing a line is. Depends on the machine: threads that the OS puts
  // on one core, or on SMT siblings, share their L1 and see little difference.
  double slowdown() const { return paddedSeconds > 0 ? packedSeconds / paddedSeconds : 0; }
};

// Each of `threads` (1..8) threads does `increments` atomic increments of its own counter. An
// atomic add must own the cache line while it runs, so each increment of a shared line waits
// for the line to come back from the other core. (A plain load-add-store would mostly sit in
// the store buffer, which drains many updates per visit of the line and hides the effect.)
FalseSharingResult false_sharing_experiment(long increments = 20'000'000, int threads = 2,
                                            int repeats = 3);

}  // namespace paralab::kernels
