// One pipeline stage of a model, tensor-parallel within the stage: what model_parallel.cpp asks
// of it, whichever model it is. A stage runs one micro-batch at a time, forward and backward,
// on the rank's Compute, with the tensor-parallel (and sequence-parallel) exchanges inside.
// The MLP's stage is in tensor_parallel.cpp, the GPT's in gpt_parallel.cpp; makeStage picks.
// See tests/engine/tst_model_parallel.cpp and tst_gpt.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "metrics/span_recorder.h"
#include "model/model.h"
#include "run_choices.h"

namespace paralab {

class Communicator;
class Compute;
class GradSync;

// Rows of one micro-batch as one rank sees them. A row is what the tensor-parallel region
// computes one of at a time: a sample of the MLP, a token of the GPT (perSample per window).
struct MicroRows {
  int rows = 0;   // samples in the micro-batch
  int perSample = 1;  // region rows per sample
  int full = 0;   // rows the tensor-parallel region computes: rows x perSample, or (SP, MLP)
                  // rounded up to a multiple of T so that reduce-scatter gets equal blocks
                  // (padding rows are zero and get zero gradients)
  int local = 0;  // rows of the residual stream this rank holds: full, or (SP) full / T
  int first = 0;  // SP: the first of them within the micro-batch (tp rank x local); else 0
};

// What one micro-batch leaves on a stage between its forward and its backward (its
// activations), in the memory of the rank's Compute. Each stage adds its buffers.
struct MicroActs {
  virtual ~MicroActs() = default;
  int micro = 0;     // its index in the step (span labels)
  MicroRows r;       // the rows in use (the buffers may hold more: sized for the largest)
  int capacity = 0;  // samples the buffers were allocated for
  int64_t bytes = 0; // all of its buffers
  // One buffer of the layout, made by `make` and counted in `bytes`.
  Tensor add(Shape s, const std::function<Tensor(Shape)>& make) {
    bytes += numelOf(s) * int64_t(sizeof(float));
    return make(std::move(s));
  }
};

class Stage {
 public:
  // `tp`: the rank's tensor-parallel group (size 1: none); `sp`: sequence parallelism over it.
  // `compute`: where the shard's parameters live and its math runs; every buffer is made by it,
  // and the group's collectives are given its device. `memory` counts the scratch buffers,
  // `spans` records the compute.
  Stage(Communicator& tp, bool sp, Compute& compute, MemoryTracker* memory, SpanRecorder* spans);
  virtual ~Stage() = default;
  virtual MicroRows rowsOf(int samples) const = 0;
  // The activation buffers of micro-batch `micro`, of `samples` samples (counted as
  // Activations by `memory`, which may be null).
  std::unique_ptr<MicroActs> allocate(int micro, int samples, MemoryTracker* memory) const;
  // The bytes allocate() would take for `samples` samples, without allocating (holdings).
  int64_t microBytes(int samples) const;
  // Puts buffers allocated for at least `samples` samples to use for micro-batch `micro`.
  void reuse(MicroActs& m, int micro, int samples) const;
  // Floats in one message to or from a neighbouring stage: the residual stream rows this rank
  // holds (SP: its 1/T of them) x the hidden width.
  virtual int64_t boundaryFloats(int samples) const = 0;
  virtual float* input(MicroActs& m) const = 0;   // filled by recv (stage > 0)
  virtual float* output(MicroActs& m) const = 0;  // sent on (not last stage)
  // Whether forward reads the batch's rows `x` (else it may be given null).
  virtual bool readsInputs() const = 0;

