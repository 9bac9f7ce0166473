// Model: what the data-parallel strategies and the trainer ask of a model, whichever it is —
// its parameters (a ParamSet: named weights in units, flat buffers), the loss and gradients of
// a batch with hooks around each unit, and evaluation. Mlp (mlp.h), Moe (moe.h) and Gpt (gpt.h)
// are models; the same strategy code trains each. Tensor and pipeline parallelism and expert
// parallelism cut a model's parts (model_parallel.cpp, expert_parallel.cpp): a model may be
// built as a shard, one rank's part of it, which knows where each of its weights sits in the
// whole model.
// See tests/engine/tst_model.cpp and tst_gpt.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/param_set.h"

namespace paralab {

struct MoeParts;

// Called around each unit (0 = the input layer, 1..L = blocks, L+1 = the output layer) as the
// passes reach it: where strategies gather sharded weights (ZeRO-3), start gradient all-reduces
// while backward goes on (bucketed data parallelism), or reduce-scatter gradients (ZeRO-2).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void beforeForward(int /*unit*/) {}
  virtual void afterForward(int /*unit*/) {}
  virtual void beforeBackward(int /*unit*/) {}
  virtual void afterBackward(int /*unit*/) {}  // the unit's gradients are final
};

// What evaluating a batch found: predictions right (arg-max), predictions made, and the sum of
// the samples' losses (a sample's loss: the MLP's cross-entropy of its label; the GPT's mean
// cross-entropy over its next-character predictions).
struct Evaluation {
  int64_t correct = 0;
  int64_t predictions = 0;
  double lossSum = 0;
};

// Which part of the model one rank builds (tensor and pipeline parallelism): units
// [firstUnit, lastUnit] (0 = the input layer, 1..L = blocks, L+1 = the output layer), each
// block's weights cut over tpSize ranks as Megatron-LM cuts them (Shoeybi et al. 2019): a
// column-parallel layer's output columns, a row-parallel layer's input rows, slice tpRank of
// tpSize. A model with MoE blocks (moe_ffn.h) holds the epRank-th of epSize equal runs of each
// block's experts (expert parallelism). The default is the whole model.
struct ModelShard {
  int tpRank = 0, tpSize = 1;
  int firstUnit = 0, lastUnit = -1;  // -1: through the output layer
  int epRank = 0, epSize = 1;
};

// Where one of a shard's weights sits in the whole model: the whole weight's shape and offset
// in the whole model's flat buffer, and the rows (dim 0) or columns (dim 1) [begin, end) this
// shard holds (dim -1: the whole weight). groups > 1: that dimension is `groups` equal parts
// side by side (the GPT's q, k and v) and the shard holds [begin, end) of each part, the parts
// in order; begin and end count within a part.
struct ParamSlice {
  Shape whole;
  int64_t wholeOffset = 0;
  int dim = -1;
  int64_t begin = 0, end = 0;
  int groups = 1;
};

