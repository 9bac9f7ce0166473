// The MLP every lesson trains: input projection 784 -> H, L residual blocks of
// [LayerNorm -> Linear H->4H -> GELU -> Linear 4H->H] + residual, classifier H -> 10,
// softmax cross-entropy. The block is the Transformer's FFN: what tensor and sequence
// parallelism split later (Megatron's column-then-row pair). See tests/engine/tst_model.cpp.
#pragma once
#include <memory>
#include <vector>

#include "model/layers.h"
#include "model/param_set.h"

namespace paralab {

struct MlpShape {
  int input = 784;
  int hidden = 128;
  int layers = 2;
  int classes = 10;
  int64_t parameterCount() const;  // P, the number every memory formula starts from
};

// Called around each unit (0 = in_proj, 1..L = blocks, L+1 = classifier) as the passes
// reach it: where strategies gather sharded weights (ZeRO-3), start gradient all-reduces
// while backward goes on (bucketed data parallelism), or reduce-scatter gradients (ZeRO-2).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void beforeForward(int /*unit*/) {}
  virtual void afterForward(int /*unit*/) {}
  virtual void beforeBackward(int /*unit*/) {}
  virtual void afterBackward(int /*unit*/) {}  // the unit's gradients are final
};

class Mlp {
 public:
  Mlp(const MlpShape& shape, uint64_t seed, MemoryTracker* tracker);

  // Forward over a batch; keeps the activations for backward. Returns the SUM of the
  // per-sample losses; gradients are scaled by 1 / `normalizer` (the global batch).
  double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                     UnitHooks* hooks = nullptr);
  // Accumulates (+=) parameter gradients of the last forwardLoss.
  void backward(UnitHooks* hooks = nullptr);
  // Logits only, for evaluation. Returns the number of correct arg-max predictions.
  int countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks = nullptr);
  int numUnits() const { return int(m_blocks.size()) + 2; }

  ParamSet& params() { return m_ps; }
  const MlpShape& shape() const { return m_shape; }

 private:
  struct Block {
    LayerNorm ln;
    Linear fc1, fc2;
  };
  // Activations of one batch, [batch, width] each, sized for the largest batch seen.
  struct Acts {
    int capacity = 0;
    Tensor x;                         // input [B, 784]
    std::vector<Tensor> a;            // residual stream: a[0] after in_proj ... a[L]
    std::vector<Tensor> ln, mean, rstd, h, g;  // per block: LN out, stats, fc1 out, GELU out
    Tensor logits, dlogits;
    Tensor da, dtmp, dh;              // backward scratch [B, H], [B, H], [B, 4H] (workspace)
  };
  void ensureCapacity(int batch);
  void forwardTo(const float* x, int batch, UnitHooks* hooks);

  MlpShape m_shape;
  MemoryTracker* m_tracker;
  ParamSet m_ps;
  Linear m_in;
  std::vector<Block> m_blocks;
  Linear m_cls;
  Acts m_acts;
  int m_batch = 0;
};

}  // namespace paralab
