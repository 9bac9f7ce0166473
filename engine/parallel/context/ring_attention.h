// Context parallelism (`--cp N`): each window's tokens split over the N ranks of a cp group,
// and causal attention computed as a ring (Liu et al. 2023, "Ring Attention with Blockwise
// Transformers"; Megatron-Core's context parallelism). Every rank keeps the queries of its own
// tokens and passes the keys and values of its tokens around the ring: at ring step i it holds
// the K/V block of rank (r - i) mod N, folds it into its queries' running softmax
// (kernels/cpu/attention_blocks.h, or cuda/attention_blocks.h on a GPU: the online-softmax
// rescaling of FlashAttention) and sends it on. After N - 1 steps every query has seen every
// key; the [s, s] probabilities are never stored, only each query's log-sum-exp (lse), from
// which the backward recomputes them.
//
// Which tokens a rank holds (CpChunks). Under the causal mask a query sees only earlier keys,
// so a rank holding the last chunk has N times the work of the first. zigzag (the default)
// cuts a window into 2N chunks and gives rank i chunks i and 2N - 1 - i: every rank then has
// the same number of visible (query, key) pairs. contiguous gives rank i chunk i of N (the
// imbalance, to measure).
//
// Bytes, per layer, micro-batch of B windows of s tokens, with h the attention width a rank
// computes (C, or C / tp under tensor parallelism), fp32, each rank sends:
//   forward:  its K and V block N - 1 times:                  2 (N - 1) B (s/N) h 4 bytes;
//   backward: the K/V block N - 1 times, and the partial dK/dV of each block, which travels
//             one step behind it and is handed back to its owner: N - 1 times again
//                                                              4 (N - 1) B (s/N) h 4 bytes,
// in N - 1 messages forward and 2 (N - 1) backward, point-to-point on the cp group only (send
// to r + 1, receive from r - 1).
// Overlap: a rank passes a block on before folding it in and takes the next one after. On
// thread ranks a send returns at once (the message is copied; an emulated link delays its
// arrival), so the transfer runs behind the block's compute and only what is left of it shows
// as waiting in recv. Under MPI and NCCL a send may wait for its recv: there the two calls run
// together, ordered, before the block's compute, and nothing hides.
// On the timeline: every message of the ring is one span (kind Comm, op "send→recv · ring ...",
// its bytes) while the block is on its way to the next rank; ringOverlap() measures from a
// rank's spans how much of that time hid behind its compute and how much it sat in send/recv.
// Devices: the folds go through Compute, so on --device cuda they are the GPU kernels on the
// rank's stream, every buffer here (the two blocks, l, D, the lse and output) is device memory
// and the ring's messages are device buffers (ThreadComm's device path, NCCL's send/recv).
// Before each send the rank waits for its stream, since the communicator reads the block from
// a stream of its own. On the GPU this has run on the emulated GPU only (the kernel source
// executed on the host: tst_cuda_model_parallel_emulated), not on a real one.
// See tests/engine/tst_context_parallel.cpp (ringStepsOnTheTimeline, ringHidesBehindCompute).
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "metrics/span_recorder.h"
#include "parallel/context/context_attention.h"
#include "tensor.h"

namespace paralab {

// CpChunks, which positions a rank holds: context_attention.h.

// [SECTION] The ring's transfers, measured from a rank's spans
//
// A transfer span runs while the block is on its way to the next rank: on thread ranks the send
// copies the message and returns, and an emulated link delivers it latency + bytes / bandwidth
// later (link_model.h): the span runs from the send's return to then (with no emulated link it
// is empty: handed over is there). On an ordered ring (MPI, NCCL) it is the send and recv calls.
// isRingTransfer(span) (metrics/span_recorder.h) tells them from the rank's other spans.
struct RingOverlap {
  int transfers = 0;      // transfer spans (messages sent)
  int64_t bytes = 0;      // their bytes: the rank's sent bytes on the cp group
  double transferMs = 0;  // the union of the transfer spans: time a block it sent was in flight
  double hiddenMs = 0;    // of that, the time the rank computed (forward / backward spans)
  double exposedMs = 0;   // of that, the time it sat in a send or recv call (other comm spans)
  // hidden + exposed = transfer, up to the few microseconds between one call and the next.
};
// `spans`: one rank's, of one step (or more). No transfer spans: all zero.
RingOverlap ringOverlap(const std::vector<Span>& spans);

class RingAttention final : public ContextAttention {
 public:
  // Every RingAttention made after this call with `on` orders its ring as MPI's (send and recv
  // together, before the block's compute), even on thread ranks: to compare, in tests and
  // `paralab-bench cp`. Process-wide.
  static void orderEveryRing(bool on);

