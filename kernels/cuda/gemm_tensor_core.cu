// Rung 4 of the GPU GEMM ladder: tensor cores. Inputs are rounded to TF32 (8-bit exponent,
// 10-bit mantissa, as cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32), products accumulate in fp32.
// WMMA m16n16k8 (CUDA C++ Programming Guide, "Warp Matrix Functions"; compute capability 8.0+).
// Block tile 128 x 128 x 16, 8 warps of 64 x 32 each, double-buffered shared memory with the
// next tiles' global loads in flight during the current tile's MMAs.
// See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench gemm --device cuda`.
#include <mma.h>

#include "cuda/check.h"
#include "cuda/gemm.h"
#include "cuda/gemm_common.h"

namespace paralab::kernels {

using namespace gemm_detail;
using namespace nvcuda;

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 16;      // block tile (floats)
constexpr int kWarpsM = 2, kWarpsN = 4;             // 8 warps ...
constexpr int kThreads = 32 * kWarpsM * kWarpsN;    // ... 256 threads
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 32 per warp
constexpr int kFM = kWM / 16, kFN = kWN / 16;            // 4 x 2 accumulator fragments
// Shared rows padded by 4 floats (16 bytes): WMMA wants ldm a multiple of 4 floats, and the
// padding spreads a tile's column across banks. Fragment pointers stay 32-byte aligned.
constexpr int kLdA = kBK + 4, kLdB = kBN + 4;
constexpr int kLoadsA = kBM * kBK / kThreads, kLoadsB = kBK * kBN / kThreads;  // 8 and 8
constexpr int kGroupM = 8;  // block-rows per L2 group (gemm_common.h: groupedTile)

template <bool TA, bool TB>
__global__ void __launch_bounds__(kThreads)
    gemm_tc_kernel(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                   const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                   int ldc) {
  __shared__ __align__(128) float As[2][kBM][kLdA];  // As[b][r][c] = op(A)[i0 + r, k0 + c]
  __shared__ __align__(128) float Bs[2][kBK][kLdB];  // Bs[b][r][c] = op(B)[k0 + r, j0 + c]
  __shared__ __align__(128) float Cs[kThreads / 32][16 * 16];  // per-warp epilogue scratch

  const TileOrigin tile = groupedTile(int(blockIdx.x), M, N, kBM, kBN, kGroupM);
  const int i0 = tile.i0, j0 = tile.j0;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[kFM][kFN];
#pragma unroll
  for (int fm = 0; fm < kFM; ++fm)
#pragma unroll
    for (int fn = 0; fn < kFN; ++fn) wmma::fill_fragment(acc[fm][fn], 0.f);

  // Element e = tid + s * 256 of a tile goes to (r, c). The mapping makes a warp's 32 loads
  // consecutive in memory: along k for a row-major A, along i for a transposed one (B alike).
  float ra[kLoadsA], rb[kLoadsB];
  auto loadGlobal = [&](int k0) {
#pragma unroll
    for (int s = 0; s < kLoadsA; ++s) {
      const int e = tid + s * kThreads;
      const int r = TA ? e % kBM : e / kBK, c = TA ? e / kBM : e % kBK;
      ra[s] = i0 + r < M && k0 + c < K ? at<TA>(A, lda, i0 + r, k0 + c) : 0.f;
    }
#pragma unroll
    for (int s = 0; s < kLoadsB; ++s) {
      const int e = tid + s * kThreads;
      const int r = TB ? e % kBK : e / kBN, c = TB ? e / kBK : e % kBN;
      rb[s] = k0 + r < K && j0 + c < N ? at<TB>(B, ldb, k0 + r, j0 + c) : 0.f;
    }
  };
  auto storeShared = [&](int buf) {
#pragma unroll
    for (int s = 0; s < kLoadsA; ++s) {
      const int e = tid + s * kThreads;
      const int r = TA ? e % kBM : e / kBK, c = TA ? e / kBM : e % kBK;
      As[buf][r][c] = ra[s];
    }
#pragma unroll
    for (int s = 0; s < kLoadsB; ++s) {
      const int e = tid + s * kThreads;
      const int r = TB ? e % kBK : e / kBN, c = TB ? e / kBK : e % kBN;
      Bs[buf][r][c] = rb[s];
    }
  };

  const int kTiles = (K + kBK - 1) / kBK;
  loadGlobal(0);
  storeShared(0);
  __syncthreads();
  for (int t = 0; t < kTiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < kTiles) loadGlobal((t + 1) * kBK);  // in flight while the MMAs below run
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa[kFM];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb[kFN];
#pragma unroll
      for (int fm = 0; fm < kFM; ++fm) {
        wmma::load_matrix_sync(fa[fm], &As[buf][wm * kWM + fm * 16][kk], kLdA);
#pragma unroll
        for (int x = 0; x < fa[fm].num_elements; ++x) fa[fm].x[x] = wmma::__float_to_tf32(fa[fm].x[x]);
      }
#pragma unroll
      for (int fn = 0; fn < kFN; ++fn) {
        wmma::load_matrix_sync(fb[fn], &Bs[buf][kk][wn * kWN + fn * 16], kLdB);
#pragma unroll
        for (int x = 0; x < fb[fn].num_elements; ++x) fb[fn].x[x] = wmma::__float_to_tf32(fb[fn].x[x]);
      }
#pragma unroll
      for (int fm = 0; fm < kFM; ++fm)
#pragma unroll
        for (int fn = 0; fn < kFN; ++fn) wmma::mma_sync(acc[fm][fn], fa[fm], fb[fn], acc[fm][fn]);
    }
    // Buffer buf^1 was last read in iteration t-1, which every thread finished before the
    // barrier at its end; the barrier below publishes it before iteration t+1 reads it.
    if (t + 1 < kTiles) storeShared(buf ^ 1);
    __syncthreads();
  }

  // Epilogue: a fragment's element layout is unspecified, so each warp stores one fragment at
  // a time to its own scratch tile and writes it out with alpha, beta and the edge checks.
  const auto scratch = Cs[warp];  // float* (on the host, a checked view)
#pragma unroll
  for (int fm = 0; fm < kFM; ++fm)
#pragma unroll
    for (int fn = 0; fn < kFN; ++fn) {
      wmma::store_matrix_sync(scratch, acc[fm][fn], 16, wmma::mem_row_major);
      __syncwarp();
      for (int x = lane; x < 256; x += 32) {
        const int i = i0 + wm * kWM + fm * 16 + x / 16, j = j0 + wn * kWN + fn * 16 + x % 16;
        if (i < M && j < N) storeC(C, ldc, i, j, alpha, scratch[x], beta);
      }
      __syncwarp();  // the scratch is read before the next fragment overwrites it
    }
}

}  // namespace

void gemm_cuda_tensor_core(bool transA, bool transB, int M, int N, int K, float alpha,
                           const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream) {
  if (M <= 0 || N <= 0) return;
  const unsigned blocks = ceilDiv(M, kBM) * ceilDiv(N, kBN);  // 1-D grid, ordered in the kernel
  dispatchTransposes(transA, transB, [&](auto ta, auto tb) {
    gemm_tc_kernel<decltype(ta)::value, decltype(tb)::value>
        <<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(M, N, K, alpha, A, lda, B,
                                                                      ldb, beta, C, ldc);
  });
  PARALAB_CUDA_CHECK_LAUNCH();
}

}  // namespace paralab::kernels
