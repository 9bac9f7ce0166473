// TrafficChart: bytes each rank sent and received in the last step, two bars per rank
// stacked by kind of call and group (all-reduce over dp, all-gather over tp, send, ...), as
// the communicator counted them; a run over several nodes (--gpus-per-node) stacks them by tier
// instead: inside the node, between nodes. See tests/app/tst_charts_ranks.cpp
// (trafficBarsAreTheCountedBytes) and tst_charts_tiers.cpp.
#pragma once
#include <vector>

#include "charts/chart.h"
#include "session.h"

namespace paralab {

class TrafficChart : public Chart {
  Q_OBJECT
 public:
  explicit TrafficChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  void showSnapshot(const Snapshot& snapshot);              // its last step; none: left as it is
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;

  double unitBytes() const { return m_unit; }
  // One stack layer per (op, group): keys rank - 0.21 (sent) and rank + 0.21 (received).
  const QList<QCPBars*>& layers() const { return m_layers; }
  static constexpr double kSentOffset = -0.21, kRecvOffset = 0.21;
  // Stacked by tier (the step had several nodes): layers() are then {inside a node, between}.
  bool byTier() const { return m_byTier; }

 private:
  void fitRankLabels();  // after each layout: the bars' and ranks' labels their width allows
  void showTiers(const StepMetrics& step);  // the step's bytes by tier (RankMetrics::tiers)

  struct Row {
    int rank = 0;
    OpTraffic op;
  };
  QList<QCPBars*> m_layers;
  std::vector<Row> m_rows;  // what is drawn, one per (rank, op, group)
  double m_unit = 1;
  int m_ranks = 0;       // ranks drawn
  int m_barLabels = -1;  // 2: sent / recv and rank, 1: rank, 0: its number (-1: not yet)
  bool m_byTier = false;
};

}  // namespace paralab
