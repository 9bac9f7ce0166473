// The vendor rung of the GEMM ladder: OpenBLAS through CBLAS.
// See tests/kernels/tst_gemm.cpp and `paralab-bench gemm`.
#include <cblas.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "cpu/gemm.h"
#include "cpu/parallel_rows.h"

namespace paralab::kernels {

static CBLAS_TRANSPOSE op(bool t) { return t ? CblasTrans : CblasNoTrans; }

static std::atomic<bool> g_sgemmTiming{false};
static std::atomic<int64_t> g_sgemmNs{0};

void vendor_sgemm_timing(bool on) {
  if (on) g_sgemmNs = 0;
  g_sgemmTiming = on;
}

double vendor_sgemm_seconds() { return double(g_sgemmNs.load()) * 1e-9; }

template <>
void gemm_vendor<float>(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                        int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return;
  const bool timed = g_sgemmTiming.load(std::memory_order_relaxed);
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  cblas_sgemm(CblasRowMajor, op(transA), op(transB), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (timed)
    g_sgemmNs += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
}

template <>
void gemm_vendor<double>(bool transA, bool transB, int M, int N, int K, double alpha,
                         const double* A, int lda, const double* B, int ldb, double beta,
                         double* C, int ldc) {
  if (M == 0 || N == 0) return;
  cblas_dgemm(CblasRowMajor, op(transA), op(transB), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char* vendor_blas_name() {
  static const std::string name = std::string(openblas_get_config()) + " core " +
                                  openblas_get_corename();
  return name.c_str();
}

bool vendor_blas_uses_avx512() {
  const std::string core = openblas_get_corename();
  for (const char* family : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core.find(family) != std::string::npos) return true;
  return false;
}

void vendor_blas_set_threads(int n) {
  openblas_set_num_threads(n);
  rank_threads_set(n);  // the rank's own kernels split over the same threads
}

}  // namespace paralab::kernels
