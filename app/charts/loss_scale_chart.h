// LossScaleChart: a mixed-precision run's loss scale S over steps (log axis) and the optimizer
// steps skipped so far on an overflow (right axis), from each step's loss_scale and
// skipped_steps (lessons/reference/precision.md). Nothing to draw for an fp32 run.
// See tests/app/tst_loss_scale_chart.cpp.
#pragma once
#include "charts/chart.h"
#include "charts/metric_history.h"

namespace paralab {

class LossScaleChart : public Chart {
  Q_OBJECT
 public:
  explicit LossScaleChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;
  void writeCsv(QTextStream& out) const override;
  QCPGraph* scale() const { return m_scale; }
  QCPGraph* skipped() const { return m_skipped; }

 private:
  MetricHistory::Steps m_steps;
  QCPGraph* m_scale;
  QCPGraph* m_skipped;
};

}  // namespace paralab
