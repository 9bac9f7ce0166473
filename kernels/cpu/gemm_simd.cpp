// Rung 2 of the CPU GEMM ladder: the naive loops in i-k-j order, so the innermost loop is
// c[i, :] += a[i, k] * b[k, :] along contiguous rows, which the compiler turns into AVX-512 or
// AVX2 FMAs (the best the CPU has is chosen at load time, see cpu/simd.h).
// See tests/kernels/tst_gemm.cpp and `paralab-bench gemm`.
#include <algorithm>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/simd.h"

namespace paralab::kernels {

namespace {

// One row of C: c = beta * c + sum_k (alpha * a_k) * b[k, :]. `a` steps by aStride between k.
// Each element of B is used once per row of C, so this rung is bound by the memory traffic of
// streaming B (N * K floats per row), not by the FMA units; gemm_tiled fixes that by reuse.
PARALAB_SIMD_CLONES void simdRow(int N, int K, float alpha, const float* a, long aStride,
                                 const float* __restrict b, int ldb, float beta,
                                 float* __restrict c) {
  if (beta == 0.f)  // BLAS semantics: C's old contents are not read (they may be NaN)
    for (int j = 0; j < N; ++j) c[j] = 0.f;
  else if (beta != 1.f)
    for (int j = 0; j < N; ++j) c[j] *= beta;
  for (int k = 0; k < K; ++k) {
    const float s = alpha * a[k * aStride];
    const float* __restrict bk = b + long(k) * ldb;
    for (int j = 0; j < N; ++j) c[j] += s * bk[j];  // the vectorised loop
  }
}

}  // namespace

void gemm_simd(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  // The inner loop needs rows of op(B). When B is given transposed, its rows are columns in
  // memory: copy op(B) once into a K x N buffer (K * N moves against M * N * K FMAs).
  std::vector<float> bt;
  if (transB) {
    bt.resize(size_t(K) * N);
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) bt[size_t(k) * N + j] = B[long(j) * ldb + k];
    B = bt.data();
    ldb = N;
  }
  for (int i = 0; i < M; ++i) {
    // a[i, k] is A[i * lda + k], or A[k * lda + i] when A is given transposed.
    const float* a = transA ? A + i : A + long(i) * lda;
    const long aStride = transA ? lda : 1;
    simdRow(N, K, alpha, a, aStride, B, ldb, beta, C + long(i) * ldc);
  }
}

}  // namespace paralab::kernels
