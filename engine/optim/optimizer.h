// Optimizers over a flat range of parameters: SGD, SGD with momentum, Adam (fp32).
// State is allocated for exactly the range owned (ZeRO-1 owns 1/N of it) and counted as
// "optimizer" memory: momentum 4 bytes per parameter, Adam 8 (m and v), on the device of the
// rank's Compute, where the update runs too. See tests/engine/tst_optimizer.cpp.
#pragma once
#include <string>

#include "tensor.h"

namespace paralab {

class Compute;
enum class OptimizerKind { Sgd, Momentum, Adam };
OptimizerKind optimizerKind(const std::string& name);  // "sgd" | "momentum" | "adam"

struct OptimizerHyper {
  float lr = 0.05f;
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

class Optimizer {
 public:
  // compute null: the CPU (Compute::host()).
  Optimizer(OptimizerKind kind, const OptimizerHyper& hyper, int64_t numel, MemoryTracker* tracker,
            const Compute* compute = nullptr);
  // Updates params[0..numel) from grads[0..numel) (memory of the Compute's device).
  void step(float* params, const float* grads);
  int64_t numel() const { return m_numel; }
  int64_t steps() const { return m_t; }
  void setLr(float lr) { m_hyper.lr = lr; }
  // The state, for saving and loading a run (null when the kind keeps none; device memory on
  // a GPU).
  float* momentOne() { return m_m.data(); }  // momentum buffer, or Adam's m
  float* momentTwo() { return m_v.data(); }  // Adam's v
  void setSteps(int64_t t) { m_t = t; }

 private:
  const Compute* m_compute;
  OptimizerKind m_kind;
  OptimizerHyper m_hyper;
  int64_t m_numel;
  int64_t m_t = 0;
  Tensor m_m, m_v;  // momentum buffer (m) or Adam's first and second moments (m, v)
};

}  // namespace paralab
