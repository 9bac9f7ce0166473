// GEMM on the GPU, row-major, the CPU ladder's arguments (cpu/gemm.h) with device pointers and
// a stream (a cudaStream_t; nullptr is the default stream). C = alpha op(A) op(B) + beta C.
// Launchers enqueue and return; they throw std::runtime_error on a CUDA error (cuda/check.h).
// See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench gemm --device cuda`.
#pragma once

#include <cstring>

namespace paralab::kernels {

// Rung 1: one thread per element of C, threadIdx.x running down a column of C, so the 32
// threads of a warp load and store addresses a whole row apart (uncoalesced).
void gemm_cuda_naive(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc,
                     void* stream = nullptr);
// Rung 2: the same, threadIdx.x running along a row of C: a warp's loads of B and stores of C
// are 32 neighbouring floats, one 128-byte transaction (coalesced).
void gemm_cuda_coalesced(bool transA, bool transB, int M, int N, int K, float alpha,
                         const float* A, int lda, const float* B, int ldb, float beta, float* C,
                         int ldc, void* stream = nullptr);
// Rung 3: 32 x 32 tiles of A and B staged in shared memory, each loaded from global memory
// once per block instead of once per thread (32x less global traffic).
void gemm_cuda_tiled(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                     int lda, const float* B, int ldb, float beta, float* C, int ldc,
                     void* stream = nullptr);
// Rung 4: tensor cores through WMMA, TF32 inputs (10-bit mantissa, inputs rounded from fp32)
// with fp32 accumulation; needs compute capability 8.0 or newer.
void gemm_cuda_tensor_core(bool transA, bool transB, int M, int N, int K, float alpha,
                           const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream = nullptr);
// Vendor: cuBLAS, pure fp32 (CUDA cores) ...
void gemm_cuda_vendor(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc,
                      void* stream = nullptr);
// ... and TF32 tensor cores with fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_TF32): the
// reference for the tensor-core rung at the same precision.
void gemm_cuda_vendor_tf32(bool transA, bool transB, int M, int N, int K, float alpha,
                           const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream = nullptr);

// Mixed precision's GEMM (--precision bf16|fp16 on a GPU; not a rung of the --kernel ladder):
// tensor cores through WMMA m16n16k16, the operands rounded to bf16 or fp16 (to nearest, ties to
// even; exact for values the engine already stores in 16 bits), products summed in fp32, C in
// fp32. Compute capability 8.0 or newer.
void gemm_cuda_tensor_core_bf16(bool transA, bool transB, int M, int N, int K, float alpha,
                                const float* A, int lda, const float* B, int ldb, float beta,
                                float* C, int ldc, void* stream = nullptr);
void gemm_cuda_tensor_core_fp16(bool transA, bool transB, int M, int N, int K, float alpha,
                                const float* A, int lda, const float* B, int ldb, float beta,
                                float* C, int ldc, void* stream = nullptr);

// [SECTION] The registry: `--kernel NAME` with --device cuda picks a rung by name.
using GemmCudaFn = void (*)(bool transA, bool transB, int M, int N, int K, float alpha,
                            const float* A, int lda, const float* B, int ldb, float beta,
                            float* C, int ldc, void* stream);
struct GemmCudaKernel {
  const char* name;       // "naive" | "coalesced" | "tiled" | "tensor-core" | "vendor" | "vendor-tf32"
  GemmCudaFn fn;
  const char* precision;  // "fp32" or "tf32": the vendor row of the same precision is its yardstick
  const char* summary;
};

inline constexpr GemmCudaKernel kGemmCudaKernels[] = {
    {"naive", gemm_cuda_naive, "fp32", "one thread per output, uncoalesced"},
    {"coalesced", gemm_cuda_coalesced, "fp32", "one thread per output, coalesced"},
    {"tiled", gemm_cuda_tiled, "fp32", "32x32 shared-memory tiles"},
    {"tensor-core", gemm_cuda_tensor_core, "tf32", "WMMA TF32, 128x128 block tiles, 8 warps"},
    {"vendor", gemm_cuda_vendor, "fp32", "cuBLAS, fp32"},
    {"vendor-tf32", gemm_cuda_vendor_tf32, "tf32", "cuBLAS, TF32 tensor cores"},
};

// The GPU kernel called `name`, or nullptr (callers list kGemmCudaKernels).
inline GemmCudaFn gemm_cuda_find(const char* name) {
  for (const GemmCudaKernel& k : kGemmCudaKernels)
    if (std::strcmp(name, k.name) == 0) return k.fn;
  return nullptr;
}

}  // namespace paralab::kernels
