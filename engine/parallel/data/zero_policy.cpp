// The ZeRO policy table (zero_policy.h): a new stage, or a ZeRO-like variant, is a row here.
// See tests/engine/tst_zero.cpp.
#include "parallel/data/zero_policy.h"

#include <stdexcept>

namespace paralab {

const std::vector<ZeroPolicy>& zeroPolicies() {
  // Collectives: {.perStep, .perMicroBatch}.
  static const std::vector<ZeroPolicy> table = {
      {.stage = ZeroStage::None,
       .row = "sync",
       .title = "none",
       .summary = "Every rank holds all parameters, gradients and optimizer state",
       .shardsOptimizer = false,
       .shardsGradients = false,
       .shardsParameters = false,
       .allReduces = {.perStep = 1, .perMicroBatch = 0},  // after the last micro-batch
       .reduceScatters = {.perStep = 0, .perMicroBatch = 0},
       .allGathers = {.perStep = 0, .perMicroBatch = 0}},
      {.stage = ZeroStage::OptimizerState,
       .row = "zero-1",
       .title = "ZeRO-1",
       .summary = "ZeRO-1: sync data parallel with the optimizer state sharded over the ranks",
       .shardsOptimizer = true,
       .shardsGradients = false,
       .shardsParameters = false,
       .allReduces = {.perStep = 0, .perMicroBatch = 0},
       .reduceScatters = {.perStep = 1, .perMicroBatch = 0},  // after the last micro-batch
       .allGathers = {.perStep = 1, .perMicroBatch = 0}},     // the updated chunks
      {.stage = ZeroStage::Gradients,
       .row = "zero-2",
       .title = "ZeRO-2",
       .summary =
           "ZeRO-2: sync data parallel with optimizer state and gradients sharded (reduce-scatter)",
       .shardsOptimizer = true,
       .shardsGradients = true,
       .shardsParameters = false,
       .allReduces = {.perStep = 0, .perMicroBatch = 0},
       .reduceScatters = {.perStep = 0, .perMicroBatch = 1},  // as backward finishes each unit
       .allGathers = {.perStep = 1, .perMicroBatch = 0}},
      {.stage = ZeroStage::Parameters,
       .row = "zero-3",
       .title = "ZeRO-3 / FSDP",
       .summary = "ZeRO-3 / FSDP: optimizer state, gradients and parameters sharded; units "
                  "gathered on use",
       .shardsOptimizer = true,
       .shardsGradients = true,
       .shardsParameters = true,
       .allReduces = {.perStep = 0, .perMicroBatch = 0},
       .reduceScatters = {.perStep = 0, .perMicroBatch = 1},
       .allGathers = {.perStep = 0, .perMicroBatch = 2}},  // before each forward and backward
  };
  return table;
}

const ZeroPolicy& zeroPolicy(ZeroStage stage) {
  for (const ZeroPolicy& p : zeroPolicies())
    if (p.stage == stage) return p;
  throw std::logic_error("zeroPolicy: a stage without a row");
}

std::optional<ZeroStage> zeroStageOf(int n) {
  for (const ZeroPolicy& p : zeroPolicies())
    if (int(p.stage) == n) return p.stage;
  return std::nullopt;
}

ZeroStateBytes ZeroPolicy::bytesPerRank(double P, int N, int K) const {
  const double n = N;
  return {shardsParameters ? 4 * P / n : 4 * P, shardsGradients ? 4 * P / n : 4 * P,
          shardsOptimizer ? K * P / n : K * P};
}

std::string ZeroPolicy::formulaText(int K) const {
  // The terms each rank holds whole, one by one; the sharded ones as one sum over N.
  std::string whole;
  int wholeTerms = 0, wholeSum = 0, sharded = 0;
  const std::pair<int, bool> terms[] = {
      {4, shardsParameters}, {4, shardsGradients}, {K, shardsOptimizer}};
  for (const auto& [bytes, isSharded] : terms) {
    if (bytes == 0) continue;
    if (isSharded) {
      sharded += bytes;
      continue;
    }
    whole += (whole.empty() ? "" : " + ") + std::to_string(bytes) + "P";
    wholeSum += bytes;
    ++wholeTerms;
  }
  if (sharded > 0) return whole + (whole.empty() ? "" : " + ") + std::to_string(sharded) + "P/N";
  // Every state whole (stage 0): the sum too. A stage whose only sharded state is empty (SGD
  // at stage 1) says what stays.
  if (!shardsAnything() && wholeTerms > 1) whole += " = " + std::to_string(wholeSum) + "P";
  return whole;
}

int ZeroPolicy::ringHalves(int microBatches) const {
  return 2 * allReduces.times(microBatches) + reduceScatters.times(microBatches) +
         allGathers.times(microBatches);
}

double ZeroPolicy::trafficBytes(double P, int N, int microBatches) const {
  return ringHalves(microBatches) * double(N - 1) / N * 4 * P;
}

std::string ZeroPolicy::trafficText() const {
  return std::to_string(ringHalves(1)) + "(N-1)/N x 4P";
}

}  // namespace paralab
