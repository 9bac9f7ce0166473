// Causal multi-head attention one K/V block at a time on the CPU (see attention_blocks.h for the
// shapes and the recurrence). The scalar loops over (sequence, head, query, key), visible keys
// only, are the reference; float runs the dispatched vector kernels (cpu/dispatch.h).
// See tests/kernels/tst_attention_blocks.cpp.
#include "cpu/attention_blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

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

// The vector kernels' scratch, kept per thread between calls.
float* blockWork(size_t floats) {
  thread_local std::vector<float> work;
  if (work.size() < floats) work.resize(floats);
  return work.data();
}
inline size_t padded(int T) { return size_t(T + 15) / 16 * 16; }

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

template <typename Real>
long attention_block_forward(Real* o, Real* m, Real* l, Real* scratch, const Real* q, int ldq,
                             const Real* k, const Real* v, int ldkv, int B, int NH, int hs, int q0,
                             int Tq, int k0, int Tk) {
  if constexpr (std::is_same_v<Real, float>) {
    if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
    float* work = blockWork((hs + 1) * padded(Tk) + hs);
    vec().attentionBlockForward(o, m, l, q, ldq, k, v, ldkv, B, NH, hs, q0, Tq, k0, Tk, work);
    return attention_block_pairs(q0, Tq, k0, Tk);
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
    if (Tq <= 0 || Tk <= 0 || future(q0, Tq, k0)) return 0;
    float* work = blockWork(2 * (hs + size_t(Tq)) * padded(Tk) + hs);
    vec().attentionBlockBackward(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B, NH, hs, q0, Tq,
                                 k0, Tk, work);
    return attention_block_pairs(q0, Tq, k0, Tk);
  } else {
    return reference::attention_block_backward(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B,
                                               NH, hs, q0, Tq, k0, Tk);
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
