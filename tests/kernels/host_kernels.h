// The launchers of host_kernels.cu and of the seeded-bug copies of gemm_tiled.cu (see
// tests/kernels/CMakeLists.txt): device pointers of the emulated GPU, the default stream.
// See tst_cuda_host.cpp.
#pragma once
#include <cuda_runtime.h>

namespace paralab::test {

void host_indices(int* out, dim3 grid, dim3 block);       // 12 ints per thread: the built-ins
void host_reverse(float* data, int n, bool barrier);      // one block of n threads
void host_warp_sums(float* out, const float* in, int n);  // out[2i]: xor sum, out[2i+1]: down
void host_half_warp(float* out, const float* in);         // mask 0xffff
void host_halves(float* out, const float* in);            // masks 0xffff, 0xffff0000 at once
void host_width(int* out);                                // width 8: up 1, down 3, from lane 5
void host_histogram(int* bins, const int* values, int n);
void host_wmma(float* d, const float* a, const float* b, const float* c);
void host_wmma_epilogue(float* out, bool syncwarp);
void host_empty(dim3 grid, dim3 block, size_t sharedBytes);
void host_dynamic_shared(float* out, int n, bool optIn);
void host_deadlock(float* out);
void host_diverged(float* out);
void host_read(float* out, const float* in);

}  // namespace paralab::test

namespace paralab::kernels {

// gemm_tiled.cu with its first __syncthreads() removed, and with the row of A it loads shifted
// by one: the bugs the checks must catch.
void gemm_cuda_tiled_missing_barrier(bool transA, bool transB, int M, int N, int K, float alpha,
                                     const float* A, int lda, const float* B, int ldb, float beta,
                                     float* C, int ldc, void* stream);
void gemm_cuda_tiled_shifted_row(bool transA, bool transB, int M, int N, int K, float alpha,
                                 const float* A, int lda, const float* B, int ldb, float beta,
                                 float* C, int ldc, void* stream);

}  // namespace paralab::kernels
