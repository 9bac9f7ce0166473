// What the GPU GEMM kernels share: reading op(X) row-major, the alpha/beta store, launching
// the instance for the four transpose combinations, grid sizes, the blocks' grouped tile order.
// Included by gemm_*.cu only.
// See tests/kernels/tst_cuda_kernels.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace paralab::kernels::gemm_detail {

// op(X)[r, c] of a row-major X with row stride ld: X[r, c], or X[c, r] when transposed.
// 64-bit offsets: r * ld passes 2^31 at 46341 x 46341.
template <bool kTrans>
__device__ __forceinline__ float at(const float* X, int ld, int r, int c) {
  return kTrans ? X[int64_t(c) * ld + r] : X[int64_t(r) * ld + c];
}

// C[i, j] = alpha * acc + beta * C[i, j]; beta == 0 does not read C (it may be uninitialised
// or NaN), as BLAS defines it.
__device__ __forceinline__ void storeC(float* C, int ldc, int i, int j, float alpha, float acc,
                                       float beta) {
  float* p = C + int64_t(i) * ldc + j;
  *p = beta == 0.f ? alpha * acc : alpha * acc + beta * *p;
}

// Calls launch(std::bool_constant<transA>, std::bool_constant<transB>): each kernel is
// compiled for the four combinations so the transposes cost no run-time branches.
template <class Launch>
void dispatchTransposes(bool transA, bool transB, Launch&& launch) {
  if (!transA && !transB) launch(std::false_type{}, std::false_type{});
  else if (transA && !transB) launch(std::true_type{}, std::false_type{});
  else if (!transA && transB) launch(std::false_type{}, std::true_type{});
  else launch(std::true_type{}, std::true_type{});
}

__host__ __device__ inline unsigned ceilDiv(int a, int b) { return unsigned((a + b - 1) / b); }

// The first row and column of the bm x bn tile of an M x N output that block `block` of a 1-D
// grid of ceilDiv(M, bm) * ceilDiv(N, bn) blocks computes, in grouped order (Triton's matmul
// tutorial): consecutive blocks walk down `groupM` block-rows before moving right, so blocks
// running at the same time share panels of A and B in L2.
struct TileOrigin {
  int i0, j0;
};
__device__ __forceinline__ TileOrigin groupedTile(int block, int M, int N, int bm, int bn,
                                                  int groupM) {
  const int tilesM = int(ceilDiv(M, bm)), tilesN = int(ceilDiv(N, bn));
  const int perGroup = groupM * tilesN;
  const int firstM = (block / perGroup) * groupM;
  const int groupRows = min(tilesM - firstM, groupM);
  return {(firstM + (block % perGroup) % groupRows) * bm, ((block % perGroup) / groupRows) * bn};
}

}  // namespace paralab::kernels::gemm_detail
