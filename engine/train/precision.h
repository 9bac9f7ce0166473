// Mixed precision (--precision bf16|fp16): which values are stored in 16 bits, which stay fp32,
// and fp16's loss scale (--loss-scale, --loss-scale-window). See tests/engine/tst_precision.cpp
// and lessons/reference/precision.md. Try: paralab-run --precision fp16 --json
//
// As Megatron-LM's mixed precision does (Micikevicius et al. 2018; Megatron's
// Float16OptimizerWithFloat16Params), with its byte accounting (2 + 4 + 4 + 8 = 18 a parameter
// with Adam):
//   16-bit: the parameters the layers read (rounded from the master copy after every update),
//     the activations each layer keeps for the backward (its output, rounded where it is
//     stored: LayerNorm's output, q/k/v, attention's probabilities and output, the FFN's
//     hidden and GELU values, the residual stream), and the weight gradients each unit's
//     backward ends with, each micro-batch's apart (rounded as a 16-bit GEMM would write them).
//   fp32: the master copy of the parameters the optimizer updates and its state; the gradient
//     buffer the rounded gradients are summed and all-reduced in (Megatron's main_grad with
//     accumulate_allreduce_grads_in_fp32: with --accumulate K each micro-batch's 16-bit
//     gradients are added into it, and the one sync of the step reads the fp32 sum); every GEMM's
//     sums (16-bit values widened, products
//     accumulated in fp32, as tensor cores accumulate); LayerNorm's mean and 1/std; the softmax
//     (attention's and the loss's) and the loss; the logits the loss reads; the activation
//     gradients flowing through the backward.
// Speed: ParaLab's CPU training kernels compute in fp32 on the widened 16-bit values, so a
// 16-bit run's memory and numerics are 16-bit and its speed is fp32's, with one exception: in a
// bf16 run on a CPU with AMX (kernels/cpu/gemm.h: gemm_bf16_for_training) every Linear's
// forward GEMM x W (the MLP's and the GPT's qkv, proj, fc1, fc2, the head, the experts' and the
// router's) runs in bf16 arithmetic (gemm_bf16: AMX's tdpbf16ps, fp32 sums), split over the
// rank's threads by rows. Both its operands are bf16 values there (W rounded from the master, x
// a kept activation), so the products are exact and only the order of the fp32 sums differs
// (tests/engine/tst_precision_bf16_gemm.cpp). The rest computes in fp32: attention's GEMMs
// (its softmax is fp32), every backward GEMM (the activation gradients are fp32; gemm_bf16
// would round them), fp16 runs (AMX-FP16 is not used), AVX512_BF16 without AMX (`paralab-bench
// gemm`: not faster than sgemm), PARALAB_SIMD below avx512, --kernel other than vendor, and
// PARALAB_BF16_GEMM=off. The one switch is model/layers.h's forwardGemmInBf16.
// On a GPU (--device cuda --kernel tensor-core) the same values are rounded by a kernel
// on the rank's stream and the GEMMs run on bf16/fp16 tensor cores summing in fp32
// (cuda/gemm.h); the rest computes in fp32 there too. Collectives move fp32 words.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "memory/memory_tracker.h"
#include "model/model.h"
#include "tensor.h"
#include "train/training_state.h"

namespace paralab {

class Communicator;
class Compute;
struct HeldGradients;
struct RankStep;

bool sixteenBit(Dtype d);  // bf16 or fp16
int valueBytes(Dtype d);   // bytes a stored value takes: 2 (bf16, fp16) or 4
// Rounds n values in place to d (nothing for fp32); returns the entries flushed to zero.
int64_t roundStored(Dtype d, float* values, int64_t n);
// The same on `c`'s device (the GPU: a rounding kernel on the rank's stream), not counted.
void roundStored(const Compute& c, Dtype d, float* values, int64_t n);
// Sets `tracker` to count each category at the width mixed precision stores it in: parameters
// and activations 2 bytes a value, the rest 4 (master, gradients, optimizer state).
void countStoredBytes(MemoryTracker* tracker, Dtype d);
// The one line refusing a configuration that cannot train at its --precision yet, or nothing.
std::optional<std::string> precisionRefusal(const RunConfig& c);
// What a 16-bit run's description says of its speed; "" for fp32.
std::string precisionNote(const RunConfig& c);
// --loss-scale: 0 for "dynamic", else the fixed scale (>= 1); throws ConfigError naming it.
double parseLossScale(const std::string& text);

// fp16's loss scale (Micikevicius et al. 2018; Megatron's DynamicGradScaler): the loss is
// multiplied by S before the backward, so gradients below fp16's least subnormal (2^-24)
// survive their rounding; the summed gradients are divided by S before the update. Dynamic: S
// starts at 2^16, halves on an overflow (an inf or NaN gradient: the step is skipped) and
// doubles after `window` clean steps in a row. bf16 (fp32's range) and fp32 run at S = 1.
class LossScaler {
 public:
  explicit LossScaler(const RunConfig& c);
  float scale() const { return m_scale; }
  bool dynamic() const { return m_dynamic; }
  int64_t skipped() const { return m_skipped; }
  void update(bool overflow);  // after a step's gradients were checked
  // Where it stands between steps, for checkpoints (scale 0 in bf16 and fp32: nothing to keep),
  // and back; a state with scale 0 leaves it as it is.
  LossScaleState state() const;
  void restore(const LossScaleState& s);

