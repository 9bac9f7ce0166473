// Model: what the data-parallel strategies and the trainer ask of a model, whichever it is —
// its parameters (a ParamSet: named weights in units, flat buffers), the loss and gradients of
// a batch with hooks around each unit, and evaluation. Mlp (mlp.h) and Gpt (gpt.h) are models;
// the same strategy code trains either. Tensor and pipeline parallelism and the mixture of
// experts cut an Mlp's parts themselves (model_parallel.cpp, moe.h).
// See tests/engine/tst_model.cpp and tst_gpt.cpp.
#pragma once
#include <cstdint>
#include <memory>

#include "model/param_set.h"

namespace paralab {

// Called around each unit (0 = the input layer, 1..L = blocks, L+1 = the output layer) as the
// passes reach it: where strategies gather sharded weights (ZeRO-3), start gradient all-reduces
// while backward goes on (bucketed data parallelism), or reduce-scatter gradients (ZeRO-2).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void beforeForward(int /*unit*/) {}
  virtual void afterForward(int /*unit*/) {}
  virtual void beforeBackward(int /*unit*/) {}
  virtual void afterBackward(int /*unit*/) {}  // the unit's gradients are final
};

// What evaluating a batch found: predictions right (arg-max), predictions made, and the sum of
// the samples' losses (a sample's loss: the MLP's cross-entropy of its label; the GPT's mean
// cross-entropy over its next-character predictions).
struct Evaluation {
  int64_t correct = 0;
  int64_t predictions = 0;
  double lossSum = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Forward over `batch` samples (rows of x, as the Dataset lays them out; labels may be unused,
  // as by the GPT, whose targets are in x); keeps the activations for backward. Returns the SUM
  // of the per-sample losses; gradients are scaled by 1 / `normalizer` (the global batch).
  // Host memory.
  virtual double forwardLoss(const float* x, const int* labels, int batch, double normalizer,
                             UnitHooks* hooks = nullptr) = 0;
  // Accumulates (+=) parameter gradients of the last forwardLoss.
  virtual void backward(UnitHooks* hooks = nullptr) = 0;
  // Forward only, for the held-out set; no gradients.
  virtual Evaluation evaluate(const float* x, const int* labels, int batch,
                              UnitHooks* hooks = nullptr) = 0;
  virtual int numUnits() const = 0;
  ParamSet& params() { return m_ps; }
  const ParamSet& params() const { return m_ps; }

 protected:
  ParamSet m_ps;
};

struct RunConfig;
struct Dataset;
// The model of a run (--model mlp or gpt, its sizes from the config, its input and output sizes
// from the data), drawn from --seed, its buffers on `compute` (null: the CPU). Every rank that
// makes it gets the same weights. --model moe is not a Model: throws std::invalid_argument.
std::unique_ptr<Model> makeModel(const RunConfig& config, const Dataset& data,
                                 MemoryTracker* tracker, const Compute* compute);
// P of the run's model (every expert of an MoE counted once).
int64_t parameterCountOf(const RunConfig& config, const Dataset& data);

}  // namespace paralab
