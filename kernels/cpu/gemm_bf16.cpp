// bf16 GEMM on AVX512_BF16 (gemm.h's gemm_bf16): panels of op(A) and op(B) packed as bf16 pairs
// along K, multiplied by vdpbf16ps (two bf16 products summed into each fp32 lane), summed in fp32.
// See tests/kernels/tst_gemm_bf16.cpp; `paralab-bench gemm --threads 1` prints its row.
//
// Blocking as gemm_tiled's (Goto & van de Geijn 2008): a KC x NC panel of B packed once per
// (KC, NC) block, an MC x KC block of A once per (MC, KC), a 14 x 32 register tile (28 fp32
// accumulators of the 32 zmm registers). Only the functions marked kTarget use AVX-512; they are
// called only when gemm_bf16_available() (cpu/dispatch.h: the CPU has avx512_bf16 and the
// vector level is avx512), so the build itself stays baseline x86-64.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/half.h"

#if PARALAB_VEC_X86
#include <immintrin.h>
#define PARALAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace paralab::kernels {

namespace {

constexpr int kMr = 14;   // rows of the register tile
constexpr int kNr = 32;   // columns of the register tile: two zmm of 16 fp32
constexpr int kKc = 384;  // depth block, even (pairs): an A strip and a B strip stay in L1/L2
constexpr int kMc = 168;  // rows of C a packed A block covers (a multiple of kMr)
constexpr int kNc = 2048; // columns a packed B panel covers (a multiple of kNr)

// The bf16 bits of x rounded to nearest, ties to even (half.h's rounding): exact for a value
// bf16 holds, as a 16-bit tensor's values are.
inline uint32_t bf16Bits(float x) { return std::bit_cast<uint32_t>(roundToBf16(x)) >> 16; }

// op(X)(r, c) of a row-major X with stride ld.
inline float at(const float* X, int ld, bool trans, int r, int c) {
  return trans ? X[size_t(c) * ld + r] : X[size_t(r) * ld + c];
}

// A's rows [i0, i0 + mc) and depth [k0, k0 + kc) as strips of kMr rows: for each pair p of the
// depth, kMr words each holding (a(i, 2p), a(i, 2p + 1)) as bf16 (low half first); rows past M
// and the odd depth's partner are zero.
void packA(const float* A, int lda, bool trans, int i0, int mc, int k0, int kc, int M, int K,
           uint32_t* out) {
  const int pairs = (kc + 1) / 2;
  for (int s = 0; s < mc; s += kMr)
    for (int p = 0; p < pairs; ++p)
      for (int r = 0; r < kMr; ++r) {
        const int i = i0 + s + r, k = k0 + 2 * p;
        uint32_t lo = 0, hi = 0;
        if (i < M && s + r < mc) {
          lo = bf16Bits(at(A, lda, trans, i, k));
          if (k + 1 < K && 2 * p + 1 < kc) hi = bf16Bits(at(A, lda, trans, i, k + 1));
        }
        *out++ = lo | hi << 16;
      }
}

// B's depth [k0, k0 + kc) and columns [j0, j0 + nc) as strips of kNr columns: for each pair p,
// kNr words each holding (b(2p, j), b(2p + 1, j)); columns past N and the odd partner are zero.
void packB(const float* B, int ldb, bool trans, int k0, int kc, int j0, int nc, int N, int K,
           uint32_t* out) {
  const int pairs = (kc + 1) / 2;
  for (int s = 0; s < nc; s += kNr)
    for (int p = 0; p < pairs; ++p) {
      const int k = k0 + 2 * p;
      const bool second = k + 1 < K && 2 * p + 1 < kc;
      for (int c = 0; c < kNr; ++c) {
        const int j = j0 + s + c;
        uint32_t lo = 0, hi = 0;
        if (j < N && s + c < nc) {
          lo = bf16Bits(at(B, ldb, trans, k, j));
          if (second) hi = bf16Bits(at(B, ldb, trans, k + 1, j));
        }
        *out++ = lo | hi << 16;
      }
    }
}

#if PARALAB_VEC_X86
// acc (kMr x kNr, row-major, fp32) = sum over `pairs` of the packed strips' products.
PARALAB_BF16_TARGET void microKernel(int pairs, const uint32_t* a, const uint32_t* b, float* acc) {
  __m512 c[kMr][2];  // unrolled below, so the tile lives in registers
#pragma GCC unroll 14
  for (int r = 0; r < kMr; ++r) c[r][0] = c[r][1] = _mm512_setzero_ps();
  for (int p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma GCC unroll 14
    for (int r = 0; r < kMr; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(int(a[r]));
      c[r][0] = _mm512_dpbf16_ps(c[r][0], ar, b0);
      c[r][1] = _mm512_dpbf16_ps(c[r][1], ar, b1);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 14
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(acc + r * kNr, c[r][0]);
    _mm512_storeu_ps(acc + r * kNr + 16, c[r][1]);
  }
}
#endif

// C's tile (rows m, columns n of it in range) = alpha acc + beta C; beta == 0 ignores C's old
// contents, as BLAS does.
void writeTile(const float* acc, int m, int n, float alpha, float beta, float* C, int ldc) {
  for (int r = 0; r < m; ++r) {
    float* c = C + size_t(r) * ldc;
    const float* t = acc + r * kNr;
    if (beta == 0.f)
      for (int j = 0; j < n; ++j) c[j] = alpha * t[j];
    else
      for (int j = 0; j < n; ++j) c[j] = alpha * t[j] + beta * c[j];
  }
}

// Without AVX512_BF16: the same numerics (operands rounded to bf16, products summed in fp32),
// scalar, so a caller that did not check gemm_bf16_available() still gets the answer.
void gemmBf16Scalar(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k)
        acc += roundToBf16(at(A, lda, transA, i, k)) * roundToBf16(at(B, ldb, transB, k, j));
      float& c = C[size_t(i) * ldc + j];
      c = alpha * acc + (beta == 0.f ? 0.f : beta * c);
    }
}

}  // namespace

