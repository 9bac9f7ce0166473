// The 16-bit tensor-core GEMM mixed precision trains with on a GPU (--precision bf16|fp16):
// WMMA m16n16k16 on bf16 or fp16 operands, products accumulated in fp32, C in fp32 (CUDA C++
// Programming Guide, "Warp Matrix Functions"; compute capability 8.0+). The operands are fp32
// words, as the engine stores 16-bit values (train/precision.h); each is rounded to bf16/fp16
// (to nearest, ties to even: exact for a value already stored in 16 bits) as it is staged in
// shared memory, which holds the tiles in 16 bits. The structure is gemm_tensor_core.cu's:
// block tile 128 x 128 x 32, 8 warps of 64 x 32, double-buffered shared memory with the next
// tiles' global loads in flight during the current tile's MMAs.
// See tests/kernels/tst_cuda_gemm_16bit.cpp and `paralab-run --device cuda --precision bf16`.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "cuda/check.h"
#include "cuda/gemm.h"
#include "cuda/gemm_common.h"

namespace paralab::kernels {

using namespace gemm_detail;
using namespace nvcuda;

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32;            // block tile (values)
constexpr int kWarpsM = 2, kWarpsN = 4;                  // 8 warps ...
constexpr int kThreads = 32 * kWarpsM * kWarpsN;         // ... 256 threads
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 32 per warp
constexpr int kFM = kWM / 16, kFN = kWN / 16;            // 4 x 2 accumulator fragments
// Shared rows padded by 8 values (16 bytes): WMMA wants ldm a multiple of 8 16-bit values, and
// the padding spreads a tile's column across banks. Fragment pointers stay 32-byte aligned.
constexpr int kLdA = kBK + 8, kLdB = kBN + 8;
// Each thread stages pairs of neighbouring values of a shared row (one 4-byte word each).
constexpr int kPairsA = kBM * kBK / 2 / kThreads, kPairsB = kBK * kBN / 2 / kThreads;  // 8, 8
constexpr int kGroupM = 8;  // block-rows per L2 group (gemm_common.h: groupedTile)

template <class T>
__device__ __forceinline__ T toHalf16(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

template <class T, bool TA, bool TB>
__global__ void __launch_bounds__(kThreads)
    gemm_tc16_kernel(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                     const float* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                     int ldc) {
  __shared__ __align__(128) T As[2][kBM][kLdA];  // As[b][r][c] = op(A)[i0 + r, k0 + c]
  __shared__ __align__(128) T Bs[2][kBK][kLdB];  // Bs[b][r][c] = op(B)[k0 + r, j0 + c]
  __shared__ __align__(128) float Cs[kThreads / 32][16 * 16];  // per-warp epilogue scratch

  const TileOrigin tile = groupedTile(int(blockIdx.x), M, N, kBM, kBN, kGroupM);
  const int i0 = tile.i0, j0 = tile.j0;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFM][kFN];
#pragma unroll
  for (int fm = 0; fm < kFM; ++fm)
#pragma unroll
    for (int fn = 0; fn < kFN; ++fn) wmma::fill_fragment(acc[fm][fn], 0.f);

  // Pair q = tid + s * 256 of a tile is (r, c), (r, c + 1). A warp's 32 pairs lie along k for a
  // row-major A and along i for a transposed one (B alike), so its loads are consecutive.
  auto placeA = [](int q, int& r, int& c) {
    r = TA ? q % kBM : q / (kBK / 2);
    c = 2 * (TA ? q / kBM : q % (kBK / 2));
  };
  auto placeB = [](int q, int& r, int& c) {
    r = TB ? q % kBK : q / (kBN / 2);
    c = 2 * (TB ? q / kBK : q % (kBN / 2));
  };
  float ra[2 * kPairsA], rb[2 * kPairsB];
  auto loadGlobal = [&](int k0) {
#pragma unroll
    for (int s = 0; s < kPairsA; ++s) {
      int r, c;
      placeA(tid + s * kThreads, r, c);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        ra[2 * s + h] = i0 + r < M && k0 + c + h < K ? at<TA>(A, lda, i0 + r, k0 + c + h) : 0.f;
    }
#pragma unroll
    for (int s = 0; s < kPairsB; ++s) {
      int r, c;
      placeB(tid + s * kThreads, r, c);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        rb[2 * s + h] = k0 + r < K && j0 + c + h < N ? at<TB>(B, ldb, k0 + r, j0 + c + h) : 0.f;
    }
  };
  auto storeShared = [&](int buf) {  // rounded to 16 bits here
#pragma unroll
    for (int s = 0; s < kPairsA; ++s) {
      int r, c;
      placeA(tid + s * kThreads, r, c);
      As[buf][r][c] = toHalf16<T>(ra[2 * s]);
      As[buf][r][c + 1] = toHalf16<T>(ra[2 * s + 1]);
    }
#pragma unroll
    for (int s = 0; s < kPairsB; ++s) {
      int r, c;
      placeB(tid + s * kThreads, r, c);
      Bs[buf][r][c] = toHalf16<T>(rb[2 * s]);
      Bs[buf][r][c + 1] = toHalf16<T>(rb[2 * s + 1]);
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
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[kFN];
#pragma unroll
      for (int fm = 0; fm < kFM; ++fm)
        wmma::load_matrix_sync(fa[fm], &As[buf][wm * kWM + fm * 16][kk], kLdA);
#pragma unroll
      for (int fn = 0; fn < kFN; ++fn)
        wmma::load_matrix_sync(fb[fn], &Bs[buf][kk][wn * kWN + fn * 16], kLdB);
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

  // Epilogue: one fragment at a time through the warp's scratch tile, with alpha, beta and the
  // edge checks (a fragment's element layout is unspecified).
  const auto scratch = Cs[warp];
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

template <class T>
void launch16(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc, void* stream) {
  if (M <= 0 || N <= 0) return;
  const unsigned blocks = ceilDiv(M, kBM) * ceilDiv(N, kBN);  // 1-D grid, ordered in the kernel
  dispatchTransposes(transA, transB, [&](auto ta, auto tb) {
    gemm_tc16_kernel<T, decltype(ta)::value, decltype(tb)::value>
        <<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(M, N, K, alpha, A, lda, B, ldb,
                                                                     beta, C, ldc);
  });
  PARALAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_cuda_tensor_core_bf16(bool transA, bool transB, int M, int N, int K, float alpha,
                                const float* A, int lda, const float* B, int ldb, float beta,
                                float* C, int ldc, void* stream) {
  launch16<__nv_bfloat16>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

void gemm_cuda_tensor_core_fp16(bool transA, bool transB, int M, int N, int K, float alpha,
                                const float* A, int lda, const float* B, int ldb, float beta,
                                float* C, int ldc, void* stream) {
  launch16<__half>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

}  // namespace paralab::kernels
