// What the benchmark programs share: timing, medians, the measured FMA peak of a core.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace paralab::bench {

double median(std::vector<double> v);
// Median seconds of `repeats` calls of `f` after `warmup` unmeasured calls.
double timeMedian(const std::function<void()>& f, int repeats, int warmup = 1);
// FP32 FMA peak of one core, GFLOP/s, measured with independent fused multiply-adds
// (AVX-512 where the CPU has it, else AVX2). The yardstick for "% of peak".
double measuredFmaPeakGflops();
// True when --json is among the arguments.
bool wantsJson(int argc, char** argv);

}  // namespace paralab::bench
