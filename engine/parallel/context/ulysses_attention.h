// Ulysses (`--cp N --cp-kind ulysses`; Jacobs et al. 2023, "DeepSpeed Ulysses: System
// Optimizations for Enabling Training of Extreme Long Sequence Transformer Models"): each cp
// rank holds s/N tokens of every window with all of its tp rank's heads. Before attention an
// all-to-all over the cp group turns these sequence shards into head shards: rank g gets the
// q, k and v of heads g·H/N .. (g+1)·H/N − 1 for every token of the window, attends over whole
// windows with ParaLab's causal attention kernel, and a second all-to-all turns the output
// back into sequence shards. The backward does the same with dout in and dqkv out. The heads
// a rank computes (heads / tp) must divide by N; the token split (zigzag or contiguous) is
// the ring's (CpChunks), so the rest of the block is the same under either kind.
//
// Bytes, per layer, micro-batch of B windows of s tokens, h the attention width a rank
// computes (C / tp), fp32: an all-to-all sends (N − 1)/N of its buffer, so each rank sends
//   forward:  q, k, v out (3 B (s/N) h) and the output back (B (s/N) h):
//                                                  4 (N − 1)/N · B (s/N) h · 4 bytes;
//   backward: dout out (B (s/N) h) and dq, dk, dv back (3 B (s/N) h): the same again,
// on the cp group, in 2 all-to-alls each way: N − 1 times less than the ring's
// 2 (N − 1) and 4 (N − 1) · B (s/N) h (ring_attention.h) per direction, and falling with N.
// Kept for the backward (per layer, per micro-batch): its heads' q, k, v for whole windows
// (B s · 3h/N, as many floats as the rank's qkv rows) and the probabilities of its H/N heads
// (B (H/N) s², the kernel keeps them; a FlashAttention kernel would keep only the log-sum-exp).
// Nothing overlaps here: an all-to-all needs every rank's shard before attention can start.
// See tests/engine/tst_context_ulysses.cpp.
#pragma once
#include <cstdint>

#include "parallel/context/context_attention.h"
#include "tensor.h"

namespace paralab {

class UlyssesAttention final : public ContextAttention {
 public:
  // `cp`: the group (size N > 1). `heads` and `width`: the heads the rank computes and their
  // width h (C / tp); heads must divide by N (RunConfig::validate refuses it before).
  UlyssesAttention(Communicator& cp, int seq, bool zigzag, int heads, int width, Compute& compute,
                   MemoryTracker* memory, SpanRecorder* spans);

  const CpChunks& chunks() const override { return m_chunks; }
  int64_t keptFloats(int B) const override;
  bool keptStored() const override { return true; }  // q, k, v and probabilities
  int64_t forwardFloats(int B) const override;
  int64_t backwardFloats(int B) const override { return forwardFloats(B); }
  int64_t workspaceBytes() const override;
  std::string workspaceName() const override {
    return "Ulysses's all-to-all buffers and its heads' output for whole windows";
  }
  void forward(int64_t step, int micro, float* out, float* kept, const float* qkv, int B,
               bool inBackward = false) override;
  void backward(int64_t step, int micro, float* dqkv, const float* dout, const float* out,
                const float* kept, const float* qkv, int B) override;

 private:
  void ensure(int B);
  // Rows of this rank (the sequence shard, [B n, cols] per peer block) to whole windows of
  // the rank's heads ([B s, cols]): block q of `from` holds rank q's positions.
  void toWindows(float* windows, const float* from, int B, int cols) const;
  // The other way: block q of `to` gets rank q's positions of `windows`.
  void toShards(float* to, const float* windows, int B, int cols) const;
  // The all-to-all of `count` floats per peer, on the rank's device.
  void exchange(const float* send, float* recv, int64_t count);

  Communicator& m_cp;
  int m_rank, m_N, m_S, m_NH, m_h;
  int m_w;  // the width of a head group: h / N
  bool m_zigzag;
  CpChunks m_chunks;
  Compute& m_compute;
  MemoryTracker* m_memory;
  SpanRecorder* m_spans;
  int m_capacity = 0;  // windows the buffers hold
  // Workspace: what is sent and received ([B n, 3h] each: N blocks of [B n, 3h/N]), the
  // output (or its gradient) of the rank's heads for whole windows [B s, h/N], dq|dk|dv of its
  // heads [B s, 3h/N] and the attention backward's scratch.
  Tensor m_send, m_recv, m_y, m_dqkv, m_scratch;
};

}  // namespace paralab
