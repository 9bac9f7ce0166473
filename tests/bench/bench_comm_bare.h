// The bare all-reduce paralab-bench comm measures ThreadComm against: N threads of one process,
// each summing its 1/N of every buffer and writing the sum back into all of them (what any
// shared-memory all-reduce must at least read and write), with no communicator around it.
// paralab-bench comm times it on ThreadComm's own threads and buffers, interleaved with the
// collectives. Try: paralab-bench comm --backend thread --max-bytes 16777216 ("bare" columns).
#pragma once
#include <cstdint>
#include <string>

namespace paralab::bench {

// Rank r's part of the bare in-place all-reduce of `count` floats over the n buffers `bufs`:
// sums floats [count·r/n, count·(r+1)/n) of all of them and writes the sum into all of them.
// The all-reduce is done when every rank's part is, so the caller waits at a barrier after.
void bareAllReduceSlice(float* const* bufs, int n, int r, int64_t count);

// The vector code the bare sum runs on this CPU: "avx512", "avx2" or "baseline" (the CPU's
// features pick it, as -march=native would on this CPU).
std::string bareAllReduceLevel();

}  // namespace paralab::bench
