// The mixture-of-experts MLP (--model moe): the residual MLP of mlp.h with each block's FFN
// replaced by the MoE FFN of moe_ffn.h — x + MoE(LN(x)): E expert FFNs behind a learned router,
// top-k routing, an expert capacity, the Switch load-balancing loss. Experts may sit on other
// ranks (expert parallelism): the strategy then gives the model an ExpertExchange
// (moeParts()->exchange, engine/parallel/expert/expert_parallel.cpp). The model runs on the rank's
// Compute, the CPU or a GPU. One sample is one token.
// See tests/engine/tst_moe.cpp and tst_cuda_moe.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "model/layers.h"
#include "model/model.h"
#include "model/moe_ffn.h"

namespace paralab {

struct MoeShape {
  int input = 784;
  int hidden = 128;
  int layers = 2;
  int classes = 10;
  int experts = 4;
  int topk = 1;
  // Expert capacity and the load-balancing loss: see MoeFfnShape. One sample is one token.
  double capacityFactor = 1.25;
  double auxLoss = 0;
  MoeFfnShape ffn() const { return {hidden, experts, topk, capacityFactor, auxLoss}; }
  int64_t expertParameterCount() const { return ffn().expertParameterCount(); }
  int64_t parameterCount() const;  // the whole model, every expert of every block
};

class Moe : public Model {
 public:
  // `compute`: where the model runs and with which GEMM (null: Compute::host()). x and labels
  // of the calls below are host memory, uploaded per call on a GPU.
  Moe(const MoeShape& shape, uint64_t seed, MemoryTracker* tracker, ExpertPlacement placement = {},
      const Compute* compute = nullptr);

  // As Model: the SUM of the per-sample cross-entropies; gradients of backward() are scaled by
  // 1 / `normalizer` (the global batch). The load-balancing loss is in stats(); backward()
  // includes its gradient.
  double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                     UnitHooks* hooks = nullptr) override;
  void backward(UnitHooks* hooks = nullptr) override;
  // Routes without a capacity limit (nothing dropped).
  Evaluation evaluate(const float* x, const int* labels, int batch,
                      UnitHooks* hooks = nullptr) override;
  int countCorrect(const float* x, const int* labels, int batch, UnitHooks* hooks = nullptr) {
    return int(evaluate(x, labels, batch, hooks).correct);
  }

  int numUnits() const override { return int(m_blocks.size()) + 2; }  // in_proj, blocks, classifier
  MoeParts* moeParts() override { return &m_moe; }
  const MoeShape& shape() const { return m_shape; }
  const ExpertPlacement& placement() const { return m_moe.placement; }
  int localExperts() const { return m_moe.localExperts(); }
  int firstExpert() const { return m_moe.firstExpert(); }
  const std::vector<std::pair<int64_t, int64_t>>& expertRanges() const { return m_moe.expertRanges; }
  const std::vector<std::pair<int64_t, int64_t>>& denseRanges() const { return m_moe.denseRanges; }
  const MoeStats& stats() const { return m_moe.stats; }
  const BlockRouting& routing(int block) const { return m_blocks.at(size_t(block)).ffn.routing(); }

 private:
  struct Block {
    LayerNorm ln;
    MoeFfn ffn;
  };
  struct Acts {
    int capacity = 0;
    Tensor x;               // [B, input]
    std::vector<Tensor> a;  // residual stream a[0..L], [B, H]
    std::vector<Tensor> ln, mean, rstd;  // per block: LN's output [B, H] and stats [B]
    Tensor logits, dlogits;
    Tensor da, dln;  // [B, H] x 2
    Tensor labels;   // GPU: [B] int32 labels, kept in a float tensor's bytes
  };
  bool onGpu() const;
  void ensureCapacity(int batch);
  const int* labelsHere(const int* labels, int batch);  // on the model's device
  void forwardTo(const float* x, int batch, bool train, UnitHooks* hooks);

  MoeShape m_shape;
  MemoryTracker* m_tracker;
  const Compute* m_compute;
  MoeParts m_moe;
  Linear m_in;
  std::vector<Block> m_blocks;
  Linear m_cls;
  Acts m_acts;
  int m_batch = 0;
};

}  // namespace paralab
