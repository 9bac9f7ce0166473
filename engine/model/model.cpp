// Which model a run trains (see model.h).
#include "model/model.h"

#include <stdexcept>

#include "config.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "model/moe.h"

namespace paralab {

namespace {
GptShape gptShape(const RunConfig& c, const Dataset& d) {
  return {d.classes, c.seq, c.hidden, c.layers, c.heads};
}
MlpShape mlpShape(const RunConfig& c, const Dataset& d) {
  return {d.inputDim, c.hidden, c.layers, d.classes};
}
}  // namespace

std::unique_ptr<Model> makeModel(const RunConfig& config, const Dataset& data,
                                 MemoryTracker* tracker, const Compute* compute) {
  if (config.model == "gpt")
    return std::make_unique<Gpt>(gptShape(config, data), config.seed, tracker, compute,
                                 recomputeFromName(config.recompute));
  if (config.model == "mlp")
    return std::make_unique<Mlp>(mlpShape(config, data), config.seed, tracker, MlpShard{}, true,
                                 compute);
  throw std::invalid_argument("model: " + config.model + " is not built whole on one rank");
}

int64_t parameterCountOf(const RunConfig& config, const Dataset& data) {
  if (config.model == "gpt") return gptShape(config, data).parameterCount();
  if (config.model == "moe") {
    MoeShape m;
    m.input = data.inputDim, m.classes = data.classes, m.hidden = config.hidden;
    m.layers = config.layers, m.experts = config.experts;
    return m.parameterCount();
  }
  return mlpShape(config, data).parameterCount();
}

}  // namespace paralab
