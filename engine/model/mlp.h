// The MLP every lesson trains: input projection 784 -> H, L residual blocks of
// [LayerNorm -> Linear H->4H -> GELU -> Linear 4H->H] + residual, classifier H -> 10,
// softmax cross-entropy. The block is the Transformer's FFN: what tensor and sequence
// parallelism split later (Megatron's column-then-row pair). An MlpShard builds only part of
// it: a pipeline stage's units, each FFN cut over the tensor-parallel ranks (model_parallel.cpp).
// The model runs on the rank's Compute (its device and GEMM); inputs and labels are host
// memory, uploaded per call on a GPU. See tests/engine/tst_model.cpp, tst_model_parallel.cpp,
// tst_kernel_choice.cpp and tst_cuda_training.cpp.
#pragma once
#include <memory>
#include <vector>

#include "model/layers.h"
#include "model/model.h"

namespace paralab {

struct MlpShape {
  int input = 784;
  int hidden = 128;
  int layers = 2;
  int classes = 10;
  int64_t parameterCount() const;  // P, the number every memory formula starts from
};

// Which part of the model one rank builds (tensor and pipeline parallelism): units
// [firstUnit, lastUnit] (0 = in_proj, 1..L = blocks, L+1 = classifier), each block's FFN cut
// over tpSize ranks as Megatron-LM cuts it (Shoeybi et al. 2019): fc1's output columns and
// fc2's input rows, slice tpRank of tpSize. The default is the whole model.
struct MlpShard {
  int tpRank = 0, tpSize = 1;
  int firstUnit = 0, lastUnit = -1;  // -1: through the classifier
};

// Where one of a shard's weights sits in the whole model: the whole weight's shape and offset
// in the whole model's flat buffer, and the rows (dim 0) or columns (dim 1) [begin, end) this
// shard holds (dim -1: the whole weight).
struct ParamSlice {
  Shape whole;
  int64_t wholeOffset = 0;
  int dim = -1;
  int64_t begin = 0, end = 0;
};

class Mlp : public Model {
 public:
  // Every shard draws the whole model from the seed and keeps its part, so any layout starts
  // from the serial model's weights. initialise = false leaves the weights zero (a model whose
  // buffers are about to be filled, e.g. for evaluation). `compute`: where it runs and with
  // which GEMM (null: Compute::host()).
  Mlp(const MlpShape& shape, uint64_t seed, MemoryTracker* tracker, const MlpShard& shard = {},
      bool initialise = true, const Compute* compute = nullptr);

  // Forward over a batch (whole model only); keeps the activations for backward. Returns the
  // SUM of the per-sample losses; gradients are scaled by 1 / `normalizer` (the global batch).
  // x [batch, input] and labels are host memory.
  double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                     UnitHooks* hooks = nullptr) override;
  // Accumulates (+=) parameter gradients of the last forwardLoss.
  void backward(UnitHooks* hooks = nullptr) override;
  // Logits only: the correct arg-max predictions and the loss (whole model only).
  Evaluation evaluate(const float* x, const int* labels, int batch,
                      UnitHooks* hooks = nullptr) override;
  // Logits only, for evaluation. Returns the number of correct arg-max predictions.
  int countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks = nullptr);
  int numUnits() const override { return int(m_blocks.size()) + 2; }
  const MlpShape& shape() const { return m_shape; }

  // [SECTION] The parts, for strategies that run them one by one (tensor_parallel.cpp).
  struct Block {
    LayerNorm ln;
    Linear fc1, fc2;
  };
  const MlpShard& shard() const { return m_shard; }  // lastUnit resolved
  bool whole() const;
  bool hasUnit(int unit) const { return unit >= m_shard.firstUnit && unit <= m_shard.lastUnit; }
  Linear& inProj() { return m_in.at(0); }         // needs hasUnit(0)
  Linear& classifier() { return m_cls.at(0); }    // needs hasUnit(L + 1)
  Block& block(int l) { return m_blocks.at(size_t(l - m_firstBlock)); }  // global block index
  int firstBlock() const { return m_firstBlock; }
  int endBlock() const { return m_firstBlock + int(m_blocks.size()); }
  // Weight i of this model's ParamSet in the whole model.
  const ParamSlice& sliceOf(int i) const { return m_slices.at(size_t(i)); }
  int64_t wholeNumel() const { return m_shape.parameterCount(); }
  // Copies each weight's slice between this model and `wholeFlat`, a buffer laid out like the
  // whole model's flat parameters: toWhole writes this shard's values into it (weights held
  // whole only when `replicatedToo`), else reads them from it. `shardFlat`: a buffer laid out
  // like this shard's flat parameters (optimizer moments) instead of the parameters. Host
  // buffers only: on a GPU pass a host `shardFlat` (the parameters downloaded, say).
  void copySlices(float* wholeFlat, bool toWhole, bool replicatedToo = true,
                  float* shardFlat = nullptr);

 private:
  // Activations of one batch, [batch, width] each, sized for the largest batch seen.
  struct Acts {
    int capacity = 0;
    Tensor x;                         // input [B, 784]
    Tensor labels;                    // GPU: [B] int32 labels, kept in a float tensor's bytes
    std::vector<Tensor> a;            // residual stream: a[0] after in_proj ... a[L]
    std::vector<Tensor> ln, mean, rstd, h, g;  // per block: LN out, stats, fc1 out, GELU out
    Tensor logits, dlogits;
    Tensor da, dtmp, dh;              // backward scratch [B, H], [B, H], [B, 4H] (workspace)
  };
  void ensureCapacity(int batch);
  void forwardTo(const float* x, int batch, UnitHooks* hooks);
  const int* labelsHere(const int* labels, int batch);  // on the model's device

  MlpShape m_shape;
  MlpShard m_shard;
  MemoryTracker* m_tracker;
  const Compute* m_compute;
  std::vector<Linear> m_in;   // one, or none on a shard without unit 0
  int m_firstBlock = 0;
  std::vector<Block> m_blocks;
  std::vector<Linear> m_cls;  // one, or none
  std::vector<ParamSlice> m_slices;  // per weight of m_ps
  Acts m_acts;
  int m_batch = 0;
};

}  // namespace paralab
