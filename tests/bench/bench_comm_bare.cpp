// A bare N-thread all-reduce (bench_comm_bare.h): the memory-bandwidth bound ThreadComm's
// direct all-reduce is held to (a ratio of 0.9 or better at 16 MiB). The sum is compiled for
// AVX-512, AVX2 and baseline x86-64 and the best the CPU runs is used, so the reference is what
// -O3 -march=native gives without tying the binary to one CPU.
// See `paralab-bench comm --backend thread` (the "bare" columns and ours/bare).
#include "bench_comm_bare.h"

#include <algorithm>

namespace paralab::bench {

namespace {

// Sums floats [begin, begin + len) of the n buffers and writes the sum into all of them, a block
// that stays in L1 at a time. Only the thread that owns the range touches it. Inlined into one
// copy per instruction set below; the CPU's features pick the copy.
__attribute__((always_inline)) inline void sumSlice(float* const* bufs, int n, int64_t begin,
                                                    int64_t len) {
  constexpr int64_t kBlock = 2048;
  alignas(64) float acc[kBlock];
  for (int64_t b = begin; b < begin + len; b += kBlock) {
    const int64_t m = std::min(kBlock, begin + len - b);
    const float* s0 = bufs[0] + b;
    for (int64_t i = 0; i < m; ++i) acc[i] = s0[i];
    for (int q = 1; q < n; ++q) {
      const float* s = bufs[q] + b;
      for (int64_t i = 0; i < m; ++i) acc[i] += s[i];
    }
    for (int q = 0; q < n; ++q) std::copy(acc, acc + m, bufs[q] + b);
  }
}

__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))) void sumAvx512(
    float* const* bufs, int n, int64_t begin, int64_t len) {
  sumSlice(bufs, n, begin, len);
}
__attribute__((target("avx2,fma"))) void sumAvx2(float* const* bufs, int n, int64_t begin,
                                                 int64_t len) {
  sumSlice(bufs, n, begin, len);
}
void sumBaseline(float* const* bufs, int n, int64_t begin, int64_t len) {
  sumSlice(bufs, n, begin, len);
}

bool hasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}
bool hasAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

}  // namespace

std::string bareAllReduceLevel() {
  return hasAvx512() ? "avx512" : hasAvx2() ? "avx2" : "baseline";
}

void bareAllReduceSlice(float* const* bufs, int n, int r, int64_t count) {
  static const auto sum = hasAvx512() ? sumAvx512 : hasAvx2() ? sumAvx2 : sumBaseline;
  const int64_t begin = count * r / n;
  sum(bufs, n, begin, count * (r + 1) / n - begin);
}

}  // namespace paralab::bench
