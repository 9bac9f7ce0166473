// The model-states formulas of the memory lesson (see memory_reference.h).
// See tests/app/tst_charts.cpp (memoryReference).
#include "charts/memory_reference.h"

namespace paralab {

int optimizerBytesPerParam(const std::string& optimizer) {
  if (optimizer == "sgd") return 0;
  if (optimizer == "momentum") return 4;  // one velocity float
  if (optimizer == "adam") return 8;      // first and second moments
  return -1;
}

std::optional<ModelStatesReference> modelStatesReference(int64_t P, int stage, int K, int N) {
  if (stage < 0 || stage > 3 || N < 1 || K < 0 || P < 0) return std::nullopt;
  const double p = double(P), n = double(N);
  ModelStatesReference r;
  // What each stage shards: 1 the optimizer state, 2 also the gradients, 3 also the params.
  r.params = stage >= 3 ? 4 * p / n : 4 * p;
  r.grads = stage >= 2 ? 4 * p / n : 4 * p;
  r.optimizer = stage >= 1 ? K * p / n : K * p;
  auto term = [](int bytes, bool shared) {
    return bytes == 0 ? QString() : QString("%1P%2").arg(bytes).arg(shared ? "/N" : "");
  };
  switch (stage) {
    case 0:
      r.formula =
          K > 0 ? QString("4P + 4P + %1P = %2P").arg(K).arg(8 + K) : QString("4P + 4P = 8P");
      break;
    case 1:
      r.formula = K > 0 ? QString("4P + 4P + %1").arg(term(K, true)) : QString("4P + 4P");
      break;
    case 2:
      r.formula = QString("4P + %1").arg(term(4 + K, true));
      break;
    case 3:
      r.formula = term(8 + K, true);
      break;
  }
  return r;
}

std::optional<ModelStatesReference> modelStatesReference(const RunConfig& c, int64_t P) {
  // The formulas count one full replica (or its ZeRO shards) per rank: synchronous data
  // parallelism of the dense model only.
  if (c.strategy != "sync" || c.model != "mlp" || c.tp != 1 || c.pp != 1 || P <= 0)
    return std::nullopt;
  return modelStatesReference(P, c.zero, optimizerBytesPerParam(c.optimizer), c.dpDegree());
}

}  // namespace paralab
