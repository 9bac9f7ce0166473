// ThroughputChart: measured samples/s of every step and over the last steps, with the run's
// live changes marked. Its CSV holds every step of the run (the run file), whatever is drawn.
// See tests/app/tst_app.cpp (startYieldsPoints).
#pragma once
#include "charts/chart.h"
#include "charts/metric_history.h"

namespace paralab {

class ThroughputChart : public Chart {
  Q_OBJECT
 public:
  explicit ThroughputChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;
  void writeCsv(QTextStream& out) const override;

 private:
  MetricHistory::Steps m_steps;
  QCPGraph* m_rate;
  QCPGraph* m_rateMean;
};

}  // namespace paralab
