// The reference GEMM: a serial scalar triple loop, the first rung of the kernel ladder.
// Slow on purpose and obviously right. See tests/kernels/tst_gemm.cpp.
#include "cpu/gemm.h"

namespace paralab::kernels {

template <typename T>
void gemm_naive(bool transA, bool transB, int M, int N, int K, T alpha, const T* A, int lda,
                const T* B, int ldb, T beta, T* C, int ldc) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      T acc = 0;
      for (int k = 0; k < K; ++k) {
        const T a = transA ? A[k * lda + i] : A[i * lda + k];
        const T b = transB ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      // beta == 0 ignores C's old contents (which may be uninitialised), as BLAS does.
      C[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * C[i * ldc + j]);
    }
  }
}

template void gemm_naive<float>(bool, bool, int, int, int, float, const float*, int, const float*,
                                int, float, float*, int);
template void gemm_naive<double>(bool, bool, int, int, int, double, const double*, int,
                                 const double*, int, double, double*, int);

}  // namespace paralab::kernels
