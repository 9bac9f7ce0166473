// Rungs 1 and 2 of the GPU GEMM ladder: one thread per element of C, first with the warp
// running down a column (uncoalesced), then along a row (coalesced). The only difference is
// which index threadIdx.x feeds: CUDA C++ Programming Guide, "Device Memory Accesses".
// See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench gemm --device cuda`.
#include "cuda/check.h"
#include "cuda/gemm.h"
#include "cuda/gemm_common.h"

namespace paralab::kernels {

using namespace gemm_detail;

namespace {

constexpr int kBlock = 32;  // 32 x 32 = 1024 threads per block

// threadIdx.x -> row i. A warp's 32 threads share j and have i, i+1, ..., i+31: their loads of
// A (non-transposed) and their stores of C are ld floats apart, 32 transactions per warp
// instead of one; their loads of B all hit one address (a broadcast).
template <bool TA, bool TB>
__global__ void gemm_naive_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                                  const float* B, int ldb, float beta, float* C, int ldc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += at<TA>(A, lda, i, k) * at<TB>(B, ldb, k, j);
  storeC(C, ldc, i, j, alpha, acc, beta);
}

// threadIdx.x -> column j. A warp now reads 32 neighbouring floats of a row of B (non-transposed)
// and writes 32 neighbouring floats of C: one 128-byte transaction each; A is a broadcast.
template <bool TA, bool TB>
__global__ void gemm_coalesced_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                                      const float* B, int ldb, float beta, float* C, int ldc) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += at<TA>(A, lda, i, k) * at<TB>(B, ldb, k, j);
  storeC(C, ldc, i, j, alpha, acc, beta);
}

}  // namespace

void gemm_cuda_naive(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc,
                     void* stream) {
  if (M <= 0 || N <= 0) return;
  const dim3 block(kBlock, kBlock), grid(ceilDiv(M, kBlock), ceilDiv(N, kBlock));
  dispatchTransposes(transA, transB, [&](auto ta, auto tb) {
    gemm_naive_kernel<decltype(ta)::value, decltype(tb)::value>
        <<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(M, N, K, alpha, A, lda, B, ldb,
                                                                 beta, C, ldc);
  });
  PARALAB_CUDA_CHECK_LAUNCH();
}

void gemm_cuda_coalesced(bool transA, bool transB, int M, int N, int K, float alpha,
                         const float* A, int lda, const float* B, int ldb, float beta, float* C,
                         int ldc, void* stream) {
  if (M <= 0 || N <= 0) return;
  const dim3 block(kBlock, kBlock), grid(ceilDiv(N, kBlock), ceilDiv(M, kBlock));
  dispatchTransposes(transA, transB, [&](auto ta, auto tb) {
    gemm_coalesced_kernel<decltype(ta)::value, decltype(tb)::value>
        <<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(M, N, K, alpha, A, lda, B, ldb,
                                                                 beta, C, ldc);
  });
  PARALAB_CUDA_CHECK_LAUNCH();
}

}  // namespace paralab::kernels
