// The GPT's pipeline stage (stage.h): a shard's units (gpt.h) run one micro-batch at a time,
// attention split over the tensor-parallel group by heads and the FFN column-then-row
// (Megatron-LM, Shoeybi et al. 2019), optionally with sequence parallelism over the tokens
// (Korthikanti et al. 2022), or each window's tokens split over a context-parallel group with
// ring attention or Ulysses (context_attention.h), on the rank's Compute. The tensor-parallel exchanges are
// Megatron's pair (column_row.h), one per half of the block.
// See tests/engine/tst_gpt.cpp.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "model/gpt.h"
#include "parallel/context/context_attention.h"
#include "parallel/context/ring_attention.h"
#include "parallel/tensor/column_row.h"

namespace paralab {

// One block's activations on a GPT stage, each rank's share: the LayerNorm outputs [full, C]
// (SP: all-gathered), their statistics [local], qkv [full, 3C/T] (the rank's heads' q, k and
// v), the probabilities [B, NH/T, seq, seq] (not with selective recomputation; under context
// parallelism instead what its attention keeps, lse: the ring's log-sum-exp per query,
// [B, NH/T, seq/cp], or Ulysses's q, k, v and probabilities of its heads), attention's output
// [full, C/T], the stream after attention [local, C], fc1's and GELU's [full, 4C/T].
struct GptBlockActs {
  Tensor ln1, mean1, rstd1, qkv, att, lse, y, mid, ln2, mean2, rstd2, h, g;
};

// The output gradients one block's B leaves for its W: fc2's and proj's [full, C] (SP:
// all-gathered), fc1's after GELU [full, 4C/T], qkv's [full, 3C/T] (attention's input
// gradient), LN2's and LN1's [local, C].
struct GptBlockGrads {
  Tensor dy2, dh, dln2, dy1, dqkv, dln1;
};

// What one micro-batch of B windows leaves on a GPT stage between its forward and its
// backward. Rows are tokens: `full` = B x seq, `local` the residual stream rows this rank holds.
struct GptMicroActs : MicroActs {
  Tensor tokens, targets;  // first / last stage: [full] int32 ids in a float tensor's bytes
  std::vector<Tensor> a;   // the residual stream into each block and out of the last [local, C]
  // Per block; none with full recomputation, which keeps only `a` and refills the stage's one
  // set of block buffers in the backward.
  std::vector<GptBlockActs> block;
  Tensor aFull;              // last stage, SP: the gathered residual stream [full, C]
  Tensor lnf, meanf, rstdf;  // last stage: the final LayerNorm [full, C] and stats [full]
  Tensor logits, dlogits;    // last stage [full, V]
  // A split backward (Stage::splitBackward): what B keeps for W, per block; the last stage's
  // final LayerNorm output gradient [full, C]; the first stage's embedding gradient rows
  // [full, C] (SP: all-gathered).
  std::vector<GptBlockGrads> grads;
  Tensor dlnf, dEmbed;
};

class GptStage final : public ColumnRowStage {
 public:
  // As TensorParallelStage. Throws std::invalid_argument, with `sp`, for a context that the
  // group does not divide. `cp` (null or one rank: none): the context-parallel group, each
  // window's tokens cut as `zigzag` says (ring_attention.h).
  GptStage(Gpt& shard, Communicator& tp, bool sp, Compute& compute, MemoryTracker* memory,
           SpanRecorder* spans, Communicator* cp = nullptr, bool zigzag = true,
           CpKind cpKind = CpKind::Ring);
  ~GptStage() override;
  // Context parallelism's attention (the ring or Ulysses), or null; the ring alone, or null.
  const ContextAttention* contextAttention() const { return m_ring.get(); }
  const RingAttention* ring() const { return dynamic_cast<const RingAttention*>(m_ring.get()); }

  MicroRows rowsOf(int samples) const override;
  int64_t boundaryFloats(int samples) const override {
    return int64_t(rowsOf(samples).local) * m_C;
  }
  float* input(MicroActs& m) const override { return acts(m).a.front().data(); }
  float* output(MicroActs& m) const override { return acts(m).a.back().data(); }
  bool readsInputs() const override { return m_model.hasUnit(0) || m_model.hasUnit(m_L + 1); }
  double forward(int64_t step, MicroActs& m, const float* x, const int* labels, double normalizer,
                 UnitHooks* hooks = nullptr) override;
  void backward(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                UnitHooks* hooks = nullptr) override;
  void backwardInput(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                     UnitHooks* hooks = nullptr) override;
  void backwardWeight(int64_t step, MicroActs& m, UnitHooks* hooks = nullptr) override;
  void finishBackward(GradSync& sync) override;
  bool reportsLoss() const override;
  int64_t recomputedBytes(int samples) const override;

