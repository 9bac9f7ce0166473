// The MLP's pipeline stage (stage.h): its units run one micro-batch at a time, each block's FFN
// split over the tensor-parallel group (Megatron-LM, Shoeybi et al. 2019), optionally with sequence
// parallelism (Korthikanti et al. 2022), on the rank's Compute: the CPU, or its GPU with every
// buffer in device memory. Its exchanges are Megatron's pair (column_row.h); the strategy that
// drives stages is model_parallel.cpp. See tests/engine/tst_model_parallel.cpp and
// tst_cuda_model_parallel.cpp.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "model/mlp.h"
#include "parallel/tensor/column_row.h"

namespace paralab {

// The output gradients one block's B leaves for its W: fc2's [full, H] (SP: all-gathered),
// fc1's after GELU [full, 4H/T], the LayerNorm's [local, H].
struct MlpBlockGrads {
  Tensor dy2, dh, dln;
};

// What one micro-batch leaves on an MLP stage between its forward and its backward.
struct MlpMicroActs : MicroActs {
  Tensor x;       // first stage: the input rows [rows, D]
  Tensor labels;  // last stage, GPU only: [rows] int32 labels, kept in a float tensor's bytes
  // The residual stream into each block of the stage and out of the last [local, H].
  std::vector<Tensor> a;
  // Per block: the LayerNorm output, fc1's input [full, H] (SP: all-gathered).
  std::vector<Tensor> ln;
  std::vector<Tensor> mean, rstd;  // per block: LayerNorm statistics [local]
  std::vector<Tensor> h, g;        // per block: fc1 output and GELU output [full, 4H/T]
  Tensor aFull;            // last stage, SP: the gathered residual the classifier reads [full, H]
  Tensor logits, dlogits;  // last stage [rows, classes]
  // A split backward (Stage::splitBackward): what B keeps for W, per block, and on the first
  // stage the input projection's output gradient [full, H] (SP: all-gathered).
  std::vector<MlpBlockGrads> grads;
  Tensor dProj;
};

class TensorParallelStage final : public ColumnRowStage {
 public:
  // `tp`: this rank's tensor-parallel group (size 1: no tensor parallelism, the plain stage).
  // `compute`: where the shard's parameters live and its math runs; every buffer here is made
  // by it, and the group's collectives are given its device.
  TensorParallelStage(Mlp& shard, Communicator& tp, bool sp, Compute& compute,
                      MemoryTracker* memory, SpanRecorder* spans);

  MicroRows rowsOf(int rows) const override;
  int64_t boundaryFloats(int rows) const override { return int64_t(rowsOf(rows).local) * m_H; }
  float* input(MicroActs& m) const override { return acts(m).a.front().data(); }
  float* output(MicroActs& m) const override { return acts(m).a.back().data(); }
  bool readsInputs() const override { return m_model.hasUnit(0); }
  double forward(int64_t step, MicroActs& m, const float* x, const int* labels, double normalizer,
                 UnitHooks* hooks = nullptr) override;
  void backward(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                UnitHooks* hooks = nullptr) override;
  void backwardInput(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                     UnitHooks* hooks = nullptr) override;
  void backwardWeight(int64_t step, MicroActs& m, UnitHooks* hooks = nullptr) override;
  void finishBackward(GradSync& sync) override;
  bool reportsLoss() const override;

 private:
  int unitOf(int globalUnit) const { return globalUnit - m_model.shard().firstUnit; }
  static MlpMicroActs& acts(MicroActs& m) { return static_cast<MlpMicroActs&>(m); }
  void blockForward(int64_t step, int j, MlpMicroActs& m);
  // The halves of the classifier's, block j's and the input projection's backward. dA: the
  // gradient of the residual stream, this rank's rows; `k`: where B leaves what W reads.
  void classifierInput(int64_t step, MlpMicroActs& m, float* dA);
  void classifierWeight(int64_t step, MlpMicroActs& m);
  void blockInput(int64_t step, int j, MlpMicroActs& m, float* dA, MlpBlockGrads& k);
  void blockWeight(int64_t step, int j, MlpMicroActs& m, const MlpBlockGrads& k);
  void inProjWeight(int64_t step, MlpMicroActs& m, const float* dY);
  void ensureScratch(const MicroRows& r);
  std::unique_ptr<MicroActs> layout(int micro, int rows,
                                    const std::function<Tensor(Shape)>& make) const override;

  Mlp& m_model;
  int m_H, m_F;  // hidden width, fc1 outputs per rank (4H / T)
  // Backward (and SP forward) scratch, sized for the largest micro-batch: Workspace.
  int m_capacity = 0;
  Tensor m_dA, m_dtmp, m_dFull, m_dln, m_y;
  Tensor m_normDiscard;   // [2H]: the LayerNorm weights' gradients B makes and drops
  MlpBlockGrads m_grads;  // backward (unsplit): one block's B leaves them for its W at once
};

}  // namespace paralab