  // Forward of the stage's units on one micro-batch. x: its rows as the Dataset lays them out,
  // labels: theirs, both host memory (uploaded on a GPU). Returns the sum of the per-sample
  // losses on the last stage, else 0; gradients are scaled by 1 / normalizer (the global
  // batch, so micro-batches and dp ranks add up). On a GPU the last stage waits for its stream
  // (the loss is copied back). `hooks` run around each unit (the shard's ParamSet units),
  // outside the compute spans: where data parallelism gathers or syncs (grad_sync.h).
  virtual double forward(int64_t step, MicroActs& m, const float* x, const int* labels,
                         double normalizer, UnitHooks* hooks = nullptr) = 0;
  // Accumulates (+=) the weight gradients. dOut: gradient of the stage output (not on the last
  // stage); dIn: written with the gradient of the stage input (not on the first). Both are
  // memory of the rank's Compute; on a GPU dIn is written on its stream (sync before sending).
  virtual void backward(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                        UnitHooks* hooks = nullptr) = 0;
  // The backward in its two halves, for a schedule that runs them apart (Qi et al. 2023; a
  // PipeStep's BackwardInput and BackwardWeight). B writes dIn as backward does and no weight
  // gradient: each unit runs between hooks->beforeForward and afterForward, where data
  // parallelism gathers the weights it reads (ZeRO-3). It keeps in `m` what W reads: each
  // GEMM's and LayerNorm's output gradient (counted in m.bytes, laid out only after
  // splitBackward(true)). W then accumulates (+=) the weight gradients, each unit between
  // hooks->beforeBackward and afterBackward, where the gradients are made and synced
  // (grad_sync.h: buckets, ZeRO-2/3's reduce-scatter). B then W of one micro-batch is backward,
  // bit for bit; backward is each unit's B then its W.
  virtual void backwardInput(int64_t step, MicroActs& m, const float* dOut, float* dIn,
                             UnitHooks* hooks = nullptr) = 0;
  virtual void backwardWeight(int64_t step, MicroActs& m, UnitHooks* hooks = nullptr) = 0;
  // Mixed precision (train/precision.h): the dtype the stage's kept activations are stored in,
  // each rounded where it is written, at the points the serial model rounds (model.h); set
  // before the first allocate. Activation gradients, LayerNorm statistics, the logits and
  // the sums the tensor-parallel exchanges make stay fp32 (their sum is rounded once, where
  // it is stored, as a GEMM's fp32 accumulator is).
  void storeActivationsIn(Dtype d) { m_stored = d; }
  // Whether the micro-batches' buffers (allocate, microBytes) hold what B keeps for W.
  void splitBackward(bool on) { m_split = on; }
  bool splitsBackward() const { return m_split; }
  // After the data-parallel sum of the step's gradients (GradSync::reduce). SP: sums the
  // LayerNorm gradients over the group, where `sync` holds them.
  virtual void finishBackward(GradSync& sync) = 0;
  // The last stage's tp rank 0 (its tp partners compute the same loss).
  virtual bool reportsLoss() const = 0;
  // The bytes of the buffers the backward recomputes activations into (the GPT's --recompute):
  // one set, sized for micro-batches of `samples` samples and used by each in turn, counted as
  // Workspace; 0 when nothing is recomputed (holdings).
  virtual int64_t recomputedBytes(int /*samples*/) const { return 0; }

 protected:
  // The buffers of one micro-batch of `samples` samples, each made by MicroActs::add with
  // `make` (one layout for allocate() and microBytes()); micro, rows and capacity set.
  virtual std::unique_ptr<MicroActs> layout(int micro, int samples,
                                            const std::function<Tensor(Shape)>& make) const = 0;
  // Sets what every layout starts with: the micro-batch, its rows, the capacity.
  void begin(MicroActs& m, int micro, int samples) const;
  // Runs run(j) for the stage's `blocks` blocks in order (backward: in reverse), each between
  // its unit's hooks; block 0 is the shard's unit `firstUnit`.
  static void eachBlock(int blocks, int firstUnit, bool forward, UnitHooks* hooks,
                        const std::function<void(int)>& run);
  // The same in reverse, each between the hooks of a backward's half: B between the forward
  // hooks (the weights it reads), W between the backward ones (its gradients).
  static void eachBlockBack(int blocks, int firstUnit, bool weight, UnitHooks* hooks,
                            const std::function<void(int)>& run);
  // run() between unit `unit`'s hooks for B (`weight` false) or W, as eachBlockBack.
  static void inUnit(int unit, bool weight, UnitHooks* hooks, const std::function<void()>& run);
  // Before a collective on the stage's buffers: the kernels that wrote them are done, and none
  // still reads what the communicator (on its own stream) is about to write. Nothing on the CPU.
  void ready() const;
  Device device() const;  // of the stage's buffers, as collectives take it
  // Rounds n kept activations at `values` to the stored dtype (nothing in fp32).
  void stored(float* values, int64_t n) const;
  // Where a layout makes an fp32 buffer beside 16-bit ones (statistics, logits, token ids):
  // `make` counted at 4 bytes a value by the stage's tracker while it runs.
  Tensor fp32(const std::function<Tensor(Shape)>& make, Shape s) const;

  Communicator& m_tp;
  bool m_sp;   // sequence parallelism, on a group of more than one rank
  int m_T;     // tp degree
  Compute& m_compute;
  MemoryTracker* m_memory;
  SpanRecorder* m_spans;
  bool m_split = false;  // splitBackward
  Dtype m_stored = Dtype::Fp32;  // storeActivationsIn
};

// The stage that runs `shard` (an Mlp or a Gpt shard) over the tensor-parallel group `tp`
// (size 1: no tensor parallelism), with sequence parallelism when `sp`. Every buffer is made
// by `compute`, whose device the group's collectives are given. `cp` (the GPT only; null: none):
// the context-parallel group, each window's chunks `zigzag` or contiguous (ring_attention.h),
// its attention the ring or Ulysses (`cpKind`, context_attention.h).
std::unique_ptr<Stage> makeStage(Model& shard, Communicator& tp, bool sp, Compute& compute,
                                 MemoryTracker* memory, SpanRecorder* spans,
                                 Communicator* cp = nullptr, bool zigzag = true,
                                 CpKind cpKind = CpKind::Ring);

}  // namespace paralab
