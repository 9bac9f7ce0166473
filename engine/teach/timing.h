// What every teaching benchmark times with: the seconds one call takes, and the median of
// repeats (on a shared machine a run can only be slowed, so the middle is the honest figure).
// Used by engine/teach/ and engine/train/latency_sweep.cpp.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace paralab::teach {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double secondsOf(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace paralab::teach
