// What the holdings map's suites share: the engine's real holdings of a short run (a Trainer's
// one step), a map's bar by rank, row and kind, and whether parts cover a whole layer.
// Used by tst_charts_ranks.cpp and tst_holdings_layouts.cpp.
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

#include "charts/holdings_map.h"
#include "train/trainer.h"

namespace paralab::test {

// A small run on synthetic data with Adam (two optimizer slots, so the optimizer bars show).
inline RunConfig holdingsRun(RunConfig c) {
  c.dataset = "synthetic";
  c.hidden = 32;
  c.batch = 48;
  c.evalEvery = 0;
  c.optimizer = "adam";
  return c;
}

// Every rank's holdings after one step of `c` (holdingsRun's data and optimizer).
inline std::vector<RankHoldings> holdingsOf(const RunConfig& c) {
  Trainer t(holdingsRun(c));
  t.step();
  return t.holdings();
}

inline const HoldingsMap::Cell* findCell(const HoldingsMap& map, int rank, const QString& row,
                                         HoldingKind k) {
  for (const auto& c : map.cells())
    if (c.rank == rank && c.row == row && c.kind == k) return &c;
  return nullptr;
}

// Whether `parts` (fractions of a layer) together cover all of it, [0, 1).
inline bool coversWhole(std::vector<std::pair<double, double>> parts) {
  std::sort(parts.begin(), parts.end());
  double reached = 0;
  for (const auto& [a, b] : parts) {
    if (a > reached + 1e-9) return false;
    reached = std::max(reached, b);
  }
  return reached >= 1 - 1e-9;
}

}  // namespace paralab::test
