// `paralab-bench gemm`: GFLOP/s of each CPU GEMM kernel per size, against the vendor library
// (OpenBLAS) and the core's FMA peak, both measured in the same run. One thread.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench_common.h"
#include "cpu/gemm.h"

using namespace paralab;

int benchGemm(int argc, char** argv) {
  std::vector<int> sizes = {256, 512, 1024, 2048};
  int naiveMax = 512;  // the scalar loop needs minutes beyond this
  bool json = false;
  CLI::App app{"CPU GEMM kernels vs OpenBLAS and the FMA peak"};
  app.add_option("--sizes", sizes, "Square sizes M=N=K")->capture_default_str();
  app.add_option("--naive-max", naiveMax, "Largest size the naive kernel runs at")->capture_default_str();
  app.add_flag("--json", json, "JSON rows: device, kernel, m, n, k, gflops");
  CLI11_PARSE(app, argc, argv);
  kernels::vendor_blas_set_threads(1);

  const double peak = bench::measuredFmaPeakGflops();
  if (!json) {
    std::printf("CPU GEMM, fp32, 1 thread. BLAS: %s\nCore FMA peak (measured now): %.1f GFLOP/s\n\n",
                kernels::vendor_blas_name(), peak);
    std::printf("%-8s %6s %12s %10s %10s\n", "kernel", "size", "GFLOP/s", "% vendor", "% peak");
  }
  using Gemm = void (*)(bool, bool, int, int, int, float, const float*, int, const float*, int,
                        float, float*, int);
  struct Kernel {
    const char* name;
    Gemm f;
  };
  const Kernel ladder[] = {{"naive", kernels::gemm_naive<float>}, {"vendor", kernels::gemm_vendor<float>}};
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int n : sizes) {
    std::vector<float> A(size_t(n) * n), B(size_t(n) * n), C(size_t(n) * n);
    for (float& x : A) x = u(gen);
    for (float& x : B) x = u(gen);
    const double flops = 2.0 * n * n * n;
    double vendorRate = 0;
    // Vendor first: it is the reference the others are a percentage of.
    for (int k = 1; k >= 0; --k) {
      const Kernel& K = ladder[k];
      if (k == 0 && n > naiveMax) continue;
      const int repeats = k == 0 ? 1 : std::max(3, int(2e10 / flops));
      const double s = bench::timeMedian(
          [&] { K.f(false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n); },
          repeats, k == 0 ? 0 : 1);
      const double rate = flops / s * 1e-9;
      if (k == 1) vendorRate = rate;
      if (json)
        std::printf("%s\n", nlohmann::json{{"device", "cpu"}, {"kernel", K.name}, {"m", n}, {"n", n},
                                           {"k", n}, {"gflops", rate}, {"peak_gflops", peak}}
                                .dump()
                                .c_str());
      else
        std::printf("%-8s %6d %12.1f %9.1f%% %9.1f%%\n", K.name, n, rate, 100 * rate / vendorRate,
                    100 * rate / peak);
    }
  }
  return 0;
}
