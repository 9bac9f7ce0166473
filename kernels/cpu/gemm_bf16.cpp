// bf16 GEMM (gemm.h's gemm_bf16): panels of op(A) and op(B) packed as bf16, multiplied by AMX's
// tdpbf16ps (16 x 16 fp32 tiles) where the CPU and the operating system allow it, else by
// AVX512_BF16's vdpbf16ps (two bf16 products summed into each fp32 lane); sums in fp32.
// See tests/kernels/tst_gemm_bf16.cpp; `paralab-bench gemm --threads 1` prints its rows.
//
// Blocking as gemm_tiled's (Goto & van de Geijn 2008): a KC x NC panel of B packed once per
// (KC, NC) block, an MC x KC block of A once per (MC, KC); AVX512_BF16 multiplies a 14 x 32
// register tile (28 fp32 accumulators of the 32 zmm registers), AMX a 32 x 32 block in four
// tiles. Only the functions marked PARALAB_*_TARGET use AVX-512 or AMX; they run only when
// gemm_bf16_isa() names their path (the vector level is avx512 and the CPU has the
// instructions), so the build itself stays baseline x86-64.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/half.h"
#include "cpu/parallel_rows.h"

#if PARALAB_VEC_X86
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#define PARALAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define PARALAB_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f")))
#define PARALAB_PACK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
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


#if PARALAB_VEC_X86
// [SECTION] AMX: tdpbf16ps on 16 x 16 fp32 tiles, a 32 x 32 block of C (tiles 0-3) from two A
// tiles (16 rows x 32 bf16 along K) and two B tiles (16 pairs along K x 16 columns), as Intel's
// Optimization Reference Manual (ch. 20, "Intel AMX") lays them out.
constexpr int kAmxKc = 512;  // depth block, a multiple of 32 (one tile's depth)
constexpr int kAmxMc = 256;  // rows a packed A block covers, a multiple of 32
constexpr int kAmxNc = 512;  // columns a packed B panel covers, a multiple of 32

inline int roundUp32(int x) { return (x + 31) / 32 * 32; }

// AMX-BF16 and AMX-TILE (CPUID.7.0:EDX bits 22 and 24), and the operating system's leave to use
// the tiles' 8 KiB state (Linux's arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA), asked once.
bool amxUsable() {
  static const bool usable = [] {
#ifdef __linux__
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!((d >> 22) & 1u) || !((d >> 24) & 1u)) return false;
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

std::atomic<bool>& amxAllowed() {
  static std::atomic<bool> allowed{true};
  return allowed;
}

// A's rows [i0, i0 + mc) and depth [k0, k0 + kc) as bf16, row-major, kcPad apart; mcPad rows;
// zero past mc and kc. Compiled for AVX-512 (only the AMX path calls it) so the rows vectorise.
PARALAB_PACK_TARGET void packARows(const float* A, int lda, bool trans, int i0, int mc, int mcPad,
                                   int k0, int kc, int kcPad, uint16_t* out) {
  for (int r = 0; r < mcPad; ++r) {
    uint16_t* row = out + size_t(r) * kcPad;
    int k = 0;
    if (r < mc) {
      if (!trans) {
        const float* src = A + size_t(i0 + r) * lda + k0;
        for (; k < kc; ++k) row[k] = uint16_t(bf16Bits(src[k]));
      } else {
        for (; k < kc; ++k) row[k] = uint16_t(bf16Bits(A[size_t(k0 + k) * lda + i0 + r]));
      }
    }
    for (; k < kcPad; ++k) row[k] = 0;
  }
}

// B's depth [k0, k0 + kc) and columns [j0, j0 + nc) as strips of 32 columns, each kcPad / 2
// rows of 32 words (b(2p, j), b(2p + 1, j)); zero past nc and kc.
PARALAB_PACK_TARGET void packBPairs(const float* B, int ldb, bool trans, int k0, int kc, int kcPad,
                                    int j0, int nc, uint32_t* out) {
  for (int s = 0; s < nc; s += 32) {
    const int cols = std::min(32, nc - s);
    for (int p = 0; p < kcPad / 2; ++p, out += 32) {
      const int k = 2 * p;
      int c = 0;
      if (!trans && k + 1 < kc) {
        const float* r0 = B + size_t(k0 + k) * ldb + j0 + s;
        const float* r1 = r0 + ldb;
        for (; c < cols; ++c) out[c] = bf16Bits(r0[c]) | bf16Bits(r1[c]) << 16;
      } else if (k < kc) {
        for (; c < cols; ++c) {
          const uint32_t hi = k + 1 < kc ? bf16Bits(at(B, ldb, trans, k0 + k + 1, j0 + s + c)) : 0;
          out[c] = bf16Bits(at(B, ldb, trans, k0 + k, j0 + s + c)) | hi << 16;
        }
      }
      for (; c < 32; ++c) out[c] = 0;
    }
  }
}

// acc (32 x 32, row-major) = the product of A's 32 rows (kcPad apart) and B's 32-column strip.
PARALAB_AMX_TARGET void amxBlock(int kcPad, const uint16_t* a, const uint32_t* b, float* acc) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int k = 0; k < kcPad; k += 32) {
    _tile_loadd(4, a + k, kcPad * 2);
    _tile_loadd(5, a + size_t(16) * kcPad + k, kcPad * 2);
    _tile_loadd(6, b + size_t(k / 2) * 32, 128);
    _tile_loadd(7, b + size_t(k / 2) * 32 + 16, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, acc, 128);
  _tile_stored(1, acc + 16, 128);
  _tile_stored(2, acc + 16 * 32, 128);
  _tile_stored(3, acc + 16 * 32 + 16, 128);
}

