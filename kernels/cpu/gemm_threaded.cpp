// Rung 3 of the CPU GEMM ladder: gemm_simd on blocks of rows of C, the blocks shared out over
// the GEMM thread pool (multicore; rows of C are independent, so no synchronisation but the
// final join). See tests/kernels/tst_gemm.cpp and `paralab-bench gemm --threads 2`.
#include <algorithm>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/thread_pool.h"

namespace paralab::kernels {

void gemm_threaded(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                   int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const std::shared_ptr<ThreadPool> pool = gemm_pool();
  // Transpose op(B) once here rather than once per block inside gemm_simd.
  std::vector<float> bt;
  if (transB) {
    bt.resize(size_t(K) * N);
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) bt[size_t(k) * N + j] = B[long(j) * ldb + k];
    B = bt.data();
    ldb = N;
  }
  // A few blocks per thread, so a thread that another process slows down takes fewer of them.
  const int blocks = std::min(M, 4 * pool->size());
  const int rowsPerBlock = (M + blocks - 1) / blocks;
  pool->run(blocks, [&](int t) {
    const int i0 = t * rowsPerBlock, i1 = std::min(M, i0 + rowsPerBlock);
    if (i0 >= i1) return;
    // Rows i0.. of op(A): A + i0 * lda, or columns i0.. of the stored A when transposed.
    const float* a = transA ? A + i0 : A + long(i0) * lda;
    gemm_simd(transA, false, i1 - i0, N, K, alpha, a, lda, B, ldb, beta, C + long(i0) * ldc, ldc);
  });
}

}  // namespace paralab::kernels
