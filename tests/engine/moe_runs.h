// The MoE tests' small run and its model-state formula, in one place (tst_moe, tst_cuda_moe):
// H = 32, 2 blocks of 4 experts, a global batch of 48, capacity factor 4 (C = T k: no expert
// can overflow, nothing is dropped unless a test lowers it).
#pragma once
#include <vector>

#include "loss_trajectory.h"
#include "model/moe.h"
#include "train/trainer.h"

namespace paralab::test {

inline RunConfig moeConfig(int ranks, int ep, int topk) {
  RunConfig c = smallRun(32, 2, 48);
  c.model = ModelKind::Moe;
  c.experts = 4;
  c.topk = topk;
  c.capacityFactor = 4.0;
  c.ranks = ranks;
  c.ep = ep;
  return c;
}

// The metrics of each of the first `steps` steps of a fresh run.
inline std::vector<StepMetrics> runSteps(const RunConfig& c, int steps) {
  Trainer t(c);
  std::vector<StepMetrics> out;
  for (int s = 0; s < steps; ++s) out.push_back(t.step());
  return out;
}

// Parameters one rank holds with `ep`-way expert parallelism: every dense weight, and 1/ep of
// each block's experts.
struct MoeHeld {
  int64_t expert = 0, dense = 0, held = 0;
};
inline MoeHeld moeHeld(const RunConfig& c, int ep) {
  MoeShape s;
  s.hidden = c.hidden, s.layers = c.layers, s.experts = c.experts;
  MoeHeld h;
  h.expert = s.expertParameterCount();
  h.dense = s.parameterCount() - int64_t(c.layers) * c.experts * h.expert;
  h.held = h.dense + int64_t(c.layers) * (c.experts / ep) * h.expert;
  return h;
}

}  // namespace paralab::test
