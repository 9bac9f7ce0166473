// Causal multi-head attention one K/V block at a time on the CPU (see attention_blocks.h for the
// shapes and the recurrence). The scalar loops over (sequence, head, query, key), visible keys
// only, are the reference; float runs GEMMs over the blocks the mask leaves and the dispatched
// row kernels (cpu/attention_gemm.h). See tests/kernels/tst_attention_blocks.cpp.
#include "cpu/attention_blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/attention_gemm.h"
#include "cpu/dispatch.h"

namespace paralab::kernels {

namespace {

// Query i of the chunk sees the block's keys 0 .. visible(i)-1: key j is position k0 + j and
// is visible while k0 + j <= q0 + i. Clamped to [0, Tk].
inline int visible(int i, int q0, int k0, int Tk) { return std::clamp(q0 + i - k0 + 1, 0, Tk); }

// A block wholly in the chunk's future: its first key comes after the chunk's last query.
inline bool future(int q0, int Tq, int k0) { return k0 > q0 + Tq - 1; }

// Row (b, i) of a [B, rows, ld] array, head h.
inline long rowOffset(int b, int i, int rows, int ld, int h, int hs) {
  return ((long)b * rows + i) * ld + (long)h * hs;
}

// Entry (b, h, i) of a [B, NH, Tq] array.
inline long stateOffset(int b, int h, int i, int NH, int Tq) { return ((long)b * NH + h) * Tq + i; }

// The keys of the block that query rows i0 .. i0+rows-1 of the chunk see between them.
inline int visibleBlock(int i0, int rows, int q0, int k0, int Tk) {
  return visible(i0 + rows - 1, q0, k0, Tk);
}

}  // namespace

long attention_block_pairs(int q0, int Tq, int k0, int Tk) {
  long n = 0;
  for (int i = 0; i < Tq; ++i) n += visible(i, q0, k0, Tk);
  return n;
}

template <typename Real>
void attention_blocks_init(Real* o, Real* m, Real* l, int B, int Tq, int NH, int hs) {
  const long rows = (long)B * NH * Tq;
  std::fill(o, o + rows * hs, Real(0));
  std::fill(m, m + rows, -std::numeric_limits<Real>::infinity());
  std::fill(l, l + rows, Real(0));
}

namespace reference {

template <typename Real>
long attention_block_forward(Real* o, Real* m, Real* l, Real* scratch, const Real* q, int ldq,
                             const Real* k, const Real* v, int ldkv, int B, int NH, int hs, int q0,
                             int Tq, int k0, int Tk) {
  if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
  const int C = NH * hs;
  const Real scale = Real(1.0 / std::sqrt(double(hs)));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const int keys = visible(i, q0, k0, Tk);
        if (keys == 0) continue;  // the whole block is after this query: nothing to fold in
        const Real* qi = q + rowOffset(b, i, Tq, ldq, h, hs);
        Real* s = scratch;  // the scores of this query against the visible keys, then exp
        Real sMax = -std::numeric_limits<Real>::infinity();
        for (int j = 0; j < keys; ++j) {
          const Real* kj = k + rowOffset(b, j, Tk, ldkv, h, hs);
          Real dot = 0;
          for (int c = 0; c < hs; ++c) dot += qi[c] * kj[c];
          s[j] = dot * scale;
          sMax = std::max(sMax, s[j]);
        }
        // The online softmax step. m = -inf before the first visible key: alpha = exp(-inf) = 0
        // and l = o = 0 anyway. sMax is finite (keys >= 1), so mNew is too and no inf - inf.
        const long st = stateOffset(b, h, i, NH, Tq);
        const Real mNew = std::max(m[st], sMax);
        const Real alpha = std::exp(m[st] - mNew);
        Real* oi = o + ((long)b * Tq + i) * C + (long)h * hs;
        for (int c = 0; c < hs; ++c) oi[c] *= alpha;
        Real sum = 0;
        for (int j = 0; j < keys; ++j) {
          const Real p = std::exp(s[j] - mNew);
          sum += p;
          const Real* vj = v + rowOffset(b, j, Tk, ldkv, h, hs);
          for (int c = 0; c < hs; ++c) oi[c] += p * vj[c];
        }
        l[st] = alpha * l[st] + sum;
        m[st] = mNew;
      }
  return attention_block_pairs(q0, Tq, k0, Tk);
}

}  // namespace reference

