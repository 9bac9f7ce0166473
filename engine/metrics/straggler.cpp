// Straggler detection from a step's measured compute per rank (metrics/straggler.h).
// See tests/engine/tst_straggler.cpp.
#include "metrics/straggler.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace paralab {

std::optional<SlowestRank> slowestRank(const std::vector<RankMetrics>& ranks) {
  if (ranks.size() < 2) return std::nullopt;
  std::vector<double> ms;
  for (const RankMetrics& r : ranks) ms.push_back(r.computeMs);
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  if (median <= 0) return std::nullopt;
  const auto slow = std::max_element(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
    return a.computeMs < b.computeMs;
  });
  SlowestRank s;
  s.rank = slow->rank;
  s.computeMs = slow->computeMs;
  s.medianMs = median;
  s.lagMs = slow->computeMs - median;
  s.straggler = slow->computeMs >= kStragglerRatio * median;
  return s;
}

int persistentStraggler(const std::vector<StepMetrics>& steps) {
  std::map<int, size_t> named;
  for (const StepMetrics& m : steps)
    if (const auto s = slowestRank(m.ranks); s && s->straggler) ++named[s->rank];
  for (const auto& [rank, count] : named)
    if (2 * count > steps.size()) return rank;
  return -1;
}

void addSlowestRank(nlohmann::json& line, const StepMetrics& m) {
  const auto s = slowestRank(m.ranks);
  if (!s) return;
  line["slowest_rank"] = s->rank;
  line["slowest_lag_ms"] = s->lagMs;
  if (s->straggler) line["straggler_rank"] = s->rank;
}

}  // namespace paralab
