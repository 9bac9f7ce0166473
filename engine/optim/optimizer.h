// Optimizers over a flat range of parameters: SGD, SGD with momentum, Adam (fp32).
// State is allocated for exactly the range owned (ZeRO-1 owns 1/N of it) and counted as
// "optimizer" memory: momentum 4 bytes per parameter, Adam 8 (m and v), on the device of the
// rank's Compute, where the update runs too. Mixed precision (train/precision.h): the update
// runs on an fp32 master copy of the range ("master" memory, 4 bytes a parameter), which is
// rounded into the 16-bit parameters after each step. See tests/engine/tst_optimizer.cpp and
// tst_precision.cpp.
#pragma once
#include <string>

#include "run_choices.h"
#include "tensor.h"

namespace paralab {

class Compute;
enum class OptimizerKind { Sgd, Momentum, Adam };
OptimizerKind optimizerKind(const std::string& name);  // "sgd" | "momentum" | "adam"

struct OptimizerHyper {
  float lr = 0.05f;
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  Dtype stored = Dtype::Fp32;  // the parameters' dtype: bf16 or fp16 keep an fp32 master copy
};

class Optimizer {
 public:
  // compute null: the CPU (Compute::host()).
  Optimizer(OptimizerKind kind, const OptimizerHyper& hyper, int64_t numel, MemoryTracker* tracker,
            const Compute* compute = nullptr);
  // Updates params[0..numel) from grads[0..numel) (memory of the Compute's device). With a
  // master copy: the copy is updated (taken from params on the first step, as Megatron's
  // optimizer copies its bf16 parameters), then rounded into params.
  void step(float* params, const float* grads);
  // The master copy (null in fp32); cleared so the next step takes it from the parameters
  // again (after they were loaded from elsewhere).
  float* master() { return m_master.data(); }
  void retakeMaster() { m_masterTaken = false; }
  // The master copy as the next step will update it (null in fp32): taken from `params` (the
  // 16-bit values, where step() would take them) if no step has taken it yet.
  const float* currentMaster(const float* params);
  // Sets the master copy from `count` host floats (a checkpoint's; the rest of the range zero,
  // as ZeRO's padding is) for the next step to update. Nothing in fp32.
  void loadMaster(const float* host, int64_t count);
  int64_t numel() const { return m_numel; }
  int64_t steps() const { return m_t; }
  void setLr(float lr) { m_hyper.lr = lr; }
  // The state, for saving and loading a run (null when the kind keeps none; device memory on
  // a GPU).
  float* momentOne() { return m_m.data(); }  // momentum buffer, or Adam's m
  float* momentTwo() { return m_v.data(); }  // Adam's v
  void setSteps(int64_t t) { m_t = t; }

 private:
  void update(float* params, const float* grads);  // the kind's kernel on fp32 values

  const Compute* m_compute;
  OptimizerKind m_kind;
  OptimizerHyper m_hyper;
  int64_t m_numel;
  int64_t m_t = 0;
  Tensor m_m, m_v;  // momentum buffer (m) or Adam's first and second moments (m, v)
  Tensor m_master;  // fp32 master parameters (mixed precision)
  bool m_masterTaken = false;
};

}  // namespace paralab
