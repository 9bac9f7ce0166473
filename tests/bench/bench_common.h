// What the benchmark programs share: timing and medians (the FMA peak of a core is the
// engine's: teach/gemm_ladder.h).
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace paralab::bench {

double median(std::vector<double> v);
// Median seconds of `repeats` calls of `f` after `warmup` unmeasured calls.
double timeMedian(const std::function<void()>& f, int repeats, int warmup = 1);
// True when --json is among the arguments.
bool wantsJson(int argc, char** argv);

}  // namespace paralab::bench
