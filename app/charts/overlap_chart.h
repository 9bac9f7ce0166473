// OverlapChart: each rank's last step as one stacked bar of its time (metrics/overlap.h):
// computing alone, computing while communication ran (hidden), communicating alone (exposed)
// and idle, with the share of its communication that hid written above it. Live, from each
// snapshot. See tests/app/tst_charts_ranks.cpp (overlapBarsAreTheMeter).
#pragma once
#include <array>
#include <vector>

#include "charts/chart.h"
#include "session.h"

namespace paralab {

class OverlapChart : public Chart {
  Q_OBJECT
 public:
  // The stack, bottom up: compute alone, hidden communication, exposed, idle.
  enum Layer { ComputeAlone, Hidden, Exposed, Idle, kLayers };

  explicit OverlapChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  void showSnapshot(const Snapshot& snapshot);              // its last step; none: left as it is
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;
  void applyLook(const QPalette& palette) override;  // the shares above the bars too

  QCPBars* bars(Layer layer) const { return m_bars[size_t(layer)]; }
  // The "N % hidden" text above each rank's bar, in rank order.
  const QList<QCPItemText*>& shareLabels() const { return m_shares; }

 private:
  // After each layout: the ranks' and shares' labels in the words their room allows ("rank 3"
  // or "3"; "40 % hidden", "40 %" or none, the axis label then saying what they are).
  void fitLabels();

  struct Row {
    int rank = 0;
    OverlapMeter meter;
  };
  std::array<QCPBars*, kLayers> m_bars{};
  QList<QCPItemText*> m_shares;
  std::vector<Row> m_rows;  // what is drawn, one per rank that carried the meter
  int m_words = -1;         // the labels' form fitLabels chose (-1: not yet)
};

}  // namespace paralab