// Palette 1, all eight tiles 16 rows of 64 bytes; released when the GEMM ends.
struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t colBytes[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
PARALAB_AMX_TARGET void tilesOn() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}
PARALAB_AMX_TARGET void tilesOff() { _tile_release(); }

void gemmAmx(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
  thread_local std::vector<uint16_t> packedA;
  thread_local std::vector<uint32_t> packedB;
  thread_local std::vector<float> tile;
  packedA.resize(size_t(kAmxMc) * kAmxKc);
  packedB.resize(size_t(kAmxNc) * kAmxKc / 2);
  tile.resize(32 * 32);
  tilesOn();
  for (int j0 = 0; j0 < N; j0 += kAmxNc) {
    const int nc = std::min(kAmxNc, N - j0);
    for (int k0 = 0; k0 < K; k0 += kAmxKc) {
      const int kc = std::min(kAmxKc, K - k0), kcPad = roundUp32(kc);
      const float b = k0 == 0 ? beta : 1.f;  // beta applies once, on the first depth block
      packBPairs(B, ldb, transB, k0, kc, kcPad, j0, nc, packedB.data());
      for (int i0 = 0; i0 < M; i0 += kAmxMc) {
        const int mc = std::min(kAmxMc, M - i0);
        packARows(A, lda, transA, i0, mc, roundUp32(mc), k0, kc, kcPad, packedA.data());
        for (int s = 0; s < nc; s += 32)
          for (int t = 0; t < mc; t += 32) {
            amxBlock(kcPad, packedA.data() + size_t(t) * kcPad,
                     packedB.data() + size_t(s) * (kcPad / 2), tile.data());
            writeTile(tile.data(), std::min(32, mc - t), std::min(32, nc - s), alpha, b,
                      C + size_t(i0 + t) * ldc + j0 + s, ldc);
          }
      }
    }
  }
  tilesOff();
}
#endif
}  // namespace

const char* gemm_bf16_isa() {
#if PARALAB_VEC_X86
  if (simdLevel() == SimdLevel::Avx512) {
    if (amxAllowed().load(std::memory_order_relaxed) && amxUsable()) return "amx";
    if (cpuHasAvx512Bf16()) return "avx512_bf16";
  }
#endif
  return "scalar";
}

bool gemm_bf16_available() { return std::strcmp(gemm_bf16_isa(), "scalar") != 0; }

void gemm_bf16_allow_amx(bool allow) {
#if PARALAB_VEC_X86
  amxAllowed().store(allow);
#else
  (void)allow;
#endif
}

bool gemm_bf16_for_training() {
  static const bool off = [] {
    const char* v = std::getenv("PARALAB_BF16_GEMM");
    return v && std::strcmp(v, "off") == 0;
  }();
  return !off && std::strcmp(gemm_bf16_isa(), "amx") == 0;
}

void gemm_bf16_rows(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  // Pieces of whole 32-row AMX blocks, each at least ~2^20 multiply-adds (the packing of B,
  // which every piece repeats, is then small beside its products).
  const long work = std::max(1L, long(N) * std::max(K, 1));
  const long minRows = std::max(32L, (1L << 20) / work);
  parallel_for(M, 32, minRows, [&](long i0, long i1) {
    const float* a = transA ? A + i0 : A + size_t(i0) * lda;  // op(A)'s rows i0..i1
    gemm_bf16(transA, transB, int(i1 - i0), N, K, alpha, a, lda, B, ldb, beta, C + size_t(i0) * ldc,
              ldc);
  });
}

void gemm_bf16(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const char* isa = gemm_bf16_isa();
  if (!std::strcmp(isa, "scalar")) {
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
  if (!std::strcmp(isa, "amx")) {
    gemmAmx(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
