// One pipeline stage's units run one micro-batch at a time, each block's FFN split over the
// tensor-parallel group (Megatron-LM, Shoeybi et al. 2019), optionally with sequence
// parallelism (Korthikanti et al. 2022), on the rank's Compute: the CPU, or its GPU with every
// buffer in device memory. The collectives are in tensor_parallel.cpp; the strategy that drives
// stages is model_parallel.cpp. See tests/engine/tst_model_parallel.cpp and
// tst_cuda_model_parallel.cpp.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "metrics/span_recorder.h"
#include "model/mlp.h"

namespace paralab {

class Communicator;
class Compute;
class GradSync;

// Rows of one micro-batch as one rank sees them.
struct MicroRows {
  int rows = 0;   // samples in the micro-batch
  int full = 0;   // rows the tensor-parallel region computes: rows, or (SP) rows rounded up to a
                  // multiple of T so that reduce-scatter gets equal blocks (padding rows are zero
                  // and get zero gradients)
  int local = 0;  // rows of the residual stream this rank holds: full, or (SP) full / T
  int first = 0;  // SP: the first of them within the micro-batch (tp rank x local); else 0
};

// What one micro-batch leaves on a stage between its forward and its backward (Activations),
// in the memory of the rank's Compute.
struct MicroActs {
  int micro = 0;  // its index in the step (span labels)
  MicroRows r;    // the rows in use (the buffers may hold more: sized for the largest micro-batch)
  int capacity = 0;  // samples the buffers were allocated for
  Tensor x;          // first stage: the input rows [rows, D]
  Tensor labels;     // last stage, GPU only: [rows] int32 labels, kept in a float tensor's bytes
  // The residual stream into each block of the stage and out of the last [local, H].
  std::vector<Tensor> a;
  // Per block: the LayerNorm output, fc1's input [full, H] (SP: all-gathered).
  std::vector<Tensor> ln;
  std::vector<Tensor> mean, rstd;  // per block: LayerNorm statistics [local]
  std::vector<Tensor> h, g;        // per block: fc1 output and GELU output [full, 4H/T]
  Tensor aFull;            // last stage, SP: the gathered residual the classifier reads [full, H]
  Tensor logits, dlogits;  // last stage [rows, classes]
  int64_t bytes = 0;       // all of the above
};

class TensorParallelStage {
 public:
  // `tp`: this rank's tensor-parallel group (size 1: no tensor parallelism, the plain stage).
  // `compute`: where the shard's parameters live and its math runs; every buffer here is made
  // by it, and the group's collectives are given its device.
  TensorParallelStage(Mlp& shard, Communicator& tp, bool sp, Compute& compute,
                      MemoryTracker* memory, SpanRecorder* spans);

  MicroRows rowsOf(int rows) const;
  // The activation buffers of micro-batch `micro`, of `rows` samples (counted as Activations
  // by `memory`, which may be null).
  std::unique_ptr<MicroActs> allocate(int micro, int rows, MemoryTracker* memory) const;
  // The bytes allocate() would take for `rows` samples, without allocating (holdings).
  int64_t microBytes(int rows) const;
  // Puts buffers allocated for at least `rows` samples to use for micro-batch `micro`.
  void reuse(MicroActs& m, int micro, int rows) const;
  // Floats in one message to or from a neighbouring stage: the residual stream rows this rank
  // holds (SP: its 1/T of them) x H.
  int64_t boundaryFloats(int rows) const { return int64_t(rowsOf(rows).local) * m_H; }
  float* input(MicroActs& m) const { return m.a.front().data(); }  // filled by recv (stage > 0)
  float* output(MicroActs& m) const { return m.a.back().data(); }  // sent on (not last stage)

  // Forward of the stage's units on one micro-batch. x: its input rows (first stage), labels
  // (last stage), both host memory (uploaded on a GPU). Returns the sum of the per-sample
  // losses on the last stage, else 0; gradients are scaled by 1 / normalizer (the global
  // batch, so micro-batches and dp ranks add up). On a GPU the last stage waits for its stream
  // (the loss is copied back). `hooks` run around each unit (the shard's ParamSet units),
  // outside the compute spans: where data parallelism gathers or syncs (grad_sync.h).
  double forward(int64_t step, MicroActs& m, const float* x, const int* labels, double normalizer,
                 UnitHooks* hooks = nullptr);
  // Accumulates (+=) the weight gradients. dOut: gradient of the stage output [local, H] (not
  // on the last stage); dIn: written with the gradient of the stage input (not on the first).
  // Both are memory of the rank's Compute; on a GPU dIn is written on its stream (sync before
  // sending it).
  void backward(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                UnitHooks* hooks = nullptr);
  // After the data-parallel sum of the step's gradients (GradSync::reduce). SP: sums the
  // LayerNorm gradients over the group, where `sync` holds them.
  void finishBackward(GradSync& sync);
  bool reportsLoss() const;  // the last stage's tp rank 0 (its tp partners compute the same loss)

 private:
  int unitOf(int globalUnit) const { return globalUnit - m_model.shard().firstUnit; }
  void blockForward(int64_t step, int j, MicroActs& m);
  void blockBackward(int64_t step, int j, MicroActs& m, float* dA);
  void ensureScratch(const MicroRows& r);
  // The buffers of one micro-batch of `rows` samples, each made by `make` (one layout for
  // allocate() and microBytes()).
  std::unique_ptr<MicroActs> layout(int micro, int rows,
                                    const std::function<Tensor(Shape)>& make) const;
  // Before a collective on the stage's buffers: the kernels that wrote them are done, and none
  // still reads what the communicator (on its own stream) is about to write. Nothing on the CPU.
  void ready() const;
  Device device() const;  // of the stage's buffers, as collectives take it

  Mlp& m_model;
  Communicator& m_tp;
  bool m_sp;
  Compute& m_compute;
  int m_T, m_H, m_F;  // tp degree, hidden width, fc1 outputs per rank (4H / T)
  MemoryTracker* m_memory;
  SpanRecorder* m_spans;
  // Backward (and SP forward) scratch, sized for the largest micro-batch: Workspace.
  int m_capacity = 0;
  Tensor m_dA, m_dtmp, m_dFull, m_dln, m_dh, m_y;
};

}  // namespace paralab
