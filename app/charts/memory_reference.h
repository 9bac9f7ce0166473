// The lesson's formula for the model states one data-parallel rank holds (fp32 parameters,
// gradients and optimizer state), drawn beside the measured memory bars as a reference.
// ZeRO: Rajbhandari et al. 2020, Fig. 1. See tests/app/tst_charts.cpp (memoryReference).
#pragma once
#include <QString>
#include <cstdint>
#include <optional>
#include <string>

#include "config.h"

namespace paralab {

struct ModelStatesReference {
  double params = 0, grads = 0, optimizer = 0;  // bytes per rank
  double total() const { return params + grads + optimizer; }
  QString formula;  // "4P + 12P/N", with N a symbol and K already a number
};

// Bytes of optimizer state per parameter (fp32): sgd 0, momentum 4, adam 8.
int optimizerBytesPerParam(const std::string& optimizer);

// Model states per rank (the engine's modelStatesPerRank, memory_estimate.h) with the formula
// in words. Nothing for a stage outside 0..3, N < 1 or K < 0.
std::optional<ModelStatesReference> modelStatesReference(int64_t P, int stage, int K, int N);

// The reference for a run, or nothing where the lessons state no such formula: strategies
// other than synchronous data parallelism, or tensor, pipeline or expert parallelism.
std::optional<ModelStatesReference> modelStatesReference(const RunConfig& config, int64_t P);

}  // namespace paralab
