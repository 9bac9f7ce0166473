// `paralab-bench gemm`: GFLOP/s of every GEMM rung per size, CPU and GPU, each against the
// vendor library measured in the same run (OpenBLAS; cuBLAS at the same precision) and, on the
// CPU, against the measured FMA peak; then the bf16 kernel (AVX512_BF16, AMX) against OpenBLAS
// sgemm.
// Try: paralab-bench gemm --threads 1 | --device cuda
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/half.h"
#include "cuda/device.h"
#include "teach/gemm_ladder.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#ifdef PARALAB_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/gemm.h"
#endif

using namespace paralab;

namespace {

struct Options {
  teach::GemmLadderOptions ladder{.sizes = {256, 512, 1024, 2048, 4096}};
  bool json = false;
};

// A GPU row: name, its yardstick's name, and the timing state across sizes.
struct Row {
  std::string name, reference;  // reference: the vendor row it is a percentage of
  double lastRate = 0;          // GFLOP/s at the previous size, to predict the next
  std::vector<double> seconds;  // this size's timings
  std::string skipped;          // why it did not run at this size
};

void printRow(const char* device, const std::string& kernel, int n, double rate,
              const std::string& skipped, const std::string& reference, double vendor,
              double peak, const Options& o) {
  if (!skipped.empty()) {
    if (!o.json) std::printf("%-18s %6d %12s   %s\n", kernel.c_str(), n, "-", skipped.c_str());
    return;
  }
  if (o.json) {
    nlohmann::json j{{"device", device}, {"kernel", kernel}, {"m", n}, {"n", n}, {"k", n},
                     {"gflops", rate}, {"threads", o.ladder.threads}, {"vs", reference},
                     {"vs_gflops", vendor}};
    if (peak > 0) j["peak_gflops"] = peak;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("%-18s %6d %12.1f %9.1f%%", kernel.c_str(), n, rate, 100 * rate / vendor);
  if (peak > 0) std::printf(" %9.1f%%", 100 * rate / peak);
  std::printf("\n");
}

#if defined(__x86_64__)
// vdpbf16ps's peak on one core, GFLOP/s: 24 independent accumulators (distinct, so none is
// folded into another), each instruction 16 lanes x 2 bf16 products x 2 flops; the best of 3.
// Called only where the CPU has avx512_bf16.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16PeakGflops() {
  constexpr int kChains = 24;
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
    const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // (1, 1) in bf16
    const long iters = 2'000'000;
    const auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < iters; ++it)
#pragma GCC unroll 24
      for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    volatile float sink = _mm512_reduce_add_ps(acc[0]);
    (void)sink;
    best = std::max(best, double(iters) * kChains * 64 / dt.count() * 1e-9);
  }
  return best;
}
#endif