 private:
  float m_scale = 1.f;
  bool m_dynamic = false;
  int m_window = 1000;
  int m_clean = 0;  // clean steps since the last overflow or growth
  int64_t m_skipped = 0;
};

// One rank's mixed precision: the loss scale, the rounding of each unit's weight gradients as
// the backward finishes it, and the counts the step's JSON line carries.
class MixedPrecision {
 public:
  explicit MixedPrecision(const RunConfig& c)
      : m_dtype(c.precision),
        m_scaler(c),
        m_microBatches(c.accumulate * (c.modelParallel() ? std::max(1, c.microbatches) : 1)) {}
  bool active() const { return sixteenBit(m_dtype); }
  // The rank's device, where the gradients are rounded, unscaled and checked (default: the CPU).
  void runOn(const Compute& c) { m_compute = &c; }
  const Compute& compute() const;
  Dtype dtype() const { return m_dtype; }
  // The loss normalizer with the scale folded in: gradients come out multiplied by S.
  double normalizer(double n) const { return n / double(m_scaler.scale()); }
  // Wraps `inner` (may be null): after a unit's backward its weight gradients are rounded to
  // the 16-bit dtype (the flushed counted), then `inner` sees them. Where the unit's gradient
  // buffer already holds earlier micro-batches' fp32 sum (--accumulate), the sum is set aside
  // before the backward (a Workspace buffer of the unit's size, counted by `memory`), so the
  // backward writes this micro-batch's gradients alone; they are rounded, then added to the
  // sum in fp32 (Megatron's main_grad.add_(grad)). On a GPU the buffer is not read back to
  // find whether it holds a sum: where a step has several micro-batches (--accumulate, a
  // pipeline's --microbatches) it is set aside at every micro-batch
  // (zeros at the first: adding them back changes no value), copied and added on the device.
  class Hooks final : public UnitHooks {
   public:
    Hooks(MixedPrecision& mp, ParamSet& ps, UnitHooks* inner, MemoryTracker* memory = nullptr)
        : m_mp(mp), m_ps(ps), m_inner(inner), m_memory(memory) {}
    void beforeForward(int u) override {
      if (m_inner) m_inner->beforeForward(u);
    }
    void afterForward(int u) override {
      if (m_inner) m_inner->afterForward(u);
    }
    void beforeBackward(int u) override;
    void afterBackward(int u) override;

   private:
    void setAsideOnDevice(int u);  // the GPU's set-aside (see above)
    MixedPrecision& m_mp;
    ParamSet& m_ps;
    UnitHooks* m_inner;
    MemoryTracker* m_memory;
    std::map<int, Tensor> m_sums;  // by unit: the fp32 sum set aside while its backward runs
  };
  // Once the step's gradients are summed: divides `held` by S and checks them. Under ZeRO each
  // rank holds a part, so `agree` (null: not needed) all-reduces the finding. False: an
  // overflow, the step is to be skipped. The scale follows (LossScaler::update).
  bool finishGradients(const std::vector<HeldGradients>& held, Communicator* agree);
  // The step's figures into `out` (loss scale, skipped steps, flushed gradient entries); the
  // flushed count restarts.
  void report(RankStep& out);
  // The loss scale's state, saved with the run's (TrainingState::lossScale) and restored.
  LossScaleState lossScaleState() const { return m_scaler.state(); }
  void restoreLossScale(const LossScaleState& s) { m_scaler.restore(s); }

 private:
  Dtype m_dtype;
  LossScaler m_scaler;
  const Compute* m_compute = nullptr;  // runOn; null: Compute::host()
  float m_stepScale = 1.f;             // the scale the step's backward ran at (before its update)
  // Backwards a step of each unit (the GPU's Hooks set aside a sum where more than 1):
  // --accumulate's micro-batches, times a model-parallel layout's --microbatches.
  int m_microBatches = 1;
};

}  // namespace paralab
