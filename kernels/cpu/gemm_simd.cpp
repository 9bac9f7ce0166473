// Rung 2 of the CPU GEMM ladder: the naive loops in i-k-j order, so the innermost loop is
// c[i, :] += a[i, k] * b[k, :] along contiguous rows, which the compiler turns into FMAs 16 or 8
// floats wide, or SSE2 multiply-adds 4 wide (AVX-512, AVX2, baseline: cpu/dispatch.h's level).
// See tests/kernels/tst_gemm.cpp and `paralab-bench gemm`.
#include <algorithm>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/dispatch.h"

namespace paralab::kernels {

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
    vec().gemmRow(N, K, alpha, a, aStride, B, ldb, beta, C + long(i) * ldc);
  }
}

}  // namespace paralab::kernels
