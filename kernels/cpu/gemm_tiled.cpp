// Rung 4 of the CPU GEMM ladder, the serious one: the loop structure of GotoBLAS and BLIS
// (Goto & van de Geijn 2008, "Anatomy of High-Performance Matrix Multiplication"; Van Zee &
// van de Geijn 2015, BLIS): cache blocks, packed panels, an MR x NR register micro-kernel,
// and the row blocks spread over the GEMM thread pool. See tests/kernels/tst_gemm.cpp and
// `paralab-bench gemm` (one Zen 5 core: 80-90% of OpenBLAS's AVX-512 sgemm, 256 to 4096).
#include <algorithm>
#include <cstdlib>

#include "cpu/gemm.h"
#include "cpu/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PARALAB_GEMM_X86 1
#endif

namespace paralab::kernels {

namespace {

// Block sizes in floats (Goto's kc, mc, nc). A KC x NR sliver of packed B (256 x 32 x 4 B =
// 32 KiB) stays in the 48 KiB L1 while the micro-kernel runs down a packed MC x KC block of A
// (336 x 256 x 4 B = 336 KiB, in the 1-2 MiB L2); the KC x NC panel of B lives in L3.
constexpr int kKC = 256;
constexpr int kMCMax = 336;  // a multiple of every MR below (14 and 6)
constexpr int kNC = 4096;

constexpr float kZero = 0.f;

int ceilDiv(int a, int b) { return (a + b - 1) / b; }
int roundUp(int a, int b) { return ceilDiv(a, b) * b; }

// A 64-byte aligned buffer per thread, grown on demand and kept between calls: no allocation
// (and no page faults) per GEMM once the largest size has been seen.
class Scratch {
 public:
  ~Scratch() { std::free(m_p); }
  float* get(size_t floats) {
    if (floats > m_n) {
      std::free(m_p);
      m_p = static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64));
      m_n = floats;
    }
    return m_p;
  }

 private:
  float* m_p = nullptr;
  size_t m_n = 0;
};
thread_local Scratch tlsPackedA;  // each thread's own block of A
thread_local Scratch tlsPackedB;  // the calling thread's panel of B, read by every thread

// [SECTION] Micro-kernels: c[0:MR, 0:NR] = a_sliver * b_sliver + beta * c (beta == 0: c is not
// read). beta comes by pointer and is read after the k loop: passed by value it sits in a
// vector register, and with 31 of 32 taken GCC then spills a row of B inside the loop. `a` holds MR values per k, `b` NR per k (packed below); MR * NR / 16 accumulators sit
// in vector registers for the whole k loop, so each loaded value feeds MR or NR FMAs.
#ifdef PARALAB_GEMM_X86
// AVX-512: 14 x 32 = 28 zmm accumulators + 2 for the row of B + 1 broadcast of A = 31 of 32
// registers. Per k: 2 loads and 14 broadcasts feed 28 FMAs (14 cycles on two FMA pipes).
struct Avx512 {
  static constexpr int MR = 14, NR = 32;
  __attribute__((target("avx512f"))) static void tile(int kc, const float* a, const float* b,
                                                      float* c, long ldc, const float* betaPtr) {
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      // The tile of C (14 rows x 2 lines) is read or written only after the k loop: ask for its
      // lines now so they arrive while the FMAs run.
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 31), _MM_HINT_T0);
    }
    for (int k = 0; k < kc; ++k, a += MR, b += NR) {
      const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
      for (int r = 0; r < MR; ++r) {
        const __m512 ar = _mm512_set1_ps(a[r]);
        acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
      }
    }
    const float beta = *betaPtr;
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r, c += ldc) {
      if (beta != 0.f) {
        acc[r][0] = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c), acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c + 16), acc[r][1]);
      }
      _mm512_storeu_ps(c, acc[r][0]);
      _mm512_storeu_ps(c + 16, acc[r][1]);
    }
  }
};

