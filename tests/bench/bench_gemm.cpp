// `paralab-bench gemm`: GFLOP/s of every GEMM rung per size, CPU and GPU, each against the
// vendor library measured in the same run (OpenBLAS; cuBLAS at the same precision) and, on the
// CPU, against the measured FMA peak. Try: paralab-bench gemm --threads 1 | --device cuda
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cpu/gemm.h"
#include "cuda/device.h"
#ifdef PARALAB_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/gemm.h"
#endif

using namespace paralab;

namespace {

struct Options {
  std::vector<int> sizes = {256, 512, 1024, 2048, 4096};
  int threads = 1;
  int repeats = 5;
  double maxSeconds = 1.5;  // skip a kernel at a size where one call would take longer
  std::set<std::string> only;
  bool json = false;
};

// One row per kernel: name, its yardstick's name, and the timing state across sizes.
struct Row {
  std::string name, reference;  // reference: the vendor row it is a percentage of
  double lastRate = 0;          // GFLOP/s at the previous size, to predict the next
  std::vector<double> seconds;  // this size's timings
  std::string skipped;          // why it did not run at this size
};

// Sets each row's skip reason (predicted seconds per call over the limit) and returns how many
// repeats it gets: slow rows fewer, so a table at 4096 finishes in a minute or two.
int plan(Row& r, double flops, const Options& o) {
  r.seconds.clear();
  r.skipped.clear();
  if (r.lastRate <= 0) return o.repeats;
  const double est = flops / (r.lastRate * 1e9);
  if (est > o.maxSeconds) {
    char why[96];
    std::snprintf(why, sizeof why, "skipped: ~%.0f s per call (> --max-seconds %.1f)", est, o.maxSeconds);
    r.skipped = why;
    return 0;
  }
  return std::clamp(int(5.0 / est), 3, o.repeats);
}

void report(const char* device, Row& r, int n, double flops, double vendor, double peak,
            const Options& o) {
  if (!r.skipped.empty()) {
    if (!o.json) std::printf("%-12s %6d %12s   %s\n", r.name.c_str(), n, "-", r.skipped.c_str());
    return;
  }
  const double rate = flops / bench::median(r.seconds) * 1e-9;
  r.lastRate = rate;
  if (o.json) {
    nlohmann::json j{{"device", device}, {"kernel", r.name}, {"m", n}, {"n", n}, {"k", n},
                     {"gflops", rate}, {"threads", o.threads}, {"vs", r.reference},
                     {"vs_gflops", vendor}};
    if (peak > 0) j["peak_gflops"] = peak;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("%-12s %6d %12.1f %9.1f%%", r.name.c_str(), n, rate, 100 * rate / vendor);
  if (peak > 0) std::printf(" %9.1f%%", 100 * rate / peak);
  std::printf("\n");
}

int benchCpu(const Options& o) {
  kernels::gemm_set_threads(o.threads);
  kernels::vendor_blas_set_threads(o.threads);
  // The best of three probes: on a shared machine a probe can only be slowed, never sped up.
  const double corePeak = std::max({bench::measuredFmaPeakGflops(), bench::measuredFmaPeakGflops(),
                                    bench::measuredFmaPeakGflops()});
  const double peak = corePeak * o.threads;
  if (!o.json)
    std::printf("CPU GEMM, fp32, %d thread(s), median of up to %d calls. BLAS: %s\n"
                "FMA peak (measured now): %.1f GFLOP/s per core, x %d = %.1f\n\n%-12s %6s %12s %10s %10s\n",
                o.threads, o.repeats, kernels::vendor_blas_name(), corePeak, o.threads, peak,
                "kernel", "size", "GFLOP/s", "% vendor", "% peak");
  std::vector<Row> rows;
  std::vector<kernels::GemmFn> fns;
  for (const kernels::GemmKernel& k : kernels::gemm_kernels())
    if (o.only.empty() || o.only.count(k.name) || std::string(k.name) == "vendor") {
      rows.push_back({k.name, "vendor", 0, {}, ""});
      fns.push_back(k.fn);
    }
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int n : o.sizes) {
    std::vector<float> A(size_t(n) * n), B(size_t(n) * n), C(size_t(n) * n);
    for (float& x : A) x = u(gen);
    for (float& x : B) x = u(gen);
    const double flops = 2.0 * n * n * n;
    std::vector<int> repeats;
    for (Row& r : rows) repeats.push_back(plan(r, flops, o));
    // Rounds of one call per kernel, so a change in the machine's load hits every kernel alike
    // and the ratios hold even where the absolute numbers move. One warm-up round first.
    const int rounds = *std::max_element(repeats.begin(), repeats.end());
    for (int round = -1; round < rounds; ++round)
      for (size_t k = 0; k < rows.size(); ++k) {
        if (round >= repeats[k] || (round < 0 && repeats[k] < o.repeats)) continue;  // slow: no warm-up
        const auto t0 = std::chrono::steady_clock::now();
        fns[k](false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (round >= 0) rows[k].seconds.push_back(s);
      }
    const double vendor = flops / bench::median(rows.back().seconds) * 1e-9;
    for (Row& r : rows) report("cpu", r, n, flops, vendor, peak, o);
  }
  return 0;
}

#ifdef PARALAB_HAVE_CUDA
int benchCuda(const Options& o) {
  const kernels::GpuInfo gpu = kernels::cuda_query_devices();
  if (gpu.count == 0) {
    std::fprintf(stderr, "paralab-bench gemm --device cuda: %s\n", gpu.reason.c_str());
    return 1;
  }
  if (!o.json)
    std::printf("\nGPU GEMM on %s, fp32 data, median of up to %d calls (CUDA events).\n"
                "tensor-core and vendor-tf32 round inputs to TF32; %% vendor is against cuBLAS at "
                "the same precision.\n\n%-12s %6s %12s %10s\n",
                gpu.firstName.c_str(), o.repeats, "kernel", "size", "GFLOP/s", "% vendor");
  std::vector<Row> rows;
  std::vector<kernels::GemmCudaFn> fns;
  for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels) {
    const bool tf32 = std::string(k.precision) == "tf32";
    if (o.only.empty() || o.only.count(k.name) || std::string(k.name).rfind("vendor", 0) == 0) {
      rows.push_back({k.name, tf32 ? "vendor-tf32" : "vendor", 0, {}, ""});
      fns.push_back(k.fn);
    }
  }
  cudaEvent_t start, stop;
  PARALAB_CUDA_CHECK(cudaEventCreate(&start));
  PARALAB_CUDA_CHECK(cudaEventCreate(&stop));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int n : o.sizes) {
    const size_t elems = size_t(n) * n;
    std::vector<float> host(elems);
    float *A, *B, *C;
    PARALAB_CUDA_CHECK(cudaMalloc(&A, elems * sizeof(float)));
    PARALAB_CUDA_CHECK(cudaMalloc(&B, elems * sizeof(float)));
    PARALAB_CUDA_CHECK(cudaMalloc(&C, elems * sizeof(float)));
    for (float* d : {A, B}) {
      for (float& x : host) x = u(gen);
      PARALAB_CUDA_CHECK(cudaMemcpy(d, host.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    }
    const double flops = 2.0 * n * n * n;
    std::vector<int> repeats;
    for (Row& r : rows) repeats.push_back(plan(r, flops, o));
    const int rounds = *std::max_element(repeats.begin(), repeats.end());
    for (int round = -1; round < rounds; ++round)
      for (size_t k = 0; k < rows.size(); ++k) {
        if (round >= repeats[k]) continue;
        PARALAB_CUDA_CHECK(cudaEventRecord(start));
        fns[k](false, false, n, n, n, 1.f, A, n, B, n, 0.f, C, n, nullptr);
        PARALAB_CUDA_CHECK(cudaEventRecord(stop));
        PARALAB_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        PARALAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (round >= 0) rows[k].seconds.push_back(ms * 1e-3);
      }
    for (float* d : {A, B, C}) cudaFree(d);
    double vendor32 = 0, vendorTf32 = 0;
    for (Row& r : rows)
      if (r.name == "vendor") vendor32 = flops / bench::median(r.seconds) * 1e-9;
      else if (r.name == "vendor-tf32") vendorTf32 = flops / bench::median(r.seconds) * 1e-9;
    for (Row& r : rows)
      report("cuda", r, n, flops, r.reference == "vendor" ? vendor32 : vendorTf32, 0, o);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}
#endif

}  // namespace

int benchGemm(int argc, char** argv) {
  Options o;
  std::string device = "cpu";
  std::vector<std::string> only;
  CLI::App app{"GEMM kernel ladder vs the vendor library (and, on the CPU, the FMA peak)"};
  app.add_option("--device", device, "cpu, cuda or all")
      ->check(CLI::IsMember({"cpu", "cuda", "all"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads for threaded, tiled and OpenBLAS")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--sizes", o.sizes, "Square sizes M = N = K")
      ->check(CLI::Range(1, 65536))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timed calls per kernel and size (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--max-seconds", o.maxSeconds,
                 "Skip a kernel at a size where one call is predicted to take longer")
      ->capture_default_str();
  app.add_option("--kernels", only, "Only these kernels (the vendor rows always run)")->delimiter(',');
  app.add_flag("--json", o.json, "JSON rows: device, kernel, m, n, k, gflops (+ threads, vs, vs_gflops, peak_gflops)");
  CLI11_PARSE(app, argc, argv);
  o.only.insert(only.begin(), only.end());

  int rc = 0;
  if (device != "cuda") rc |= benchCpu(o);
  if (device != "cpu") {
#ifdef PARALAB_HAVE_CUDA
    rc |= benchCuda(o);
#else
    std::fprintf(stderr, "paralab-bench gemm --device %s: ParaLab was built without CUDA\n", device.c_str());
    rc |= 1;
#endif
  }
  return rc;
}
