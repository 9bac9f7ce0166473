// Rung 3 of the GPU GEMM ladder: shared-memory tiling. A block of 32 x 32 threads computes a
// 32 x 32 tile of C; for each step of 32 along k it stages a 32 x 32 tile of op(A) and of op(B)
// in shared memory, so each global element is loaded once per block, not once per thread
// (CUDA C++ Programming Guide, "Shared Memory", the matrix multiplication example).
// See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench gemm --device cuda`.
#include "cuda/check.h"
#include "cuda/gemm.h"
#include "cuda/gemm_common.h"

namespace paralab::kernels {

using namespace gemm_detail;

namespace {

constexpr int kTile = 32;

template <bool TA, bool TB>
__global__ void __launch_bounds__(kTile * kTile)
    gemm_tiled_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                      int ldb, float beta, float* C, int ldc) {
  // One column of padding: a warp writing a column of a tile (the transposed loads below) hits
  // 32 different banks instead of one bank 32 times.
  __shared__ float As[kTile][kTile + 1];  // As[r][c] = op(A)[i0 + r, k0 + c]
  __shared__ float Bs[kTile][kTile + 1];  // Bs[r][c] = op(B)[k0 + r, j0 + c]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    // Each warp (fixed ty, tx = 0..31) reads 32 consecutive floats of memory: along a row of
    // A, or along a row of the stored A^T when transposed (then it fills a column of As).
    {
      const int r = TA ? tx : ty, c = TA ? ty : tx;
      const bool in = i0 + r < M && k0 + c < K;
      As[r][c] = in ? at<TA>(A, lda, i0 + r, k0 + c) : 0.f;
    }
    {
      const int r = TB ? tx : ty, c = TB ? ty : tx;
      const bool in = k0 + r < K && j0 + c < N;
      Bs[r][c] = in ? at<TB>(B, ldb, k0 + r, j0 + c) : 0.f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];  // As: broadcast, Bs: a row
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  const int i = i0 + ty, j = j0 + tx;
  if (i < M && j < N) storeC(C, ldc, i, j, alpha, acc, beta);
}

}  // namespace

void gemm_cuda_tiled(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc,
                     void* stream) {
  if (M <= 0 || N <= 0) return;
  const dim3 block(kTile, kTile), grid(ceilDiv(N, kTile), ceilDiv(M, kTile));
  dispatchTransposes(transA, transB, [&](auto ta, auto tb) {
    gemm_tiled_kernel<decltype(ta)::value, decltype(tb)::value>
        <<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(M, N, K, alpha, A, lda, B, ldb,
                                                                 beta, C, ldc);
  });
  PARALAB_CUDA_CHECK_LAUNCH();
}

}  // namespace paralab::kernels