long attention_block_forward_gemm(float* o, float* m, float* l, const float* q, int ldq,
                                  const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                  int q0, int Tq, int k0, int Tk, GemmFn gemm) {
  if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
  const int C = NH * hs, R = kAttentionRowBlock;
  const float scale = float(1.0 / std::sqrt(double(hs)));
  float* S = attentionWork(0, size_t(R) * Tk);  // one query block's scores, then exp
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const float* Q = q + rowOffset(b, 0, Tq, ldq, h, hs);
      const float* K = k + rowOffset(b, 0, Tk, ldkv, h, hs);
      const float* V = v + rowOffset(b, 0, Tk, ldkv, h, hs);
      float* O = o + (long)b * Tq * C + (long)h * hs;
      const long st = stateOffset(b, h, 0, NH, Tq);
      for (int i0 = 0; i0 < Tq; i0 += R) {
        const int rows = std::min(R, Tq - i0), n = visibleBlock(i0, rows, q0, k0, Tk);
        if (n == 0) continue;  // these queries come before the whole block
        gemm(false, true, rows, n, hs, scale, Q + (long)i0 * ldq, ldq, K, ldkv, 0.f, S, n);
        vec().onlineSoftmaxRows(S, n, m + st + i0, l + st + i0, O + (long)i0 * C, C, hs, rows,
                                q0 + i0 - k0 + 1, n);
        gemm(false, false, rows, hs, n, 1.f, S, n, V, ldkv, 1.f, O + (long)i0 * C, C);
      }
    }
  return attention_block_pairs(q0, Tq, k0, Tk);
}

long attention_block_backward_gemm(float* dq, float* dk, float* dv, const float* dout,
                                   const float* lse, const float* D, const float* q, int ldq,
                                   const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                   int q0, int Tq, int k0, int Tk, GemmFn gemm) {
  if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
  const int C = NH * hs, R = kAttentionRowBlock;
  const float scale = float(1.0 / std::sqrt(double(hs)));
  // P and dS [Tq, Tk], recomputed per head; 0 where masked, so the key blocks' GEMMs can read
  // whole columns.
  float* P = attentionWork(0, size_t(Tq) * Tk);
  float* dS = attentionWork(1, size_t(Tq) * Tk);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const long qo = rowOffset(b, 0, Tq, ldq, h, hs), kv = rowOffset(b, 0, Tk, ldkv, h, hs);
      const float* dO = dout + (long)b * Tq * C + (long)h * hs;
      const long st = stateOffset(b, h, 0, NH, Tq);
      for (int i0 = 0; i0 < Tq; i0 += R) {  // query blocks: S, dP, then dS and dQ
        const int rows = std::min(R, Tq - i0), n = visibleBlock(i0, rows, q0, k0, Tk);
        if (n == 0) continue;  // rows no key block below reads (they see none of the block)
        float *Pi = P + (long)i0 * Tk, *dSi = dS + (long)i0 * Tk;
        gemm(false, true, rows, n, hs, scale, q + qo + (long)i0 * ldq, ldq, k + kv, ldkv, 0.f, Pi,
             Tk);
        gemm(false, true, rows, n, hs, 1.f, dO + (long)i0 * C, C, v + kv, ldkv, 0.f, dSi, Tk);
        vec().blockGradRows(Pi, Tk, dSi, Tk, lse + st + i0, D + st + i0, rows, q0 + i0 - k0 + 1, Tk,
                            scale);
        gemm(false, false, rows, hs, n, 1.f, dSi, Tk, k + kv, ldkv, 1.f, dq + qo + (long)i0 * ldq,
             ldq);
      }
      for (int j0 = 0; j0 < Tk; j0 += R) {  // key blocks: seen by the queries from i1 on
        const int cols = std::min(R, Tk - j0), i1 = std::max(0, k0 + j0 - q0);
        if (i1 >= Tq) break;
        const int rows = Tq - i1;
        gemm(true, false, cols, hs, rows, 1.f, dS + (long)i1 * Tk + j0, Tk, q + qo + (long)i1 * ldq,
             ldq, 1.f, dk + kv + (long)j0 * ldkv, ldkv);
        gemm(true, false, cols, hs, rows, 1.f, P + (long)i1 * Tk + j0, Tk, dO + (long)i1 * C, C,
             1.f, dv + kv + (long)j0 * ldkv, ldkv);
      }
    }
  return attention_block_pairs(q0, Tq, k0, Tk);
}

template <typename Real>
long attention_block_forward(Real* o, Real* m, Real* l, Real* scratch, const Real* q, int ldq,
                             const Real* k, const Real* v, int ldkv, int B, int NH, int hs, int q0,
                             int Tq, int k0, int Tk) {
  if constexpr (std::is_same_v<Real, float>) {
    return attention_block_forward_gemm(o, m, l, q, ldq, k, v, ldkv, B, NH, hs, q0, Tq, k0, Tk,
                                        gemm_vendor<float>);
  } else {
    return reference::attention_block_forward(o, m, l, scratch, q, ldq, k, v, ldkv, B, NH, hs, q0,
                                              Tq, k0, Tk);
  }
}

