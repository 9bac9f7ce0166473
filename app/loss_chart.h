// LossChart: training loss per step (nats) with its running mean, and the test-accuracy
// points on a second axis (%). See tests/app/tst_app.cpp (startYieldsPoints).
#pragma once
#include "chart.h"

namespace paralab {

class LossChart : public Chart {
  Q_OBJECT
 public:
  explicit LossChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;

 private:
  QCPGraph* m_loss;
  QCPGraph* m_lossMean;
  QCPGraph* m_accuracy;
};

}  // namespace paralab
