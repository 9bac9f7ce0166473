// GEMM on the CPU, row-major: C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides in elements.
// `gemm_naive` is the reference every other kernel is tested against (tests/kernels/tst_gemm.cpp);
// `gemm_vendor` calls OpenBLAS. Both exist for float and double (the gradient checks use double).
// The rungs between them are float only; gemm_kernels() lists the ladder (`paralab-bench gemm`).
#pragma once

#include <span>
#include <string_view>

namespace paralab::kernels {

template <typename T>
void gemm_naive(bool transA, bool transB, int M, int N, int K, T alpha, const T* A, int lda,
                const T* B, int ldb, T beta, T* C, int ldc);

template <typename T>
void gemm_vendor(bool transA, bool transB, int M, int N, int K, T alpha, const T* A, int lda,
                 const T* B, int ldb, T beta, T* C, int ldc);
// gemm_vendor is specialised per type (sgemm, dgemm) in gemm_vendor.cpp.
template <>
void gemm_vendor<float>(bool, bool, int, int, int, float, const float*, int, const float*, int,
                        float, float*, int);
template <>
void gemm_vendor<double>(bool, bool, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);

// The BLAS in use and the CPU kernel family it picked ("OpenBLAS 0.3.21 SkylakeX").
const char* vendor_blas_name();
// True when the vendor BLAS runs AVX-512 kernels (OpenBLAS core SkylakeX, Cooperlake, ...).
bool vendor_blas_uses_avx512();
// The wall time spent inside the vendor's sgemm, summed over the threads that call it, counted
// only while switched on (the benchmarks: the GEMMs' share of a training step, and so how far
// ParaLab's own kernels could still move it). Switching on starts the sum again from zero.
void vendor_sgemm_timing(bool on);
double vendor_sgemm_seconds();
// Threads the vendor BLAS may use (ParaLab runs it with 1 per rank: a rank is one worker), and
// with it the rank's own kernels (cpu/parallel_rows.h: rank_threads).
void vendor_blas_set_threads(int n);

// [SECTION] The CPU ladder, float, same arguments and semantics as gemm_naive.
// Rung 2: the naive loops reordered (i, k, j) so the inner loop runs along a row of B and of C
// and the compiler vectorises it (AVX-512 or AVX2, chosen when the program loads).
void gemm_simd(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc);
// Rung 3: gemm_simd over blocks of rows of C, one block per task of the GEMM thread pool.
void gemm_threaded(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                   int lda, const float* B, int ldb, float beta, float* C, int ldc);
// Rung 4: cache blocking, packed panels and a register micro-kernel (Goto & van de Geijn 2008),
// the blocks spread over the thread pool.
void gemm_tiled(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc);

// [SECTION] bf16 arithmetic (gemm_bf16.cpp), same arguments and semantics, 1 thread: the operands
// rounded to bf16 (exact for values bf16 holds, as a 16-bit run's tensors are), products of
// bf16 pairs summed in fp32 by AMX's tdpbf16ps or AVX512_BF16's vdpbf16ps. Not a rung of the
// ladder: it rounds. Without gemm_bf16_available() it computes the same numerics with scalar loops.
void gemm_bf16(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc);
// What gemm_bf16 runs: "amx" (the CPU has AMX-BF16 and the operating system grants the tiles),
// else "avx512_bf16" (the CPU has it), else "scalar"; "scalar" whenever the vector level
// (cpu/dispatch.h) is below avx512, so PARALAB_SIMD=avx2 turns both off.
const char* gemm_bf16_isa();
// gemm_bf16_isa() is not "scalar".
bool gemm_bf16_available();
// false keeps gemm_bf16 off AMX (on its AVX512_BF16 path), and so training off it too
// (gemm_bf16_for_training), for the tests and the benchmark.
void gemm_bf16_allow_amx(bool allow);
// Whether a bf16 training run may compute its GEMMs of two bf16 operands in gemm_bf16: only on
// AMX (gemm_bf16_isa() "amx": `paralab-bench gemm` compares each path with sgemm), and not
// with PARALAB_BF16_GEMM=off in the environment (the fp32 GEMM, for comparison). Which GEMMs
// qualify is the engine's choice (model/layers.h: forwardGemmInBf16).
bool gemm_bf16_for_training();
// gemm_bf16 split over the rank's threads (cpu/parallel_rows.h) by blocks of whole rows of C.
// Each element's sums run in the same order whichever rows share its block, so the result is
// gemm_bf16's on one thread bit for bit (tests/kernels/tst_gemm_bf16.cpp).
void gemm_bf16_rows(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc);

// Threads gemm_threaded and gemm_tiled use, the caller included (default, and n <= 0: the
// hardware's threads). Set it before GEMMs run, as openblas_set_num_threads; 1 makes them
// single-threaded. A call already running keeps the threads it started with.
void gemm_set_threads(int n);
int gemm_threads();

// [SECTION] The registry: `--kernel NAME` picks a rung by name.
using GemmFn = void (*)(bool transA, bool transB, int M, int N, int K, float alpha,
                        const float* A, int lda, const float* B, int ldb, float beta, float* C,
                        int ldc);
struct GemmKernel {
  const char* name;     // "naive" | "simd" | "threaded" | "tiled" | "vendor"
  GemmFn fn;
  const char* summary;  // one line for --help and the benchmark table
};

// The ladder, slowest rung first.
inline std::span<const GemmKernel> gemm_kernels() {
  static constexpr GemmKernel kLadder[] = {
      {"naive", gemm_naive<float>, "serial scalar triple loop (the reference)"},
      {"simd", gemm_simd, "i-k-j loop order, vectorised inner loop, 1 thread"},
      {"threaded", gemm_threaded, "the simd kernel over blocks of rows, thread pool"},
      {"tiled", gemm_tiled, "cache-blocked, packed panels, register micro-kernel, thread pool"},
      {"vendor", gemm_vendor<float>, "OpenBLAS sgemm"},
  };
  return kLadder;
}

// The kernel called `name`, or nullptr when there is none (callers list gemm_kernels()).
inline GemmFn gemm_find(std::string_view name) {
  for (const GemmKernel& k : gemm_kernels())
    if (name == k.name) return k.fn;
  return nullptr;
}

}  // namespace paralab::kernels
