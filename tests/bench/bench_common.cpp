// Timing helpers and the FMA-peak probe (see bench_common.h).
#include "bench_common.h"

#include <immintrin.h>

#include <chrono>
#include <cstring>

namespace paralab::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double timeMedian(const std::function<void()>& f, int repeats, int warmup) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

namespace {

// 12 independent accumulators hide the FMA latency (4 cycles on 2 ports needs >= 8 in
// flight); each FMA on a W-lane vector is 2W flops. Returns the flops done.
__attribute__((target("avx512f"))) double run512(long iters, float* sink) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  *sink = _mm512_reduce_add_ps(acc[0]);
  return double(iters) * 12 * 2 * 16;
}

__attribute__((target("avx2,fma"))) double run256(long iters, float* sink) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  *sink = out[0];
  return double(iters) * 12 * 2 * 8;
}

}  // namespace

double measuredFmaPeakGflops() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  float sink = 0;
  const long iters = 20'000'000;
  double flops = 0;
  const double s = timeMedian([&] { flops = avx512 ? run512(iters, &sink) : run256(iters, &sink); }, 5);
  return flops / s * 1e-9;
}

bool wantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) return true;
  return false;
}

}  // namespace paralab::bench
