// The GPT (--model gpt): a decoder-only transformer over characters, written out layer by layer
// as the MLP is (Radford et al. 2018/2019; the layout of GPT-2 and nanoGPT):
//   token embedding wte [V, C] + learned position embedding wpe [T, C]
//   L pre-LayerNorm blocks:  x += proj(attention(qkv(LN1(x))))    causal, NH heads of C/NH
//                            x += fc2(GELU(fc1(LN2(x))))          the MLP's FFN, C -> 4C -> C
//   a final LayerNorm and an untied output head C -> V (its own weights, not wte's: a tied head
//   would put one weight in two units, which gradient buckets and ZeRO shards keep apart)
//   cross-entropy of each next character.
// The key bias is held at 0: adding one vector to every key adds q.b to a whole row of scores,
// which the softmax ignores, so its gradient is zero in exact arithmetic and rounding noise in
// floats — noise that Adam, dividing by its own running size, turns into full steps that differ
// between a serial and a parallel run. (Other models drop every bias; this one keeps the rest.)
// A sample is a window of T + 1 token ids (Dataset rows, as floats): the model reads tokens
// 0..T-1 and predicts tokens 1..T. A sample's loss is the mean over its T predictions, so the
// loss is in nats per character and the strategies' "sum over samples / global batch" is the
// mean over every character of the global batch. Units, as the MLP's: 0 = the embeddings,
// 1..L = the blocks, L + 1 = the final LayerNorm and the head.
// A shard (ModelShard, model.h) holds a pipeline stage's units, each block cut over the
// tensor-parallel ranks as Megatron-LM cuts it: attention by heads (qkv column-parallel: the
// q, k and v columns of the rank's heads; proj row-parallel: the matching input rows) and the
// FFN column-then-row. gpt_parallel.cpp runs a shard.
// With --ffn moe each block's FFN is a mixture of experts (moe_ffn.h): x += MoE(LN2(x)), every
// token of every window routed on its own. A shard may then hold some of each block's experts
// (ModelShard::epRank/epSize; expert parallelism, engine/parallel/expert/expert_parallel.cpp).
// See tests/engine/tst_gpt.cpp (gradient check, learning) and tst_parallel_equals_serial.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/layers.h"
#include "model/model.h"
#include "model/moe_ffn.h"
#include "model/recompute.h"

namespace paralab {

struct GptShape {
  int vocab = 65;   // V: distinct characters of the corpus
  int seq = 64;     // T: the context, tokens a window holds (and positions wpe has)
  int hidden = 128; // C
  int layers = 2;   // L
  int heads = 4;    // NH; C % NH == 0
  // The blocks' FFN: nullopt the dense C -> 4C -> C, else a mixture of experts (its hidden = C).
  std::optional<MoeFfnShape> moe = std::nullopt;
  // P: V C + T C (embeddings) + L (12 C^2 + 13 C) (blocks) + 2 C + C V + V (final LN, head),
  // with the dense FFN's 8 C^2 + 5 C per block replaced by the MoE's router and experts.
  int64_t parameterCount() const;
};

// Splits `batch` windows (rows of T + 1 token ids, as floats) into the model's inputs (ids
// 0..T-1 of each) and targets (ids 1..T), either may be null. std::invalid_argument naming the
// window and position of a value that is not an id in 0..V-1.
void splitWindows(const float* x, int batch, int T, int V, int* tokens, int* targets);

class Gpt : public Model {
 public:
  // The weights drawn from `seed`: linear layers as PyTorch's default (mlp.h), embeddings from
  // N(0, 0.02^2) as GPT-2, LayerNorms gamma 1, beta 0. A model on a GPU draws a host twin and
  // uploads it; a shard draws the whole model and keeps its slices. initialise = false leaves
  // the weights zero (a model whose buffers are about to be filled, e.g. for evaluation).
  // Throws std::invalid_argument when heads do not divide hidden, the shard's tpSize the
  // heads, or an MoE model is cut by tensor or pipeline parallelism (its axes are dp and ep).
  Gpt(const GptShape& shape, uint64_t seed, MemoryTracker* tracker,
      const Compute* compute = nullptr, Recompute recompute = Recompute::None,
      const ModelShard& shard = {}, bool initialise = true);

  double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                     UnitHooks* hooks = nullptr) override;
  void backward(UnitHooks* hooks = nullptr) override;
  Evaluation evaluate(const float* x, const int* labels, int batch,
                      UnitHooks* hooks = nullptr) override;
  int numUnits() const override { return m_shape.layers + 2; }
  MoeParts* moeParts() override { return m_shape.moe ? &m_moe : nullptr; }
  const GptShape& shape() const { return m_shape; }

