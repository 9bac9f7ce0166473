// Causal multi-head self-attention on the CPU (see attention.h for the shapes and formulas).
// The scalar loops over (sequence, head, query token, key token), causal half only, are the
// reference; float runs GEMMs over the causal blocks and the dispatched row kernels
// (cpu/attention_gemm.h). See tests/kernels/tst_attention_gradcheck.cpp, tst_attention_gemm.cpp.
#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/attention_gemm.h"
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

// The GEMM kernels of cpu/attention_gemm.h, float only. Head h of sequence b: Q, K, V are rows
// 3C apart from qkv + qOffset(b*T, ...) (+C, +2C), P the [T, T] block of att, dO rows C apart.
void probsGemm(float* att, const float* qkv, int B, int T, int C, int NH, GemmFn gemm) {
  const int hs = C / NH, R = kAttentionRowBlock;
  const float scale = float(1.0 / std::sqrt(double(hs)));
  const int ld = 3 * C;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const float* Q = qkv + qOffset((long)b * T, C, h, hs);
      float* P = att + attOffset(b, h, 0, T, NH);
      for (int i0 = 0; i0 < T; i0 += R) {
        const int rows = std::min(R, T - i0), n = i0 + rows;  // keys 0 .. n-1: on or below
        gemm(false, true, rows, n, hs, scale, Q + (long)i0 * ld, ld, Q + C, ld, 0.f,
             P + (long)i0 * T, T);
        vec().causalSoftmaxRows(P + (long)i0 * T, T, rows, i0 + 1, T);  // row t sees t + 1
      }
    }
}

void outputGemm(float* out, const float* att, const float* qkv, int B, int T, int C, int NH,
                GemmFn gemm) {
  const int hs = C / NH, R = kAttentionRowBlock;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const float* V = qkv + vOffset((long)b * T, C, h, hs);
      const float* P = att + attOffset(b, h, 0, T, NH);
      float* O = out + (long)b * T * C + (long)h * hs;
      for (int i0 = 0; i0 < T; i0 += R) {
        const int rows = std::min(R, T - i0), n = i0 + rows;
        gemm(false, false, rows, hs, n, 1.f, P + (long)i0 * T, T, V, 3 * C, 0.f, O + (long)i0 * C,
             C);
      }
    }
}

void backwardGemm(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                  int C, int NH, GemmFn gemm) {
  const int hs = C / NH, R = kAttentionRowBlock, ld = 3 * C;
  const float scale = float(1.0 / std::sqrt(double(hs)));
  float* dS = attentionWork(0, size_t(T) * T);  // [T, T]: dP, then dS; 0 above the diagonal
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const long q = qOffset((long)b * T, C, h, hs);
      const float *Q = qkv + q, *K = Q + C, *V = Q + 2 * C;
      float *dQ = dqkv + q, *dK = dQ + C, *dV = dQ + 2 * C;
      const float* P = att + attOffset(b, h, 0, T, NH);
      const float* dO = dout + (long)b * T * C + (long)h * hs;
      for (int i0 = 0; i0 < T; i0 += R) {  // query blocks: dP, dS, dQ
        const int rows = std::min(R, T - i0), n = i0 + rows;
        float* dSi = dS + (long)i0 * T;
        gemm(false, true, rows, n, hs, 1.f, dO + (long)i0 * C, C, V, ld, 0.f, dSi, T);
        vec().causalSoftmaxBackwardRows(dSi, T, P + (long)i0 * T, T, rows, i0 + 1, T, scale);
        gemm(false, false, rows, hs, n, 1.f, dSi, T, K, ld, 0.f, dQ + (long)i0 * ld, ld);
      }
      for (int j0 = 0; j0 < T; j0 += R) {  // key blocks: the queries j0 .. T-1 see them
        const int cols = std::min(R, T - j0), m = T - j0;
        gemm(true, false, cols, hs, m, 1.f, dS + (long)j0 * T + j0, T, Q + (long)j0 * ld, ld, 0.f,
             dK + (long)j0 * ld, ld);
        gemm(true, false, cols, hs, m, 1.f, P + (long)j0 * T + j0, T, dO + (long)j0 * C, C, 0.f,
             dV + (long)j0 * ld, ld);
      }
    }
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

float* attentionWork(int slot, size_t floats) {
  thread_local std::vector<float> work[2];
  if (work[slot].size() < floats) work[slot].resize(floats);
  return work[slot].data();
}

template <typename Real>
void attention_probs(Real* att, const Real* qkv, int B, int T, int C, int NH, GemmFn gemm) {
  if constexpr (std::is_same_v<Real, float>)
    probsGemm(att, qkv, B, T, C, NH, attentionGemm(gemm));
  else
    reference::attention_probs(att, qkv, B, T, C, NH);
}

template <typename Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH,
                       GemmFn gemm) {
  if constexpr (std::is_same_v<Real, float>) {
    probsGemm(att, qkv, B, T, C, NH, attentionGemm(gemm));
    outputGemm(out, att, qkv, B, T, C, NH, attentionGemm(gemm));
  } else {
    reference::attention_forward(out, att, qkv, B, T, C, NH);
  }
}

template <typename Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH, GemmFn gemm) {
  if constexpr (std::is_same_v<Real, float>)
    backwardGemm(dqkv, dout, qkv, att, B, T, C, NH, attentionGemm(gemm));
  else
    reference::attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH);
}

#define PARALAB_ATTENTION_KERNELS(Real, ...)                                                       \
  template void attention_probs<Real>(Real*, const Real*, int, int, int,                           \
                                      int __VA_OPT__(, ) __VA_ARGS__);                             \
  template void attention_forward<Real>(Real*, Real*, const Real*, int, int, int,                  \
                                        int __VA_OPT__(, ) __VA_ARGS__);                           \
  template void attention_backward<Real>(Real*, Real*, const Real*, const Real*, const Real*, int, \
                                         int, int, int __VA_OPT__(, ) __VA_ARGS__);
PARALAB_ATTENTION_KERNELS(float, GemmFn)
PARALAB_ATTENTION_KERNELS(double, GemmFn)
namespace reference {
PARALAB_ATTENTION_KERNELS(float)
PARALAB_ATTENTION_KERNELS(double)
}  // namespace reference
#undef PARALAB_ATTENTION_KERNELS

}  // namespace paralab::kernels
