// The per-step metrics every view and export reads. Each is defined once here and once in
// prose in lessons/reference/metrics.md (same names). See tests/engine/tst_metrics.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "memory/memory_tracker.h"

namespace paralab {

// One rank's traffic in one step of one kind of call on one communicator group (the
// communicator's CommOpTotals, algorithms summed): what the per-rank traffic bars stack.
struct OpTraffic {
  std::string op;     // "allreduce", "reducescatter", ... (commOpName)
  std::string group;  // "world", "dp", "tp", "pp", ...
  int64_t calls = 0;
  int64_t bytesSent = 0, bytesRecv = 0;  // over links, this rank
  double ms = 0;                         // inside these calls
};

// What one rank did during one step. Times in milliseconds of wall clock, bytes as counted
// by the communicator, memory from the rank's MemoryTracker at the end of the step (peak =
// high-water mark during the step).
struct RankMetrics {
  int rank = 0;
  double computeMs = 0;    // data + forward + backward + optimizer spans
  double commMs = 0;       // communication spans
  double idleMs = 0;       // step time not covered by any span
  int64_t bytesSent = 0;
  int64_t bytesRecv = 0;
  std::vector<int64_t> sentTo;  // bytes sent to each world rank (a row of the link heatmap)
  std::vector<OpTraffic> ops;   // bytesSent/bytesRecv split by (op, group)
  std::optional<double> bubble;  // --pp > 1: share of the pipeline's time this stage idled (metrics.md)
  std::optional<int64_t> tokens;  // --model moe: token rows this rank's experts ran (all blocks)
  MemorySnapshot mem;
};

struct StepMetrics {
  int64_t step = 0;            // 1-based index of the step just finished
  double loss = 0;             // mean cross-entropy over the global batch, nats
  double stepMs = 0;           // wall time of the whole step, ms
  double samplesPerS = 0;      // global batch / step time
  double forwardMs = 0, backwardMs = 0, optimizerMs = 0, dataMs = 0;  // rank 0's breakdown
  std::optional<double> testAccuracy;  // fraction in [0,1], on steps where it was evaluated
  std::optional<double> staleness;     // ps-async, Hogwild: mean updates missed (metrics.md)
  std::optional<double> spread;        // local SGD, gossip: max distance from the mean model
  std::optional<double> bubble;        // --pp > 1: mean over ranks of RankMetrics::bubble
  std::optional<double> bubbleReference;  // --pp > 1: (P-1)/(M+P-1), reference
  // --model moe, over the global batch: token choices routed to each expert per block [L][E]
  // (before capacity), those dropped over capacity (all blocks), the load-balancing loss (nats).
  std::vector<std::vector<int64_t>> expertTokens;
  std::optional<int64_t> droppedTokens;
  std::optional<double> auxLoss;
  std::string emulated;                // the emulated link's name, "" when links are real
  std::vector<RankMetrics> ranks;
};

nlohmann::json toJson(const StepMetrics& m);
nlohmann::json toJson(const MemorySnapshot& m);

}  // namespace paralab
