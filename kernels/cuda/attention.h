// A GPT's causal multi-head attention and its token + position embedding on the GPU, float,
// device pointers: the same shapes, formulas and semantics as cpu/attention.h and
// cpu/embedding.h (read those first). The first rung of a ladder: one thread per row or per
// element, plain loops, no shared memory, no atomics; attention_forward_tiled_cuda is the next
// rung of the forward (shared-memory tiles, warp shuffles, an online softmax). Every launcher
// enqueues on `stream` (a cudaStream_t; nullptr: the default stream), returns without waiting,
// and throws std::runtime_error on a CUDA error. Every sum runs in a fixed order, so results
// repeat bit for bit from run to run. See tests/kernels/tst_cuda_kernels.cpp (attention,
// attentionTiled, embedding).
#pragma once

namespace paralab::kernels {

// Shapes (cpu/attention.h): qkv [B*T, 3C], att [B, NH, T, T], out [B*T, C], hs = C / NH.

// att from qkv: scaled scores q.k / sqrt(hs) over the visible keys t2 <= t, masked softmax
// (row max subtracted), zeros above the diagonal. One thread per (b, h, t) row.
void attention_probs_cuda(float* att, const float* qkv, int B, int T, int C, int NH,
                          void* stream = nullptr);

// out and att (att through attention_probs_cuda, then out = P v, one thread per element of out).
void attention_forward_cuda(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                            void* stream = nullptr);

// [Tiled] The same out, without the [B, NH, T, T] att: FlashAttention's idea (Dao et al. 2022,
// "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness"), fp32, causal.
// A block takes one (b, h) and a tile of 32 query rows and walks the tiles of 32 keys at or
// before its own (the later ones are all masked), staging each K and V tile in shared memory.
// Per query row it keeps a running max m, a running sum l and an unnormalised output acc
// (m = -inf, l = 0, acc = 0 to start); a key tile with scores s_j = q . k_j / sqrt(hs) does
//   m' = max(m, max_j s_j)          alpha = exp(m - m')   (what was summed under m, rescaled)
//   p_j = exp(s_j - m')             l' = alpha l + sum_j p_j
//   acc' = alpha acc + sum_j p_j v_j
// and at the end out = acc / l: the softmax's row max, found on the fly rather than beforehand,
// exact up to rounding. Memory O(B T C) instead of O(B NH T^2); P is never written.
// lse (nullptr: not written): B*NH*T floats, [B, NH, T] as att's rows, m + log(l) per row, the
// log-sum-exp of its scores, with which a backward recomputes P = exp(s - lse) without storing it.
// Tiles: 32 query rows x 32 keys, 256 threads (8 warps; a warp handles 4 of the query rows, its
// lane j scoring key j of a tile and owning output columns lane, lane + 32), shared memory
// Q, K, V tiles of 32 x 64 floats (K padded by a column): 24,704 bytes per block, whatever hs.
// hs = C / NH must be <= kAttentionTiledMaxHeadSize (std::invalid_argument otherwise).
inline constexpr int kAttentionTiledMaxHeadSize = 64;
void attention_forward_tiled_cuda(float* out, float* lse, const float* qkv, int B, int T, int C,
                                  int NH, void* stream = nullptr);

// dqkv [B*T, 3C] (=, not +=) from dout [B*T, C], qkv and the forward's att.
// scratch: B*NH*T floats on the device (not the CPU version's T), overwritten: per (b, h, t) row
// the softmax Jacobian's rowsum(P ⊙ dP), which both the dq and the dk pass need. No atomics:
// dq is written per query row t, dk and dv per key row t2 gathering over the query rows t >= t2.
void attention_backward_cuda(float* dqkv, float* scratch, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH, void* stream = nullptr);

// out[b*T + t, :] = wte[tokens[b*T + t], :] + wpe[t, :]; tokens on the device, each in [0, V).
void embedding_forward_cuda(float* out, const int* tokens, const float* wte, const float* wpe,
                            int B, int T, int C, void* stream = nullptr);

// Accumulates (+=), as the CPU: dwte[tokens[r], :] += dout[r, :] (a repeated token collects
// once per occurrence) and dwpe[t, :] += sum_b dout[b*T + t, :]. Deterministic, no atomics:
// dwpe one thread per (t, c) adding b in order; dwte one thread per column c walking the rows r
// in order, so both sums are added in the CPU's order and match it bit for bit.
void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int* tokens, int B,
                             int T, int C, void* stream = nullptr);

}  // namespace paralab::kernels
