// The model-states formulas of the memory lesson (see memory_reference.h).
// See tests/app/tst_charts.cpp (memoryReference).
#include "charts/memory_reference.h"

#include "memory_estimate.h"
#include "parallel/data/zero_policy.h"  // the formula in words
#include "parallel/holdings.h"  // optimizerStateSlots

namespace paralab {

int optimizerBytesPerParam(const std::string& optimizer) {
  return 4 * optimizerStateSlots(optimizer);
}

std::optional<ModelStatesReference> modelStatesReference(int64_t P, int stage, int K, int N) {
  if (stage < 0 || stage > 3 || N < 1 || K < 0 || P < 0) return std::nullopt;
  const ModelStateBytes bytes = modelStatesPerRank(P, stage, K, N);
  ModelStatesReference r;
  r.params = bytes.params;
  r.grads = bytes.grads;
  r.optimizer = bytes.optimizer;
  r.formula = QString::fromStdString(zeroPolicy(ZeroStage(stage)).formulaText(K));
  return r;
}

std::optional<ModelStatesReference> modelStatesReference(const RunConfig& c, int64_t P) {
  // The formulas count one full replica (or its ZeRO shards) per rank: synchronous data
  // parallelism of the dense model only.
  // fp32 only: the mixed-precision states (2P + 4P + 12P/N, memory_estimate.h) are drawn as
  // measured, with the master copy a category of its own.
  if (c.strategy != "sync" || c.model != ModelKind::Mlp || c.tp != 1 || c.pp != 1 || P <= 0 ||
      c.precision != Dtype::Fp32)
    return std::nullopt;
  // N is the ranks ZeRO shards over: a node's under --zero-shard node (HSDP).
  return modelStatesReference(P, c.zero, optimizerBytesPerParam(c.optimizer),
                              c.zeroShardDegree());
}

}  // namespace paralab