  // Appends `count` characters to `ids` (at least one id to start from), each drawn from the
  // model's next-character distribution over the last T ids (temperature 1), with `seed`.
  void generate(std::vector<int>& ids, int count, uint64_t seed);

  // [SECTION] The parts, for strategies that run them one by one (gpt_parallel.cpp).
  struct Block {
    LayerNorm ln1;
    Linear qkv, proj;
    LayerNorm ln2;
    std::optional<Linear> fc1, fc2;  // the dense FFN, or
    std::optional<MoeFfn> moe;       // the mixture of experts
  };
  Recompute recompute() const { return m_recompute; }
  int wteRef() const { return m_wte; }  // needs hasUnit(0)
  int wpeRef() const { return m_wpe; }
  Block& block(int l) { return m_blocks.at(size_t(l - m_firstBlock)); }  // global block index
  int firstBlock() const { return m_firstBlock; }
  int endBlock() const { return m_firstBlock + int(m_blocks.size()); }
  LayerNorm& finalNorm() { return m_lnf.at(0); }  // needs hasUnit(L + 1)
  Linear& head() { return m_head.at(0); }

 private:
  // What one block's forward leaves for its backward: LN1's output and stats, qkv, attention's
  // probabilities and output, the stream after attention (mid), LN2's output and stats, fc1's
  // and GELU's outputs. [B*T, width] each; att [B, NH, T, T].
  struct BlockActs {
    Tensor ln1, mean1, rstd1, qkv, att, y, mid, ln2, mean2, rstd2, h, g;
  };
  // Activations of one batch of B sequences of T tokens, sized for the most rows seen.
  struct Acts {
    int64_t rows = 0;  // capacity in tokens, B*T
    int64_t attCapacity = 0;
    Tensor tokens, targets;  // [B*T] int32 ids in a float tensor's bytes, on the device
    std::vector<Tensor> a;   // residual stream: a[0] the embeddings ... a[L], always kept
    // One per block (none, selective: without att) or one shared (full, workspace).
    std::vector<BlockActs> block;
    Tensor att;  // selective: one block's probabilities, shared (workspace)
    Tensor lnf, meanf, rstdf, logits;
    Tensor dlogits, da, dtmp, dqkv, dh, scratch;  // backward workspace
  };
  BlockActs& actsOf(int l) { return m_acts.block[m_recompute == Recompute::Full ? 0 : size_t(l)]; }
  float* attOf(int l) {
    return m_recompute == Recompute::Selective ? m_acts.att.data() : actsOf(l).att.data();
  }
  // Block l's forward from a[l]; with `toOutput`, a[l+1] too (a recomputation stops at GELU, or
  // before an MoE FFN, whose rows are kept: routing them again would move them again). `train`:
  // the MoE's capacity limit and routing figures.
  void blockForward(int l, int B, int T, bool toOutput, bool train);
  void ensureCapacity(int B, int T);
  // Token ids of `batch` windows (rows of T + 1 floats) to the device: inputs and targets.
  void loadTokens(const float* x, int batch);
  // The forward through the logits. `inFirstUnit` (loading the tokens) and `inLastUnit` (the
  // loss) run inside the first and last units' hooks, so the spans around units hold all of the
  // forward's work.
  // B may be 0 under expert parallelism (a rank running its experts for others' tokens).
  void forwardTo(int B, int T, bool train, UnitHooks* hooks,
                 const std::function<void()>& inFirstUnit = {},
                 const std::function<void()>& inLastUnit = {});
  void lossAndGrad(int B, int T, double normalizer, double* lossSum, int* correct);

  GptShape m_shape;
  Recompute m_recompute;
  MemoryTracker* m_tracker;
  const Compute* m_compute;
  int m_wte = 0, m_wpe = 0;  // the embedding weights' refs in m_ps
  int m_firstBlock = 0;
  std::vector<Block> m_blocks;
  std::vector<LayerNorm> m_lnf;  // one, or none on a shard without the head
  std::vector<Linear> m_head;    // one, or none
  MoeParts m_moe;                // --ffn moe: what the blocks' MoE layers share
  Acts m_acts;
  int m_B = 0;  // sequences of the last forwardLoss
  std::vector<int> m_hostTokens, m_hostTargets;
};

}  // namespace paralab