// AVX2: 6 x 16 = 12 ymm accumulators + 2 + 1 of 16 registers (the BLIS Haswell shape).
struct Avx2 {
  static constexpr int MR = 6, NR = 16;
  __attribute__((target("avx2,fma"))) static void tile(int kc, const float* a, const float* b,
                                                       float* c, long ldc, const float* betaPtr) {
    __m256 acc[MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; ++k, a += MR, b += NR) {
      const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 ar = _mm256_set1_ps(a[r]);
        acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
      }
    }
    const float beta = *betaPtr;
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r, c += ldc) {
      if (beta != 0.f) {
        acc[r][0] = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8), acc[r][1]);
      }
      _mm256_storeu_ps(c, acc[r][0]);
      _mm256_storeu_ps(c + 8, acc[r][1]);
    }
  }
};
#endif

// Plain C++ for other CPUs: same structure, the compiler vectorises what it can.
struct Portable {
  static constexpr int MR = 6, NR = 16;
  static void tile(int kc, const float* a, const float* b, float* c, long ldc,
                   const float* betaPtr) {
    const float beta = *betaPtr;
    float acc[MR][NR] = {};
    for (int k = 0; k < kc; ++k, a += MR, b += NR)
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < NR; ++j) acc[r][j] += a[r] * b[j];
    for (int r = 0; r < MR; ++r, c += ldc)
      for (int j = 0; j < NR; ++j) c[j] = acc[r][j] + (beta != 0.f ? beta * c[j] : 0.f);
  }
};

// [SECTION] Packing: copy a block into the order the micro-kernel reads it, once per block,
// so the kernel's loads are contiguous and aligned whatever the transposes and strides.
// Rows past the matrix edge are zeros, so the kernel never needs a short path.

// Rows [i0, i0+mc) x depth [k0, k0+kc) of alpha * op(A), as mc/MR slivers of MR values per k.
// alpha is applied here, once per element of A, instead of on every element of C.
template <int MR>
void packA(bool transA, const float* A, int lda, int i0, int mc, int k0, int kc, float alpha,
           float* dst) {
  for (int r0 = 0; r0 < mc; r0 += MR, dst += long(MR) * kc) {
    const int rows = std::min(MR, mc - r0);
    if (transA) {  // op(A)[i, k] = A[k, i]: MR consecutive floats per k
      for (int k = 0; k < kc; ++k) {
        const float* src = A + long(k0 + k) * lda + i0 + r0;
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? alpha * src[r] : 0.f;
      }
    } else {  // op(A)[i, k] = A[i, k]: read along each row, write with stride MR
      for (int r = 0; r < MR; ++r) {
        const float* src = A + long(i0 + r0 + r) * lda + k0;
        for (int k = 0; k < kc; ++k) dst[k * MR + r] = r < rows ? alpha * src[k] : 0.f;
      }
    }
  }
}

// Depth [k0, k0+kc) x columns [j0, j0+cols) of op(B), cols <= NR, as one sliver of NR per k.
template <int NR>
void packB(bool transB, const float* B, int ldb, int k0, int kc, int j0, int cols, float* dst) {
  if (!transB) {  // op(B)[k, j] = B[k, j]: contiguous runs along j
    for (int k = 0; k < kc; ++k) {
      const float* src = B + long(k0 + k) * ldb + j0;
      for (int j = 0; j < NR; ++j) dst[k * NR + j] = j < cols ? src[j] : 0.f;
    }
  } else {  // op(B)[k, j] = B[j, k]: read along each row of B, write with stride NR
    for (int j = 0; j < NR; ++j) {
      const float* src = B + long(j0 + j) * ldb + k0;
      for (int k = 0; k < kc; ++k) dst[k * NR + j] = j < cols ? src[k] : 0.f;
    }
  }
}

