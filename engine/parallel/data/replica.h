// ReplicaStrategy: what every data-parallel strategy shares — a model replica on this rank,
// this rank's slice of the global batch, forward and backward with a span per unit, and the
// optimizer, all on the rank's Compute (its device and GEMM). Subclasses add the collectives.
// See engine/parallel/data/data_parallel.cpp and grad_sync.cpp.
#pragma once
#include <memory>
#include <vector>

#include "device/compute.h"
#include "optim/optimizer.h"
#include "parallel/strategy.h"
#include "train/faults.h"
#include "train/precision.h"

namespace paralab {

class ReplicaStrategy : public Strategy {
 public:
  Model& beginEval() override { return *m_model; }
  // The model states (addModelStates) and this rank's slice of the batch and its activations.
  RankHoldings holdings() const override;
  // A replica with one optimizer over the whole model: copies them (rank 0 saves).
  void saveState(TrainingState& state) override;
  void loadState(const TrainingState& state) override;

 protected:
  explicit ReplicaStrategy(RankContext& ctx);

  // Copies this rank's slice of `batch` (balanced contiguous chunks) into the input buffers;
  // returns its size. Each sample's loss is divided by `lossOver` (0: the batch's size; a
  // micro-batch of --accumulate passes the global batch's). A Data span.
  int takeSlice(int64_t step, const std::vector<int>& batch, int lossOver = 0);
  // Forward (with the loss) and backward of the slice, a span per unit; hooks run between
  // units, outside the compute spans. Gradients are zeroed first unless the hooks' owner does
  // it (`zeroGrads` false). Then, after the step's last micro-batch (`lastMicro`), --straggler
  // and --fail act on the step's measured compute (train/faults.h). Returns the loss sum.
  double forwardBackward(int64_t step, UnitHooks* hooks = nullptr, bool zeroGrads = true,
                         bool lastMicro = true);
  // What holdings() lists of the parameters, gradients and optimizer state: the whole model,
  // and the optimizer state made by makeOptimizer when it covers the whole model. Sharding
  // subclasses override.
  virtual void addModelStates(std::vector<HeldSlice>& items) const;
  // An optimizer over `numel` parameters (the rank's shard, or all of them).
  std::unique_ptr<Optimizer> makeOptimizer(int64_t numel) const;
  // The optimizer over the whole flat buffer, for saveState/loadState (null: the subclass
  // shards it and overrides them), and where the parameters live (the model's flat buffer).
  virtual Optimizer* fullOptimizer() { return nullptr; }
  virtual float* fullParams() { return m_model->params().params().data(); }
  // One optimizer update in an Optimizer span.
  void update(int64_t step, Optimizer& opt, float* params, const float* grads);
  // Where this rank's buffers live and its math runs (ctx.compute, or the CPU's vendor GEMM).
  Compute& compute() { return *m_ctx.compute; }
  // The device of this rank's buffers, as collectives take it. Call compute().sync() before a
  // collective: the communicator reads and writes them from its own stream.
  Device device() const { return m_ctx.compute->device(); }

  std::unique_ptr<Compute> m_ownCompute;  // when the context brought none
  RankContext m_ctx;
  RankFaults m_faults;  // this rank's --straggler and --fail
  MixedPrecision m_precision;  // --precision bf16|fp16: loss scale, gradient rounding, counts
  std::unique_ptr<Model> m_model;
  int m_globalBatch = 0;  // samples in the whole step (the loss normalizer)
  int m_slice = 0;        // samples of it on this rank (of the micro-batch, with --accumulate)
  int64_t m_microComputeNs = 0;  // compute of the step's micro-batches so far (faults act on it)
  mutable int64_t m_optimizerFloats = 0;  // parameters covered by the optimizers made here
  std::vector<float> m_x;
  std::vector<int> m_labels;
};

// A rank's contiguous chunk q of n over `count` items: [begin, begin + len), lengths balanced.
inline int64_t shardBegin(int q, int n, int64_t count) { return q * count / n; }
inline int64_t shardLen(int q, int n, int64_t count) {
  return shardBegin(q + 1, n, count) - shardBegin(q, n, count);
}

}  // namespace paralab
