// LatencyChart: rank 0's step time over the run, stacked as compute (data + forward +
// backward), optimizer, communication and idle, under the step's wall time; the run's live
// changes marked.
// See tests/app/tst_charts.cpp (latencyStacksTheBreakdown) and screenshots/latency.png.
#pragma once
#include <QVector>

#include "charts/chart.h"
#include "charts/metric_history.h"
#include "charts/stack_band.h"

namespace paralab {

class LatencyChart : public Chart {
  Q_OBJECT
 public:
  explicit LatencyChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;
  // The parts, not their running sums, of every step of the run (its file).
  void writeCsv(QTextStream& out) const override;

  // What is drawn, in ms per step, one entry per step kept by the history.
  struct Parts {
    QVector<double> step, compute, optimizer, comm, idle, wall;
  };
  const Parts& parts() const { return m_parts; }
  // The bands from the bottom up (compute, optimizer, communication, idle) and the wall line.
  QList<const StackBand*> bands() const { return {m_compute, m_optimizer, m_comm, m_idle}; }
  const QCPGraph* wall() const { return m_wall; }

 private:
  Parts m_parts;
  MetricHistory::Steps m_steps;
  StackBand* m_compute;
  StackBand* m_optimizer;
  StackBand* m_comm;
  StackBand* m_idle;
  QCPGraph* m_wall;
};

}  // namespace paralab
