// Causal multi-head self-attention of a GPT (decoder-only transformer) on the CPU, over the
// packed QKV activations GPT-2 uses. Stateless, float and double (the gradient checks run in
// double). See tests/kernels/tst_attention_gradcheck.cpp.
#pragma once

#include "cpu/gemm.h"  // GemmFn

namespace paralab::kernels {

// Shapes. B sequences of T tokens, model width C, NH heads of size hs = C / NH (C % NH == 0).
//   qkv  [B*T, 3C]       per token: q (C), k (C), v (C); head h uses columns h*hs .. h*hs+hs-1
//                        of each of the three (the output of the c_attn Linear layer).
//   att  [B, NH, T, T]   softmax probabilities P; row t holds P[t, 0..t], entries t2 > t are 0.
//   out  [B*T, C]        the heads' outputs side by side (head h in columns h*hs ..).
//
// Per sequence and head (Vaswani et al. 2017, "Attention is all you need"; the causal mask is
// GPT's, Radford et al. 2018):
//   S = q k^T / sqrt(hs)              [T, T] scores; a token attends to itself and the past:
//   P = softmax_row(S + M)            M[t, t2] = -inf for t2 > t, so P[t, t2 > t] = 0
//   O = P v                           [T, hs]
// Forward FLOPs: the loops visit only the causal half (t2 <= t), T(T+1)/2 score entries per
// head. Scores 2 hs per entry, weighted sum 2 hs per entry: 2 B NH hs T(T+1) = 2 B C T(T+1)
// in all (the full T x T square would be about twice that). The softmax adds O(B NH T^2).
// float's GEMMs multiply T (T + R) / 2 entries, R = kAttentionRowBlock (cpu/attention_gemm.h).

// Writes att from qkv: the scores and the masked, numerically stable softmax (the row maximum
// subtracted before exp). The forward pass calls it; selective activation recomputation calls
// it again before the backward pass instead of keeping att.
template <typename Real>
void attention_probs(Real* att, const Real* qkv, int B, int T, int C, int NH,
                     GemmFn gemm = nullptr);

// Writes out [B*T, C] and att [B, NH, T, T] (att through attention_probs).
template <typename Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH,
                       GemmFn gemm = nullptr);

// Writes dqkv [B*T, 3C] (=, not +=) from dout [B*T, C], qkv and the forward's att.
// scratch: T elements of Real (one row of dP, then dS), overwritten; no allocation inside.
// Per sequence and head, with dO = dout:
//   dv = P^T dO                      dP = dO v^T
//   dS = P ⊙ (dP - rowsum(P ⊙ dP))   (the softmax Jacobian; masked entries have P = 0)
//   dq = dS k / sqrt(hs)             dk = dS^T q / sqrt(hs)
// About twice the forward's FLOPs: 4 B C T(T+1) (dP, dv, dq, dk over the causal half).
template <typename Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH, GemmFn gemm = nullptr);

// float: per head, the products are GEMMs through `gemm` (a rung of cpu/gemm.h; null: the vendor
// BLAS) over the causal blocks on and below the diagonal only, the softmax and its backward the
// dispatched row kernels (cpu/attention_gemm.h, cpu/dispatch.h); scratch is then unused. The
// double ones, and these, are the scalar loops every level is tested against
// (tests/kernels/tst_simd_levels.cpp); double ignores `gemm` (the gradient checks' arithmetic).
namespace reference {
template <typename Real>
void attention_probs(Real* att, const Real* qkv, int B, int T, int C, int NH);
template <typename Real>
void attention_forward(Real* out, Real* att, const Real* qkv, int B, int T, int C, int NH);
template <typename Real>
void attention_backward(Real* dqkv, Real* scratch, const Real* dout, const Real* qkv,
                        const Real* att, int B, int T, int C, int NH);
}  // namespace reference

}  // namespace paralab::kernels
