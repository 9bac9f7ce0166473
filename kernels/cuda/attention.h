// A GPT's causal multi-head attention and its token + position embedding on the GPU, float,
// device pointers: the same shapes, formulas and semantics as cpu/attention.h and
// cpu/embedding.h (read those first). The first rung of a ladder: one thread per row or per
// element, plain loops, no shared memory, no atomics. Every launcher enqueues on `stream` (a
// cudaStream_t; nullptr: the default stream), returns without waiting, and throws
// std::runtime_error on a CUDA error. Every sum runs in a fixed order, so results repeat bit for
// bit from run to run. See tests/kernels/tst_cuda_kernels.cpp (attention, embedding).
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
