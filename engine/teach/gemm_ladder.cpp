// The GEMM ladder (see gemm_ladder.h); its FMA-peak probe is in simd_width.cpp.
// See tests/engine/tst_teach_bench.cpp and `paralab-bench gemm`.
#include "teach/gemm_ladder.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "cpu/gemm.h"
#include "teach/timing.h"

namespace paralab::teach {

double GemmLadderResult::vendorGflops(int n) const {
  for (const GemmRung& r : rungs)
    if (r.n == n && r.kernel == "vendor") return r.gflops;
  return 0;
}

int ladderRepeats(double lastRate, double flops, int repeats, double maxSeconds,
                  std::string* skipped) {
  skipped->clear();
  if (lastRate <= 0) return repeats;
  const double est = flops / (lastRate * 1e9);
  if (est > maxSeconds) {
    char why[96];
    std::snprintf(why, sizeof why, "skipped: ~%.0f s per call (> --max-seconds %.1f)", est,
                  maxSeconds);
    *skipped = why;
    return 0;
  }
  // About 5 s per rung and size at most, and never fewer than 3 calls to take a median of.
  return std::clamp(int(5.0 / est), std::min(3, repeats), repeats);
}

GemmLadderResult runGemmLadder(const GemmLadderOptions& o, const BenchProgress& progress) {
  if (o.sizes.empty()) throw std::invalid_argument("sizes: give at least one size");
  for (int n : o.sizes)
    if (n < 1 || n > 65536) throw std::invalid_argument("sizes: each is 1..65536");
  if (o.threads < 1 || o.threads > 256) throw std::invalid_argument("threads: 1..256");
  if (o.repeats < 1) throw std::invalid_argument("repeats: 1 or more");
  std::vector<const kernels::GemmKernel*> ladder;
  for (const kernels::GemmKernel& k : kernels::gemm_kernels())
    if (o.kernels.empty() || std::string(k.name) == "vendor" ||
        std::find(o.kernels.begin(), o.kernels.end(), k.name) != o.kernels.end())
      ladder.push_back(&k);

  GemmLadderResult r;
  r.threads = o.threads;
  r.blas = kernels::vendor_blas_name();
  kernels::gemm_set_threads(o.threads);
  kernels::vendor_blas_set_threads(o.threads);
  // Progress counts the probe, then each call (the untimed round included) of the plan.
  const int total = 1 + int(o.sizes.size() * ladder.size()) * (o.repeats + 1);
  int done = 0;
  const auto step = [&](int pieces = 1) {
    done = std::min(total, done + pieces);
    if (progress && !progress(done, total)) r.cancelled = true;
    return !r.cancelled;
  };
  // The best of three probes: on a shared machine a probe can only be slowed, never sped up.
  r.corePeakGflops =
      std::max({measuredFmaPeakGflops(), measuredFmaPeakGflops(), measuredFmaPeakGflops()});
  r.peakGflops = r.corePeakGflops * o.threads;
  if (!step()) return r;

  std::vector<double> lastRate(ladder.size(), 0);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t si = 0; si < o.sizes.size(); ++si) {
    const int n = o.sizes[si];
    std::vector<float> A(size_t(n) * n), B(size_t(n) * n), C(size_t(n) * n);
    for (float& x : A) x = u(gen);
    for (float& x : B) x = u(gen);
    const double flops = 2.0 * n * n * n;
    std::vector<GemmRung> rungs(ladder.size());
    std::vector<int> repeats(ladder.size());
    std::vector<std::vector<double>> seconds(ladder.size());
    for (size_t k = 0; k < ladder.size(); ++k) {
      rungs[k].kernel = ladder[k]->name;
      rungs[k].n = n;
      repeats[k] = ladderRepeats(lastRate[k], flops, o.repeats, o.maxSeconds, &rungs[k].skipped);
    }
    const int rounds = *std::max_element(repeats.begin(), repeats.end());
    for (int round = -1; round < rounds && !r.cancelled; ++round)
      for (size_t k = 0; k < ladder.size() && !r.cancelled; ++k) {
        // Slow rungs (fewer calls than asked) get no untimed call.
        if (round >= repeats[k] || (round < 0 && repeats[k] < o.repeats)) continue;
        const double s = secondsOf([&] {
          ladder[k]->fn(false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
        });
        if (round >= 0) seconds[k].push_back(s);
        step();
      }
    if (r.cancelled) break;  // a size half measured is no ladder
    for (size_t k = 0; k < ladder.size(); ++k) {
      rungs[k].calls = int(seconds[k].size());
      if (rungs[k].calls > 0) lastRate[k] = rungs[k].gflops = flops / median(seconds[k]) * 1e-9;
      r.rungs.push_back(rungs[k]);
    }
    // A rung that skipped or ran fewer calls leaves its share of the plan: count it as done.
    done = 1 + int(si + 1) * int(ladder.size()) * (o.repeats + 1);
    step(0);
  }
  return r;
}

}  // namespace paralab::teach
