// Causal multi-head self-attention on the CPU (see attention.h for the shapes and formulas).
// The scalar loops over (sequence, head, query token, key token), causal half only, are the
// reference; float runs the dispatched vector kernels (cpu/vec_kernels.inc, cpu/dispatch.h).
// See tests/kernels/tst_attention_gradcheck.cpp.
#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/moe.h"  // softmax_rows, softmax_rows_backward

namespace paralab::kernels {

namespace {

// Offsets into qkv [B*T, 3C] for token row r (= b*T + t) and head h: q, then k (+C), v (+2C).
inline long qOffset(long r, int C, int h, int hs) { return r * 3 * C + (long)h * hs; }
inline long kOffset(long r, int C, int h, int hs) { return qOffset(r, C, h, hs) + C; }
inline long vOffset(long r, int C, int h, int hs) { return qOffset(r, C, h, hs) + 2 * C; }

// Row t of the [T, T] probabilities of sequence b, head h.
inline long attOffset(int b, int h, int t, int T, int NH) {
  return (((long)b * NH + h) * T + t) * T;
}

// The vector kernels' scratch: (hs + T) * Tp floats, Tp = T rounded up to 16 (dispatch.h),
// kept per thread between calls.
float* vecWork(int T, int C, int NH) {
  thread_local std::vector<float> work;
  const size_t need = size_t(C / NH + T) * size_t((T + 15) / 16 * 16);
  if (work.size() < need) work.resize(need);
  return work.data();
}

}  // namespace

namespace reference {

template <typename Real>
void attention_probs(Real* att, const Real* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const Real scale = Real(1.0 / std::sqrt(double(hs)));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const Real* q = qkv + qOffset((long)b * T + t, C, h, hs);
        Real* p = att + attOffset(b, h, t, T, NH);
        // Scores S[t, t2] = q_t . k_t2 / sqrt(hs) for the visible keys t2 <= t only.
        for (int t2 = 0; t2 <= t; ++t2) {
          const Real* k = qkv + kOffset((long)b * T + t2, C, h, hs);
          Real s = 0;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          p[t2] = s * scale;
        }
        // The mask: softmax over the t + 1 visible entries (row max subtracted inside), and the
        // future gets probability 0, exactly as exp(-inf) would give.
        softmax_rows(p, p, 1, t + 1);
        std::fill(p + t + 1, p + T, Real(0));
      }
}

template <typename Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH) {
  attention_probs(att, qkv, B, T, C, NH);
  const int hs = C / NH;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const Real* p = att + attOffset(b, h, t, T, NH);
        Real* o = out + ((long)b * T + t) * C + (long)h * hs;
        // O[t] = sum_{t2 <= t} P[t, t2] v_t2
        std::fill(o, o + hs, Real(0));
        for (int t2 = 0; t2 <= t; ++t2) {
          const Real* v = qkv + vOffset((long)b * T + t2, C, h, hs);
          for (int i = 0; i < hs; ++i) o[i] += p[t2] * v[i];
        }
      }
}

template <typename Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const Real scale = Real(1.0 / std::sqrt(double(hs)));
  // dk and dv of a key token collect from every later query token: zero, then accumulate.
  std::fill(dqkv, dqkv + (long)B * T * 3 * C, Real(0));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const long r = (long)b * T + t;
        const Real* p = att + attOffset(b, h, t, T, NH);
        const Real* dO = dout + r * C + (long)h * hs;
        Real* dp = scratch;  // dP[t, 0..t], then dS[t, 0..t] in place
        // Through O[t] = sum P[t, t2] v_t2: dP[t, t2] = dO_t . v_t2 and dv_t2 += P[t, t2] dO_t.
        for (int t2 = 0; t2 <= t; ++t2) {
          const long r2 = (long)b * T + t2;
          const Real* v = qkv + vOffset(r2, C, h, hs);
          Real* dv = dqkv + vOffset(r2, C, h, hs);
          Real s = 0;
          for (int i = 0; i < hs; ++i) {
            s += dO[i] * v[i];
            dv[i] += p[t2] * dO[i];
          }
          dp[t2] = s;
        }
        // Through the softmax: dS = P ⊙ (dP - rowsum(P ⊙ dP)). The masked entries have P = 0,
        // so neither they nor the future keys receive any gradient.
        softmax_rows_backward(dp, p, dp, 1, t + 1);
        // Through S[t, t2] = q_t . k_t2 / sqrt(hs).
        const Real* q = qkv + qOffset(r, C, h, hs);
        Real* dq = dqkv + qOffset(r, C, h, hs);
        for (int t2 = 0; t2 <= t; ++t2) {
          const long r2 = (long)b * T + t2;
          const Real* k = qkv + kOffset(r2, C, h, hs);
          Real* dk = dqkv + kOffset(r2, C, h, hs);
          const Real ds = dp[t2] * scale;
          for (int i = 0; i < hs; ++i) {
            dq[i] += ds * k[i];
            dk[i] += ds * q[i];
          }
        }
      }
}

}  // namespace reference

template <typename Real>
void attention_probs(Real* att, const Real* qkv, int B, int T, int C, int NH) {
  if constexpr (std::is_same_v<Real, float>)
    vec().attentionProbs(att, qkv, B, T, C, NH, vecWork(T, C, NH));
  else
    reference::attention_probs(att, qkv, B, T, C, NH);
}

template <typename Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH) {
  if constexpr (std::is_same_v<Real, float>) {
    attention_probs(att, qkv, B, T, C, NH);
    vec().attentionOutput(out, att, qkv, B, T, C, NH);
  } else {
    reference::attention_forward(out, att, qkv, B, T, C, NH);
  }
}

template <typename Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH) {
  if constexpr (std::is_same_v<Real, float>)
    vec().attentionBackward(dqkv, dout, qkv, att, B, T, C, NH, vecWork(T, C, NH));
  else
    reference::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH);
}

#define PARALAB_ATTENTION_KERNELS(Real)                                                            \
  template void attention_probs<Real>(Real*, const Real*, int, int, int, int);                     \
  template void attention_forward<Real>(Real*, Real*, const Real*, int, int, int, int);            \
  template void attention_backward<Real>(Real*, Real*, const Real*, const Real*, const Real*, int, \
                                         int, int, int);
PARALAB_ATTENTION_KERNELS(float)
PARALAB_ATTENTION_KERNELS(double)
namespace reference {
PARALAB_ATTENTION_KERNELS(float)
PARALAB_ATTENTION_KERNELS(double)
}  // namespace reference
#undef PARALAB_ATTENTION_KERNELS

}  // namespace paralab::kernels