 private:
  static GptMicroActs& acts(MicroActs& m) { return static_cast<GptMicroActs&>(m); }
  int unitOf(int globalUnit) const { return globalUnit - m_model.shard().firstUnit; }
  // Block j's buffers for micro-batch m: its own, or (full recomputation) the stage's one set.
  GptBlockActs& blockOf(GptMicroActs& m, int j) {
    return m_model.recompute() == Recompute::Full ? m_block : m.block[size_t(j)];
  }
  float* attOf(GptBlockActs& k) {
    return m_model.recompute() == Recompute::Selective ? m_att.data() : k.att.data();
  }
  // One block's buffers for micro-batches of `samples` windows, each made by `make`.
  GptBlockActs blockLayout(int samples, const std::function<Tensor(Shape)>& make) const;
  void loadTokens(GptMicroActs& m, const float* x);
  // Block j's forward on micro-batch m into `k`, its output into `out` [local, C]. `again`:
  // full recomputation's rerun inside the backward, its collectives included (spans: backward).
  void blockForward(int64_t step, int j, GptMicroActs& m, GptBlockActs& k, float* out,
                    bool again = false);
  // The halves of the head's (final LayerNorm and head) and block j's backward. dA: the
  // gradient of the residual stream, this rank's rows; `k` and `dlnf` [full, C]: where B leaves
  // what W reads. `discard` [full, C]: scratch for the final LayerNorm's W. `rerun`: full
  // recomputation's block forward again before W (B's is gone when W runs apart from it).
  void headInput(int64_t step, GptMicroActs& m, float* dA, float* dlnf);
  void headWeight(int64_t step, GptMicroActs& m, const float* dlnf, float* discard);
  void blockInput(int64_t step, int j, GptMicroActs& m, float* dA, GptBlockGrads& k);
  void blockWeight(int64_t step, int j, GptMicroActs& m, const GptBlockGrads& k, bool rerun);
  void ensureScratch(const MicroRows& r);
  std::unique_ptr<MicroActs> layout(int micro, int samples,
                                    const std::function<Tensor(Shape)>& make) const override;

  // The embeddings of a micro-batch's tokens (its rows), or their gradient (+=), by position:
  // the rank's pieces of each window under cp.
  void embed(GptMicroActs& m, float* out);
  void embedBackward(GptMicroActs& m, const float* dA);
  // Attention of block k on micro-batch m: out [full, C/T] from k.qkv, its probabilities
  // (att) or, under cp, the ring's lse kept in k.
  void attend(int64_t step, GptMicroActs& m, GptBlockActs& k, bool again);
  void attendBackward(int64_t step, GptMicroActs& m, GptBlockActs& k, const float* dy, float* dqkv);

  Gpt& m_model;
  std::unique_ptr<ContextAttention> m_ring;  // cp > 1: the ring or Ulysses (--cp-kind)
  int m_S, m_C, m_V, m_L;  // context, hidden width, vocabulary, layers of the whole model
  int m_Sl;                // tokens of each window this rank holds: m_S / cp
  int m_Cl, m_NHl, m_F;    // per rank: attention width C/T, heads NH/T, fc1 outputs 4C/T
  // Backward (and SP forward) scratch, sized for the largest micro-batch: Workspace. So are
  // what recomputation refills: selective's probabilities (m_att), full's block (m_block).
  int m_capacity = 0;  // in rows (tokens)
  Tensor m_dA, m_dtmp, m_dFull, m_dln, m_y, m_att, m_attScratch;
  Tensor m_normDiscard;   // [2C]: the LayerNorm weights' gradients B makes and drops
  GptBlockGrads m_grads;  // backward (unsplit): one block's B leaves them for its W at once
  GptBlockActs m_block;
  std::vector<int> m_hostTokens, m_hostTargets;
};

}  // namespace paralab
