// GoodputChart: a goodput sweep's measured goodput (useful steps per second of wall time) against
// the checkpoint interval K, under emulated failures, beside Young/Daly's optimum sqrt(2 C MTBF)
// (a reference line at its K, C the checkpoint cost measured) and the best K measured.
// See tests/app/tst_window_failures.cpp (goodputSweepRunsFromTheWindow).
#pragma once
#include "charts/chart.h"
#include "train/goodput_sweep.h"

namespace paralab {

class GoodputChart : public Chart {
  Q_OBJECT
 public:
  explicit GoodputChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // a run does not change a sweep
  bool followsRun() const override { return false; }
  // One row per K: goodput, failures, time lost and in checkpoints; "# " lines give C, the
  // MTBF, Young/Daly's K and the best K.
  void writeCsv(QTextStream& out) const override;
  void showSweep(const GoodputSweepResult& sweep, const QString& subtitle = QString());
  void clear();

  QCPGraph* measured() const { return m_measured; }
  const GoodputSweepResult& sweep() const { return m_sweep; }
  // Young/Daly's K, a vertical dashed line named in the legend (no data: none drawn).
  QCPGraph* youngDaly() const { return m_youngDaly; }

 private:
  QCPGraph* m_measured;
  QCPGraph* m_best;  // the best K's point, ringed
  QCPGraph* m_youngDaly;
  GoodputSweepResult m_sweep;
};

}  // namespace paralab