bool gemm_bf16_available() {
  return cpuHasAvx512Bf16() && simdLevel() == SimdLevel::Avx512;
}

void gemm_bf16(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if PARALAB_VEC_X86
  if (!gemm_bf16_available())
#endif
  {
    gemmBf16Scalar(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#if PARALAB_VEC_X86
  if (K <= 0 || alpha == 0.f) {  // C = beta C, as BLAS
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float& c = C[size_t(i) * ldc + j];
        c = beta == 0.f ? 0.f : beta * c;
      }
    return;
  }
  // Per-thread scratch: the packed panels (32-bit words, one bf16 pair each) and a tile.
  thread_local std::vector<uint32_t> packedA, packedB;
  thread_local std::vector<float> tile;
  const int ncMax = std::min(kNc, (N + kNr - 1) / kNr * kNr);
  const int mcMax = std::min(kMc, (M + kMr - 1) / kMr * kMr);
  packedB.resize(size_t(kKc / 2) * ncMax);
  packedA.resize(size_t(kKc / 2) * mcMax);
  tile.resize(kMr * kNr);
  for (int j0 = 0; j0 < N; j0 += kNc) {
    const int nc = std::min(kNc, N - j0);
    for (int k0 = 0; k0 < K; k0 += kKc) {
      const int kc = std::min(kKc, K - k0), pairs = (kc + 1) / 2;
      const float b = k0 == 0 ? beta : 1.f;  // beta applies once, on the first depth block
      packB(B, ldb, transB, k0, kc, j0, nc, N, K, packedB.data());
      for (int i0 = 0; i0 < M; i0 += kMc) {
        const int mc = std::min(kMc, M - i0);
        packA(A, lda, transA, i0, mc, k0, kc, M, K, packedA.data());
        for (int s = 0; s < nc; s += kNr)
          for (int t = 0; t < mc; t += kMr) {
            microKernel(pairs, packedA.data() + size_t(t) * pairs,
                        packedB.data() + size_t(s) * pairs, tile.data());
            writeTile(tile.data(), std::min(kMr, mc - t), std::min(kNr, nc - s),
                      alpha, b, C + size_t(i0 + t) * ldc + j0 + s, ldc);
          }
      }
    }
  }
#endif
}

}  // namespace paralab::kernels
