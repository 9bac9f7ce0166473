// ThroughputChart: measured samples/s of every step and over the last steps.
// See tests/app/tst_app.cpp (startYieldsPoints).
#pragma once
#include "charts/chart.h"

namespace paralab {

class ThroughputChart : public Chart {
  Q_OBJECT
 public:
  explicit ThroughputChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;

 private:
  QCPGraph* m_rate;
  QCPGraph* m_rateMean;
};

}  // namespace paralab
