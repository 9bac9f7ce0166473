// SIMD width, measured: one core's FP32 rate with 12 independent fused multiply-add chains on
// vectors of 1, 4, 8 and 16 floats (scalar, SSE, AVX2, AVX-512), each width the CPU has. The
// same instruction count moves 16 times the floats at 16 lanes, if the core's FMA units are as
// wide as the vector. `paralab-bench teach` prints it; a lesson's ```bench {"kind":
// "simd-width"} step draws it. See tests/engine/tst_teach_bench.cpp.
#pragma once
#include <string>
#include <vector>

#include "teach/gemm_ladder.h"  // BenchProgress

namespace paralab::teach {

struct SimdWidthPoint {
  int lanes = 0;        // floats per FMA instruction: 1, 4, 8, 16
  std::string isa;      // "scalar", "SSE", "AVX2", "AVX-512"
  double gflops = 0;    // 2 × lanes × FMAs / median seconds, 1e9 flop/s; 0 when skipped
  std::string skipped;  // why it did not run ("" it ran): the CPU lacks the instructions
};

struct SimdWidthResult {
  std::vector<SimdWidthPoint> points;  // narrowest first
  bool cancelled = false;
  // The rate at `lanes` (0 when not measured).
  double gflopsAt(int lanes) const;
};

// Each width timed `repeats` times (the median is kept), one core, this thread.
SimdWidthResult runSimdWidth(int repeats = 5, const BenchProgress& progress = {});

}  // namespace paralab::teach