  // `cp`: the group (size N > 1). `heads` and `width`: the heads the rank computes and their
  // width h (C / tp). Buffers come from `compute` (on the rank's device, CPU or GPU) as
  // Workspace in `memory`.
  RingAttention(Communicator& cp, int seq, bool zigzag, int heads, int width, Compute& compute,
                MemoryTracker* memory, SpanRecorder* spans);

  const CpChunks& chunks() const override { return m_chunks; }
  int tokens() const { return m_chunks.tokens(); }  // rows per window on this rank
  // Floats of the kept log-sum-exp for B windows: B x heads x tokens.
  int64_t lseFloats(int B) const { return int64_t(B) * m_NH * tokens(); }
  int64_t keptFloats(int B) const override { return lseFloats(B); }
  // Floats one rank sends per layer for B windows (the formulas above).
  int64_t forwardFloats(int B) const override;
  int64_t backwardFloats(int B) const override;
  // Bytes of the two blocks' buffers (in hand, arriving) as last sized; 0 before the first use.
  int64_t workspaceBytes() const override { return m_cur.bytes() + m_next.bytes(); }
  std::string workspaceName() const override {
    return "K/V blocks of the ring (the one in hand and the one arriving)";
  }

  // out [B tokens, h] = causal attention of the rank's queries over every key of their
  // windows; lse [lseFloats(B)] kept for the backward. qkv [B tokens, 3h]: the rank's rows
  // (window-major, pieces in order), q | k | v of its heads. `inBackward`: full
  // recomputation's rerun (its spans are backward's).
  void forward(int64_t step, int micro, float* out, float* lse, const float* qkv, int B,
               bool inBackward = false) override;
  // dqkv [B tokens, 3h] (overwritten) from dout [B tokens, h], the forward's out and lse.
  void backward(int64_t step, int micro, float* dqkv, const float* dout, const float* out,
                const float* lse, const float* qkv, int B) override;

 private:
  void ensure(int B);
  // One block of keys and values, from rank `src`, into the queries' accumulators (forward) or
  // into dq and the block's dk, dv (backward). kv: [B tokens, ldkv] k | v rows of rank src.
  void foldForward(float* o, float* m, float* l, const float* qkv, const float* kv, int ldkv,
                   int src, int B);
  // dkv: the block's dK | dV, laid out as kv (ldkv).
  void foldBackward(float* dqkv, float* dkv, const float* dout, const float* lse,
                    const float* qkv, const float* kv, int ldkv, int src, int B);
  // run(first row, length) for each (window, piece) of B windows, in row order: the query
  // chunks whose [heads, length] statistics start at row x heads.
  void eachPiece(int B, const std::function<void(int64_t, int)>& run) const;
  // This rank's k | v columns of qkv, packed [B tokens, 2h] for the ring.
  void pack(const float* qkv, int B, float* kv) const;
  // Passes `count` floats of `send` to the next rank, and gets as many from the previous into
  // `recv`: with posted sends (ThreadComm's send returns at once) only the send, and
  // receive() takes the message after the block's compute; else both here, ordered so that no
  // cycle waits (even ranks send first) and receive() does nothing.
  // Records the message's transfer span (step: the span's step, `label`: its op).
  void sendOn(const float* send, float* recv, int64_t count, int64_t step, const char* label);
  void receive(float* recv, int64_t count);

  Communicator& m_cp;
  int m_rank, m_N, m_S, m_NH, m_h;
  bool m_zigzag;
  CpChunks m_chunks;
  Compute& m_compute;
  MemoryTracker* m_memory;
  SpanRecorder* m_spans;
  bool m_posted;  // sends return at once (thread ranks): the ring overlaps the compute
  int m_capacity = 0;  // windows the buffers hold
  // Workspace on the rank's device: the block in hand and the one arriving, each
  // [K/V | dK/dV] of B tokens x 4h; l, D and one row of scores (the CPU kernel's; the GPU's
  // rescores instead).
  Tensor m_cur, m_next, m_l, m_D, m_scores;
};

}  // namespace paralab