template <typename Real>
void attention_blocks_finish(Real* out, Real* lse, const Real* o, const Real* m, const Real* l,
                             int B, int Tq, int NH, int hs) {
  const int C = NH * hs;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const long st = stateOffset(b, h, i, NH, Tq);
        const long at = ((long)b * Tq + i) * C + (long)h * hs;
        const Real inv = Real(1) / l[st];
        for (int c = 0; c < hs; ++c) out[at + c] = o[at + c] * inv;
        if (lse) lse[st] = m[st] + std::log(l[st]);
      }
}

template <typename Real>
void attention_blocks_delta(Real* D, const Real* out, const Real* dout, int B, int Tq, int NH,
                            int hs) {
  const int C = NH * hs;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const long at = ((long)b * Tq + i) * C + (long)h * hs;
        Real s = 0;
        for (int c = 0; c < hs; ++c) s += dout[at + c] * out[at + c];
        D[stateOffset(b, h, i, NH, Tq)] = s;
      }
}

namespace reference {

template <typename Real>
long attention_block_backward(Real* dq, Real* dk, Real* dv, const Real* dout, const Real* lse,
                              const Real* D, const Real* q, int ldq, const Real* k, const Real* v,
                              int ldkv, int B, int NH, int hs, int q0, int Tq, int k0, int Tk) {
  if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
  const int C = NH * hs;
  const Real scale = Real(1.0 / std::sqrt(double(hs)));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const int keys = visible(i, q0, k0, Tk);
        if (keys == 0) continue;
        const long st = stateOffset(b, h, i, NH, Tq);
        const Real lseI = lse[st], dI = D[st];
        const Real* qi = q + rowOffset(b, i, Tq, ldq, h, hs);
        Real* dqi = dq + rowOffset(b, i, Tq, ldq, h, hs);
        const Real* dO = dout + ((long)b * Tq + i) * C + (long)h * hs;
        for (int j = 0; j < keys; ++j) {
          const long kv = rowOffset(b, j, Tk, ldkv, h, hs);
          const Real *kj = k + kv, *vj = v + kv;
          Real *dkj = dk + kv, *dvj = dv + kv;
          // The score again, and P from the saved lse: the forward's probabilities, unstored.
          Real dot = 0, dp = 0;
          for (int c = 0; c < hs; ++c) {
            dot += qi[c] * kj[c];
            dp += dO[c] * vj[c];
          }
          const Real p = std::exp(dot * scale - lseI);
          const Real ds = p * (dp - dI) * scale;  // dS, times the score's 1/sqrt(hs)
          for (int c = 0; c < hs; ++c) {
            dvj[c] += p * dO[c];
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
          }
        }
      }
  return attention_block_pairs(q0, Tq, k0, Tk);
}

}  // namespace reference

template <typename Real>
long attention_block_backward(Real* dq, Real* dk, Real* dv, const Real* dout, const Real* lse,
                              const Real* D, const Real* q, int ldq, const Real* k, const Real* v,
                              int ldkv, int B, int NH, int hs, int q0, int Tq, int k0, int Tk) {
  if constexpr (std::is_same_v<Real, float>) {
    return attention_block_backward_gemm(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B, NH, hs,
                                         q0, Tq, k0, Tk, gemm_vendor<float>);
  } else {
    return reference::attention_block_backward(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B, NH,
                                               hs, q0, Tq, k0, Tk);
  }
}

#define PARALAB_ATTENTION_BLOCK_KERNELS(Real)                                                      \
  template void attention_blocks_init<Real>(Real*, Real*, Real*, int, int, int, int);              \
  template long attention_block_forward<Real>(Real*, Real*, Real*, Real*, const Real*, int,        \
                                              const Real*, const Real*, int, int, int, int, int,   \
                                              int, int, int);                                      \
  template void attention_blocks_finish<Real>(Real*, Real*, const Real*, const Real*, const Real*, \
                                              int, int, int, int);                                 \
  template void attention_blocks_delta<Real>(Real*, const Real*, const Real*, int, int, int, int); \
  template long attention_block_backward<Real>(                                                    \
      Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, int, const Real*,   \
      const Real*, int, int, int, int, int, int, int, int);
PARALAB_ATTENTION_BLOCK_KERNELS(float)
PARALAB_ATTENTION_BLOCK_KERNELS(double)
namespace reference {
#define PARALAB_REFERENCE_BLOCK_KERNELS(Real)                                                    \
  template long attention_block_forward<Real>(Real*, Real*, Real*, Real*, const Real*, int,      \
                                              const Real*, const Real*, int, int, int, int, int, \
                                              int, int, int);                                    \
  template long attention_block_backward<Real>(                                                  \
      Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, int, const Real*, \
      const Real*, int, int, int, int, int, int, int, int);
PARALAB_REFERENCE_BLOCK_KERNELS(float)
PARALAB_REFERENCE_BLOCK_KERNELS(double)
#undef PARALAB_REFERENCE_BLOCK_KERNELS
}  // namespace reference
#undef PARALAB_ATTENTION_BLOCK_KERNELS

}  // namespace paralab::kernels
