// Straggler detection from the measured spans: each step's slowest rank (the most compute time,
// its spans summed) and its lag behind the median rank, named a straggler when it computed at
// least kStragglerRatio times the median; and the rank that was the straggler in most of the last
// steps (the window marks it). Read from a step's ranks[], never from --straggler.
// See tests/engine/tst_straggler.cpp and `paralab-run --ranks 4 --straggler 1=4 --json`.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "metrics/metrics.h"

namespace paralab {

// A rank computing this many times the median rank's compute is named. 1.5: an even run's ranks
// differ by far less, an injected straggler of factor 2 or more by more.
inline constexpr double kStragglerRatio = 1.5;

struct SlowestRank {
  int rank = -1;
  double computeMs = 0;    // its compute_ms in the step
  double medianMs = 0;     // the median of the ranks' compute_ms
  double lagMs = 0;        // computeMs - medianMs
  bool straggler = false;  // computeMs >= kStragglerRatio x medianMs
};

// The step's slowest rank; nullopt with fewer than 2 ranks or no compute measured
// (--no-instrument).
std::optional<SlowestRank> slowestRank(const std::vector<RankMetrics>& ranks);

// The rank named a straggler in more than half of `steps` (the last K), or -1.
int persistentStraggler(const std::vector<StepMetrics>& steps);

// The step line's block (metrics.md): "slowest_rank", "slowest_lag_ms" and, when named,
// "straggler_rank"; nothing when slowestRank has none.
void addSlowestRank(nlohmann::json& line, const StepMetrics& m);

}  // namespace paralab
