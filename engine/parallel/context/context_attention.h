// What the GPT's stage asks of context parallelism's attention (`--cp N`, `--cp-kind`): the
// rank's rows are its pieces of every window (CpChunks), and attention over every key of the
// window is the cp group's work together — the ring (ring_attention.h) or Ulysses's all-to-all
// over heads (ulysses_attention.h). See tests/engine/tst_context_parallel.cpp and
// tests/engine/tst_context_ulysses.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "run_choices.h"

namespace paralab {

class Communicator;
class Compute;
class MemoryTracker;
class SpanRecorder;

// The positions of a window that one cp rank holds, as pieces (first position, length) in the
// order its rows hold them: zigzag {i K, K} and {(2N - 1 - i) K, K} with K = s / 2N, or
// contiguous {i s/N, s/N}. Needs s a multiple of 2N (zigzag) or N.
struct CpChunks {
  std::vector<std::pair<int, int>> pieces;
  int tokens() const;  // per window: s / N
  // The visible (query, key) pairs of this rank's queries against every key of the window:
  // the causal attention work it has, per window and head.
  long visiblePairs() const;
};
CpChunks cpChunksOf(int cpRank, int cp, int seq, bool zigzag);

class ContextAttention {
 public:
  virtual ~ContextAttention() = default;
  virtual const CpChunks& chunks() const = 0;
  int rows() const { return chunks().tokens(); }  // rows per window on this rank
  // Floats a micro-batch of B windows keeps from the forward for the backward, per layer (the
  // ring: each query's log-sum-exp; Ulysses: its heads' q, k, v and probabilities).
  virtual int64_t keptFloats(int B) const = 0;
  // Whether what it keeps are values a 16-bit run stores in 16 bits (Ulysses's q, k, v and
  // probabilities, rounded as the serial model rounds its own) rather than fp32 statistics
  // (the ring's log-sum-exp, fp32 as LayerNorm's are). See lessons/reference/precision.md.
  virtual bool keptStored() const { return false; }
  // Floats one rank sends per layer for B windows (each kind's formula, in its header).
  virtual int64_t forwardFloats(int B) const = 0;
  virtual int64_t backwardFloats(int B) const = 0;
  // Bytes of its own buffers as last sized (0 before the first use), and what they hold.
  virtual int64_t workspaceBytes() const = 0;
  virtual std::string workspaceName() const = 0;

  // out [B tokens, h] = causal attention of the rank's queries over every key of their
  // windows; kept [keptFloats(B)] for the backward. qkv [B tokens, 3h]: the rank's rows
  // (window-major, pieces in order), q | k | v of its heads. `inBackward`: full
  // recomputation's rerun (its spans are backward's).
  virtual void forward(int64_t step, int micro, float* out, float* kept, const float* qkv, int B,
                       bool inBackward = false) = 0;
  // dqkv [B tokens, 3h] (overwritten) from dout [B tokens, h], the forward's out and kept.
  virtual void backward(int64_t step, int micro, float* dqkv, const float* dout, const float* out,
                        const float* kept, const float* qkv, int B) = 0;
};

// The attention `kind` names over the group `cp` (size N > 1), for `heads` heads of total
// width `width` (the rank's: C / tp). Throws std::invalid_argument naming the setting when
// the context or the heads do not divide as the kind needs.
std::unique_ptr<ContextAttention> makeContextAttention(CpKind kind, Communicator& cp, int seq,
                                                       bool zigzag, int heads, int width,
                                                       Compute& compute, MemoryTracker* memory,
                                                       SpanRecorder* spans);

}  // namespace paralab
