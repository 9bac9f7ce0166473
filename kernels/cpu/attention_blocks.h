// Causal multi-head attention one K/V block at a time on the CPU: the online softmax of
// FlashAttention (Dao et al. 2022; the backward of FlashAttention-2, Dao 2023) with the causal
// mask taken by absolute positions, so that a rank holding a chunk of queries can fold in the
// K/V blocks of the other ranks as they arrive around a ring, in any order (ring attention,
// Liu et al. 2023, "Ring Attention with Blockwise Transformers for Near-Infinite Context").
// The same formulas as cpu/attention.h, evaluated block by block; the [T, T] probabilities are
// never stored, only the per-query log-sum-exp. Stateless, float and double.
// See tests/kernels/tst_attention_blocks.cpp (against cpu/attention.h and finite differences).
#pragma once

namespace paralab::kernels {

// cpu/gemm.h's GEMM signature (that header is C++20; this one is read by nvcc too).
using GemmFn = void (*)(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                        int lda, const float* B, int ldb, float beta, float* C, int ldc);

// Shapes. B sequences, NH heads of size hs, C = NH * hs. A query chunk holds the positions
// q0 .. q0+Tq-1 of every sequence, a K/V block the positions k0 .. k0+Tk-1 (positions count
// from 0 at the start of each sequence; the chunks may have any sizes and need not line up).
//   q     [B, Tq, ldq]    row (b, i) at q + (b*Tq + i)*ldq is position q0 + i of sequence b;
//                         head h in its columns h*hs .. h*hs+hs-1. So ldq = C for a plain
//                         [B*Tq, C] array, or ldq = 3C with q = qkv for a chunk of the packed
//                         qkv [B*Tq, 3C] of cpu/attention.h.
//   k, v  [B, Tk, ldkv]   the same for the block's keys and values (k = qkv + C, v = qkv + 2C,
//                         ldkv = 3C for a packed qkv block; ldkv = 2C for a packed k|v block).
//   o     [B*Tq, C]       the running, unnormalised output; then out [B*Tq, C] as attention's.
//   m, l  [B, NH, Tq]     per query and head: running max of the scores seen and the running
//                         sum of exp(score - m); lse and D have this layout too.
//
// Per sequence, head and query position t, over the visible keys t2 <= t of a block
// (S = q k^T / sqrt(hs), the rest masked):
//   m'  = max(m, max_t2 S[t, t2])       alpha = exp(m - m')   (rescales what was summed under m)
//   l'  = alpha l + sum_t2 exp(S[t, t2] - m')
//   o'  = alpha o + sum_t2 exp(S[t, t2] - m') v_t2
// Starting from m = -inf, l = 0, o = 0, after every block (in any order): m is the row max,
// l = sum_t2 exp(S[t, t2] - m) over all visible keys, so out = o / l = P v and
// lse = m + log(l) = log sum_t2 exp(S[t, t2]), exactly cpu/attention.h's softmax up to rounding.
// FLOPs: 4 hs per visible (query, key) pair and head, as attention_forward.

// Starts the accumulators: o = 0, m = -inf, l = 0.
template <typename Real>
void attention_blocks_init(Real* o, Real* m, Real* l, int B, int Tq, int NH, int hs);

// Folds one K/V block into the accumulators of the query chunk. scratch: Tk elements of Real
// (one row of scores), overwritten; no allocation inside. Keys after a query are masked; a
// block wholly in the future of the chunk (k0 > q0 + Tq - 1) returns at once, touching nothing.
// Returns the number of visible (query, key) position pairs it processed (per sequence and
// head): 0 exactly when the block was skipped.
template <typename Real>
long attention_block_forward(Real* o, Real* m, Real* l, Real* scratch, const Real* q, int ldq,
                             const Real* k, const Real* v, int ldkv, int B, int NH, int hs, int q0,
                             int Tq, int k0, int Tk);

// out = o / l, lse = m + log(l) (lse may be nullptr: not written). out == o and lse == m are
// allowed (in place). Every query must have seen at least one key (l > 0): true once the block
// holding its own position has been folded in.
template <typename Real>
void attention_blocks_finish(Real* out, Real* lse, const Real* o, const Real* m, const Real* l,
                             int B, int Tq, int NH, int hs);

// [SECTION] Backward (FlashAttention-2's): P is recomputed from the saved lse, never stored.
// Per sequence, head and query position t, over the visible keys t2 <= t of a block:
//   P[t, t2] = exp(S[t, t2] - lse_t)          dv_t2 += P[t, t2] dO_t
//   dP[t, t2] = dO_t . v_t2                   dS[t, t2] = P[t, t2] (dP[t, t2] - D_t)
//   dq_t += dS[t, t2] k_t2 / sqrt(hs)         dk_t2 += dS[t, t2] q_t / sqrt(hs)
// with D_t = dO_t . O_t (= sum_t2 P[t, t2] dP[t, t2], the softmax Jacobian's row sum, since
// O_t = sum_t2 P[t, t2] v_t2), computed once per query chunk. Summed over all blocks (any
// order) this is attention_backward's dqkv. FLOPs: 10 hs per visible pair and head (the
// backward's 8, and 2 to recompute the score). In a ring, dk and dv of a block travel with it
// and collect every rank's share; dq stays with its chunk.

// D [B, NH, Tq] from the final out [B*Tq, C] and dout [B*Tq, C] of the query chunk.
template <typename Real>
void attention_blocks_delta(Real* D, const Real* out, const Real* dout, int B, int Tq, int NH,
                            int hs);

// Adds (+=) the block's share of the gradient: dq [B, Tq, ldq] (the query chunk's, same layout
// and stride as q) and dk, dv [B, Tk, ldkv] (the block's, as k and v); the caller zeroes them
// once. dq and dk/dv may be columns of one dqkv array (the diagonal block): they never overlap.
// dout [B*Tq, C], lse and D [B, NH, Tq] are the query chunk's. A future block returns at
// once; the return value is the forward's (visible pairs per sequence and head).
template <typename Real>
long attention_block_backward(Real* dq, Real* dk, Real* dv, const Real* dout, const Real* lse,
                              const Real* D, const Real* q, int ldq, const Real* k, const Real* v,
                              int ldkv, int B, int NH, int hs, int q0, int Tq, int k0, int Tk);

// The float block kernels: the products are GEMMs through `gemm` (a rung of cpu/gemm.h) over the
// query rows that see the block and the keys those rows see, the softmax steps the dispatched
// row kernels (cpu/attention_gemm.h). The two above run these with the vendor BLAS in float
// (their scratch unused there).
long attention_block_forward_gemm(float* o, float* m, float* l, const float* q, int ldq,
                                  const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                  int q0, int Tq, int k0, int Tk, GemmFn gemm);
long attention_block_backward_gemm(float* dq, float* dk, float* dv, const float* dout,
                                   const float* lse, const float* D, const float* q, int ldq,
                                   const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                   int q0, int Tq, int k0, int Tk, GemmFn gemm);

// The scalar loops every level is tested against, and what double runs.
namespace reference {
template <typename Real>
long attention_block_forward(Real* o, Real* m, Real* l, Real* scratch, const Real* q, int ldq,
                             const Real* k, const Real* v, int ldkv, int B, int NH, int hs, int q0,
                             int Tq, int k0, int Tk);
template <typename Real>
long attention_block_backward(Real* dq, Real* dk, Real* dv, const Real* dout, const Real* lse,
                              const Real* D, const Real* q, int ldq, const Real* k, const Real* v,
                              int ldkv, int B, int NH, int hs, int q0, int Tq, int k0, int Tk);
}  // namespace reference

// The number of visible (query, key) position pairs between the query positions q0 .. q0+Tq-1
// and the key positions k0 .. k0+Tk-1 under the causal mask (t2 <= t): what the two calls above
// return, without doing the work (to plan or balance a ring schedule).
long attention_block_pairs(int q0, int Tq, int k0, int Tk);

}  // namespace paralab::kernels
