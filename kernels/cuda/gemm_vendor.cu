// The vendor rung of the GPU GEMM ladder: cuBLAS, in pure fp32 and with TF32 tensor cores.
// cuBLAS is column-major; a row-major M x N matrix is the same memory as a column-major N x M
// one, so row-major C = op(A) op(B) is computed as column-major C^T = op(B)^T op(A)^T.
// See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench gemm --device cuda`.
#include <cublas_v2.h>

#include <string>

#include "cuda/check.h"
#include "cuda/gemm.h"

namespace paralab::kernels {

namespace {

void cublasCheck(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("gemm_vendor.cu: ") + what + ": " + cublasGetStatusString(st));
}

// One cuBLAS handle per thread (ranks are threads) and device; a handle belongs to the device
// that was current when it was made, so it is remade when the thread switches devices.
class Handle {
 public:
  ~Handle() {
    if (m_h) cublasDestroy(m_h);  // at thread exit; nothing to report to
  }
  cublasHandle_t get() {
    int dev = 0;
    PARALAB_CUDA_CHECK(cudaGetDevice(&dev));
    if (!m_h || dev != m_dev) {
      if (m_h) cublasDestroy(m_h);
      m_h = nullptr;
      cublasCheck(cublasCreate(&m_h), "cublasCreate");
      m_dev = dev;
    }
    return m_h;
  }

 private:
  cublasHandle_t m_h = nullptr;
  int m_dev = -1;
};
thread_local Handle tlsHandle;

void vendorGemm(cublasComputeType_t compute, bool transA, bool transB, int M, int N, int K,
                float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                float* C, int ldc, void* stream) {
  if (M <= 0 || N <= 0) return;
  cublasHandle_t h = tlsHandle.get();
  cublasCheck(cublasSetStream(h, static_cast<cudaStream_t>(stream)), "cublasSetStream");
  // Row-major op(B) (K x N) seen column-major is op(B)^T (N x K): no flag when B is stored
  // K x N, the transpose flag when it is stored N x K. A alike; m = N, n = M.
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasCheck(cublasGemmEx(h, opB, opA, N, M, K, &alpha, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda,
                           &beta, C, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
}

}  // namespace

// CUBLAS_COMPUTE_32F under the handle's default math mode: fp32 FMAs, no tensor-core TF32.
void gemm_cuda_vendor(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc,
                      void* stream) {
  vendorGemm(CUBLAS_COMPUTE_32F, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
             stream);
}

void gemm_cuda_vendor_tf32(bool transA, bool transB, int M, int N, int K, float alpha,
                           const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream) {
  vendorGemm(CUBLAS_COMPUTE_32F_FAST_TF32, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta,
             C, ldc, stream);
}

}  // namespace paralab::kernels
