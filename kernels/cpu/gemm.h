// GEMM on the CPU, row-major: C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides in elements.
// `gemm_naive` is the reference every other kernel is tested against (tests/kernels/tst_gemm.cpp);
// `gemm_vendor` calls OpenBLAS. Both exist for float and double (the gradient checks use double).
#pragma once

namespace paralab::kernels {

template <typename T>
void gemm_naive(bool transA, bool transB, int M, int N, int K, T alpha, const T* A, int lda,
                const T* B, int ldb, T beta, T* C, int ldc);

template <typename T>
void gemm_vendor(bool transA, bool transB, int M, int N, int K, T alpha, const T* A, int lda,
                 const T* B, int ldb, T beta, T* C, int ldc);

// The BLAS in use and the CPU kernel family it picked ("OpenBLAS 0.3.21 SkylakeX").
const char* vendor_blas_name();
// True when the vendor BLAS runs AVX-512 kernels (OpenBLAS core SkylakeX, Cooperlake, ...).
bool vendor_blas_uses_avx512();
// Threads the vendor BLAS may use (ParaLab runs it with 1 per rank: a rank is one worker).
void vendor_blas_set_threads(int n);

}  // namespace paralab::kernels