class Model {
 public:
  virtual ~Model() = default;
  // Forward over `batch` samples (rows of x, as the Dataset lays them out; labels may be unused,
  // as by the GPT, whose targets are in x); keeps the activations for backward. Returns the SUM
  // of the per-sample losses; gradients are scaled by 1 / `normalizer` (the global batch).
  // Host memory.
  virtual double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                             UnitHooks* hooks = nullptr) = 0;
  // Accumulates (+=) parameter gradients of the last forwardLoss.
  virtual void backward(UnitHooks* hooks = nullptr) = 0;
  // Forward only, for the held-out set; no gradients.
  virtual Evaluation evaluate(const float* x, const int* labels, int batch,
                              UnitHooks* hooks = nullptr) = 0;
  virtual int numUnits() const = 0;
  // A model with mixture-of-experts blocks (moe_ffn.h): where its experts are, their ranges
  // and routing figures, and the exchange a strategy gives it. Null for a dense model.
  virtual MoeParts* moeParts() { return nullptr; }
  ParamSet& params() { return m_ps; }
  const ParamSet& params() const { return m_ps; }
  // Mixed precision (train/precision.h): the dtype the activations a layer keeps for the
  // backward are stored in; each is rounded to it where it is written (stored()). Set before
  // the first forward: the buffers are then counted at its width.
  void storeActivationsIn(Dtype d) {
    m_stored = d;
    m_ps.storeIn(d);  // its parameters too (ParamSet::stored)
  }

  // [SECTION] Shards: one rank's part of the model (model_parallel.cpp).
  const ModelShard& shard() const { return m_shard; }  // lastUnit resolved
  bool hasUnit(int unit) const { return unit >= m_shard.firstUnit && unit <= m_shard.lastUnit; }
  // Every unit, uncut by tensor parallelism (an MoE model may still hold only some experts).
  bool whole() const {
    return m_shard.tpSize == 1 && m_shard.firstUnit == 0 && m_shard.lastUnit == m_wholeUnits - 1;
  }
  // Weight i of this model's ParamSet in the whole model.
  const ParamSlice& sliceOf(int i) const { return m_slices.at(size_t(i)); }
  int64_t wholeNumel() const { return m_wholeNumel; }
  // Copies each weight's slice between this model and `wholeFlat`, a buffer laid out like the
  // whole model's flat parameters: toWhole writes this shard's values into it (weights held
  // whole only when `replicatedToo`), else reads them from it. `shardFlat`: a buffer laid out
  // like this shard's flat parameters (optimizer moments) instead of the parameters. Host
  // buffers only: on a GPU pass a host `shardFlat` (the parameters downloaded, say).
  void copySlices(float* wholeFlat, bool toWhole, bool replicatedToo = true,
                  float* shardFlat = nullptr);

 protected:
  // Rounds n activations at `values` to the stored dtype (nothing in fp32).
  void stored(float* values, int64_t n) const;
  // Sets m_shard to `shard`, lastUnit resolved against the whole model's `units`;
  // std::invalid_argument when its units lie outside 0..units-1 or its tensor-parallel slice is
  // not one of tpSize.
  void resolveShard(ModelShard shard, int units);
  // Once the ParamSet is allocated: where each weight sits in `whole`, the whole model's
  // ParamSet (the same names). A weight whose shape differs is cut along the dimension that
  // differs, slice m_shard.tpRank of it; groupsOf(name) says into how many parts that dimension
  // falls (ParamSlice::groups).
  void sliceFrom(const ParamSet& whole, const std::function<int(const std::string&)>& groupsOf);
  // The shard's weights from the whole model's (host) parameters, onto the shard's device.
  void takeSlicesOf(ParamSet& whole);

  ParamSet m_ps;
  ModelShard m_shard;
  int m_wholeUnits = 0;  // units of the whole model
  std::vector<ParamSlice> m_slices;  // per weight of m_ps
  int64_t m_wholeNumel = 0;          // P of the whole model
  Dtype m_stored = Dtype::Fp32;      // the activations' dtype (storeActivationsIn)
};

struct RunConfig;
struct Dataset;
// The model of a run (--model mlp or gpt, its sizes from the config, its input and output sizes
// from the data), drawn from --seed, its buffers on `compute` (null: the CPU). Every rank that
// makes it gets the same weights; `shard`: only that part of them; initialise = false: zero
// weights, for buffers about to be filled.
std::unique_ptr<Model> makeModel(const RunConfig& config, const Dataset& data,
                                 MemoryTracker* tracker, const Compute* compute,
                                 const ModelShard& shard = {}, bool initialise = true);
// P of the run's model (every expert of an MoE counted once).
int64_t parameterCountOf(const RunConfig& config, const Dataset& data);
// The model's arithmetic for one sample's forward and backward, in flops, as MFU counts it
// (Chowdhery et al. 2022, PaLM appendix B; lessons/reference/metrics.md): 6 per parameter a
// sample uses (2 forward, 4 backward), so 6P for the MLP and, with experts, P less the experts
// a token's top-k skips; for the GPT, per token 6P + 12 L C T (attention's scores and weighted
// sum, 4 L C T forward, twice that backward, causal mask not discounted), times T tokens. What
// the step really executes (recomputation, the optimizer, padding) is not counted.
double modelFlopsPerSample(const RunConfig& config, const Dataset& data);

}  // namespace paralab