// [SECTION] The five loops around the micro-kernel (jc, pc, ic, jr, ir in BLIS's names).
template <class Kern>
void tiledGemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
               int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  constexpr int MR = Kern::MR, NR = Kern::NR;
  const std::shared_ptr<ThreadPool> pool = gemm_pool();
  const int threads = pool->size();
  // Row blocks of at most kMCMax, and (when M allows) a multiple of the threads in number, of
  // nearly equal height: M = 1024 on 2 threads gives 4 blocks of 266/266/266/226 rows rather
  // than 336/336/336/16. Too few rows for the threads: split each panel's columns as well.
  int mBlocks = std::min(roundUp(ceilDiv(M, kMCMax), threads), ceilDiv(M, MR));
  const int mc = roundUp(ceilDiv(M, mBlocks), MR);
  mBlocks = ceilDiv(M, mc);
  const int nParts = mBlocks >= threads ? 1 : ceilDiv(threads, mBlocks);
  float* packedB = tlsPackedB.get(size_t(kKC) * roundUp(std::min(N, kNC), NR));

  for (int jc = 0; jc < N; jc += kNC) {
    const int nc = std::min(kNC, N - jc);
    const int slivers = ceilDiv(nc, NR);
    for (int pc = 0; pc < K; pc += kKC) {
      const int kc = std::min(kKC, K - pc);
      // The first depth block applies beta; the later ones add to what it wrote.
      const float betaNow = pc == 0 ? beta : 1.f;
      constexpr int kSliversPerTask = 8;
      pool->run(ceilDiv(slivers, kSliversPerTask), [&](int t) {
        for (int s = t * kSliversPerTask; s < std::min(slivers, (t + 1) * kSliversPerTask); ++s)
          packB<NR>(transB, B, ldb, pc, kc, jc + s * NR, std::min(NR, nc - s * NR),
                    packedB + long(s) * NR * kc);
      });
      pool->run(mBlocks * nParts, [&](int t) {
        const int ic = (t / nParts) * mc, mcNow = std::min(mc, M - ic);
        const int part = t % nParts;
        const int s0 = slivers * part / nParts, s1 = slivers * (part + 1) / nParts;
        if (s0 >= s1) return;
        float* packedA = tlsPackedA.get(size_t(mc) * kKC);
        packA<MR>(transA, A, lda, ic, mcNow, pc, kc, alpha, packedA);
        for (int s = s0; s < s1; ++s) {  // jr: this sliver of B stays in L1 ...
          const int j = jc + s * NR, nr = std::min(NR, N - j);
          const float* b = packedB + long(s) * NR * kc;
          for (int r = 0; r < mcNow; r += MR) {  // ir: ... while slivers of A stream from L2
            const int mr = std::min(MR, mcNow - r);
            const float* a = packedA + long(r) * kc;
            float* c = C + long(ic + r) * ldc + j;
            if (mr == MR && nr == NR) {
              Kern::tile(kc, a, b, c, ldc, &betaNow);
              continue;
            }
            // Edge tile: compute the whole padded tile aside, keep the part inside C.
            alignas(64) float edge[MR * NR];
            Kern::tile(kc, a, b, edge, NR, &kZero);
            for (int ii = 0; ii < mr; ++ii)
              for (int jj = 0; jj < nr; ++jj) {
                float& out = c[long(ii) * ldc + jj];
                out = edge[ii * NR + jj] + (betaNow != 0.f ? betaNow * out : 0.f);
              }
          }
        }
      });
    }
  }
}

}  // namespace

void gemm_tiled(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.f) {  // C = beta * C, as BLAS defines the degenerate cases
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float& c = C[long(i) * ldc + j];
        c = beta == 0.f ? 0.f : beta * c;
      }
    return;
  }
#ifdef PARALAB_GEMM_X86
  __builtin_cpu_init();
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512) return tiledGemm<Avx512>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (avx2) return tiledGemm<Avx2>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
  tiledGemm<Portable>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace paralab::kernels
