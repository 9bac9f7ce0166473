// The MLP every lesson trains: input projection 784 -> H, L residual blocks of
// [LayerNorm -> Linear H->4H -> GELU -> Linear 4H->H] + residual, classifier H -> 10,
// softmax cross-entropy. The block is the Transformer's FFN: what tensor and sequence
// parallelism split later (Megatron's column-then-row pair). A shard (ModelShard, model.h)
// builds only part of it: a pipeline stage's units, each FFN cut over the tensor-parallel ranks
// (model_parallel.cpp).
// The model runs on the rank's Compute (its device and GEMM); inputs and labels are host
// memory, uploaded per call on a GPU. See tests/engine/tst_model.cpp, tst_model_parallel.cpp,
// tst_kernel_choice.cpp and tst_cuda_training.cpp.
#pragma once
#include <functional>
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

class Mlp : public Model {
 public:
  // Every shard draws the whole model from the seed and keeps its part, so any layout starts
  // from the serial model's weights. initialise = false leaves the weights zero (a model whose
  // buffers are about to be filled, e.g. for evaluation). `compute`: where it runs and with
  // which GEMM (null: Compute::host()).
  Mlp(const MlpShape& shape, uint64_t seed, MemoryTracker* tracker, const ModelShard& shard = {},
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
  Linear& inProj() { return m_in.at(0); }         // needs hasUnit(0)
  Linear& classifier() { return m_cls.at(0); }    // needs hasUnit(L + 1)
  Block& block(int l) { return m_blocks.at(size_t(l - m_firstBlock)); }  // global block index
  int firstBlock() const { return m_firstBlock; }
  int endBlock() const { return m_firstBlock + int(m_blocks.size()); }

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
  // The forward through the logits; `inLastUnit` (the loss) runs inside the output layer's
  // hooks, so the spans around units hold all of the forward's work.
  void forwardTo(const float* x, int batch, UnitHooks* hooks,
                 const std::function<void()>& inLastUnit = {});
  const int* labelsHere(const int* labels, int batch);  // on the model's device

  MlpShape m_shape;
  MemoryTracker* m_tracker;
  const Compute* m_compute;
  std::vector<Linear> m_in;   // one, or none on a shard without unit 0
  int m_firstBlock = 0;
  std::vector<Block> m_blocks;
  std::vector<Linear> m_cls;  // one, or none
  Acts m_acts;
  int m_batch = 0;
};

}  // namespace paralab