// The bf16 kernel (cpu/gemm.h's gemm_bf16) on each path, AVX512_BF16 and AMX: bf16 operands,
// fp32 sums, 1 thread, against OpenBLAS sgemm on the same (bf16-valued) data in the same rounds,
// so load hits all alike. A path the CPU lacks, or a lower PARALAB_SIMD, is a row saying why.
int benchBf16(const Options& o) {
  struct Path {
    const char *name, *json, *isa;  // isa: what gemm_bf16_isa() says while it runs
    bool amx;
    std::string why;  // why it does not run ("" it does)
  };
  Path paths[2] = {{"bf16 (AVX512_BF16)", "bf16-avx512", "avx512_bf16", false, ""},
                   {"bf16 (AMX)", "bf16-amx", "amx", true, ""}};
  for (Path& p : paths) {
    kernels::gemm_bf16_allow_amx(p.amx);
    if (!kernels::cpuHasAvx512Bf16()) p.why = "this CPU has no avx512_bf16";
    else if (!kernels::gemm_bf16_available()) p.why = "PARALAB_SIMD is below avx512";
    else if (std::string(kernels::gemm_bf16_isa()) != p.isa)
      p.why = "this CPU has no AMX-BF16, or the operating system does not grant its tiles";
    else if (o.ladder.threads != 1) p.why = "a 1-thread kernel: run with --threads 1";
  }
  kernels::gemm_bf16_allow_amx(true);
  double peak = 0;
#if defined(__x86_64__)
  if (paths[0].why.empty()) peak = dpbf16PeakGflops();
#endif
  if (!o.json) {
    std::printf("\nbf16 GEMM: operands bf16 (exact: the data holds bf16 values), sums fp32, 1 "
                "thread; %% vendor is against OpenBLAS sgemm timed in the same rounds.\n");
    if (peak > 0) std::printf("vdpbf16ps peak (measured now): %.1f GFLOP/s (%% peak of the AVX512_BF16 row)\n", peak);
  }
  for (const Path& p : paths)
    if (!p.why.empty()) {
      if (o.json)
        std::printf("%s\n", nlohmann::json{{"device", "cpu"}, {"kernel", p.json}, {"skipped", p.why}}
                                .dump().c_str());
      else
        std::printf("%-18s %6s %12s   %s\n", p.name, "-", "-", p.why.c_str());
    }
  // Timed: the paths that run, then sgemm (the last entry).
  std::vector<const Path*> run;
  for (const Path& p : paths)
    if (p.why.empty()) run.push_back(&p);
  if (run.empty()) return 0;
  const size_t rows = run.size() + 1;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<double> lastRate(rows, 0);
  for (int n : o.ladder.sizes) {
    const size_t elems = size_t(n) * n;
    std::vector<float> A(elems), B(elems), C(elems);
    for (std::vector<float>* v : {&A, &B})
      for (float& x : *v) x = kernels::roundToBf16(u(gen));
    const double flops = 2.0 * n * n * n;
    std::vector<std::vector<double>> seconds(rows);
    std::vector<std::string> skipped(rows);
    std::vector<int> repeats(rows);
    for (size_t k = 0; k < rows; ++k)
      repeats[k] = teach::ladderRepeats(lastRate[k], flops, o.ladder.repeats, o.ladder.maxSeconds,
                                        &skipped[k]);
    for (int round = -1; round < *std::max_element(repeats.begin(), repeats.end()); ++round)
      for (size_t k = 0; k < rows; ++k) {
        if (round >= repeats[k]) continue;
        const bool vendor = k == run.size();
        if (!vendor) kernels::gemm_bf16_allow_amx(run[k]->amx);
        const auto t0 = std::chrono::steady_clock::now();
        (vendor ? kernels::gemm_vendor<float> : kernels::gemm_bf16)(
            false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
        const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
        if (round >= 0) seconds[k].push_back(dt.count());
      }
    kernels::gemm_bf16_allow_amx(true);
    std::vector<double> rate(rows, 0);
    for (size_t k = 0; k < rows; ++k)
      if (skipped[k].empty()) lastRate[k] = rate[k] = flops / bench::median(seconds[k]) * 1e-9;
    for (size_t k = 0; k < run.size(); ++k)
      printRow("cpu", o.json ? run[k]->json : run[k]->name, n, rate[k], skipped[k], "vendor",
               rate.back(), run[k]->amx ? 0 : peak, o);
  }
  return 0;
}

// The CPU ladder is the engine's (teach/gemm_ladder.h), as the lesson's bench step draws it.
int benchCpu(const Options& o) {
  const teach::GemmLadderResult r = teach::runGemmLadder(o.ladder);
  if (!o.json)
    std::printf("CPU GEMM, fp32, %d thread(s), median of up to %d calls. BLAS: %s\n"
                "FMA peak (measured now): %.1f GFLOP/s per core, x %d = %.1f\n\n%-18s %6s %12s %10s %10s\n",
                r.threads, o.ladder.repeats, r.blas.c_str(), r.corePeakGflops, r.threads,
                r.peakGflops, "kernel", "size", "GFLOP/s", "% vendor", "% peak");
  for (const teach::GemmRung& g : r.rungs)
    printRow("cpu", g.kernel, g.n, g.gflops, g.skipped, "vendor", r.vendorGflops(g.n),
             r.peakGflops, o);
  return benchBf16(o);
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
                gpu.firstName.c_str(), o.ladder.repeats, "kernel", "size", "GFLOP/s", "% vendor");
  std::vector<Row> rows;
  std::vector<kernels::GemmCudaFn> fns;
  for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels) {
    const bool tf32 = std::string(k.precision) == "tf32";
    const auto& only = o.ladder.kernels;
    if (only.empty() || std::find(only.begin(), only.end(), k.name) != only.end() ||
        std::string(k.name).rfind("vendor", 0) == 0) {
      rows.push_back({k.name, tf32 ? "vendor-tf32" : "vendor", 0, {}, ""});
      fns.push_back(k.fn);
    }
  }
  cudaEvent_t start, stop;
  PARALAB_CUDA_CHECK(cudaEventCreate(&start));
  PARALAB_CUDA_CHECK(cudaEventCreate(&stop));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int n : o.ladder.sizes) {
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
    for (Row& r : rows) {
      r.seconds.clear();
      repeats.push_back(teach::ladderRepeats(r.lastRate, flops, o.ladder.repeats,
                                             o.ladder.maxSeconds, &r.skipped));
    }
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
    for (Row& r : rows) {
      const double rate = r.skipped.empty() ? flops / bench::median(r.seconds) * 1e-9 : 0;
      if (rate > 0) r.lastRate = rate;
      printRow("cuda", r.name, n, rate, r.skipped, r.reference,
               r.reference == "vendor" ? vendor32 : vendorTf32, 0, o);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}
#endif

}  // namespace

int benchGemm(int argc, char** argv) {
  Options o;
  teach::GemmLadderOptions& l = o.ladder;
  std::string device = "cpu";
  CLI::App app{"GEMM kernel ladder vs the vendor library (and, on the CPU, the FMA peak)"};
  app.add_option("--device", device, "cpu, cuda or all")
      ->check(CLI::IsMember({"cpu", "cuda", "all"}))
      ->capture_default_str();
  app.add_option("--threads", l.threads, "CPU threads for threaded, tiled and OpenBLAS")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--sizes", l.sizes, "Square sizes M = N = K")
      ->check(CLI::Range(1, 65536))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--repeats", l.repeats, "Timed calls per kernel and size (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--max-seconds", l.maxSeconds,
                 "Skip a kernel at a size where one call is predicted to take longer")
      ->capture_default_str();
  app.add_option("--kernels", l.kernels, "Only these kernels (the vendor rows always run)")->delimiter(',');
  app.add_flag("--json", o.json, "JSON rows: device, kernel, m, n, k, gflops (+ threads, vs, vs_gflops, peak_gflops)");
  CLI11_PARSE(app, argc, argv);

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
