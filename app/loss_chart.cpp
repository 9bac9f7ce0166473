// LossChart: loss and test accuracy over steps (see loss_chart.h).
// See tests/app/tst_app.cpp (startYieldsPoints) and the main-window screenshot.
#include "loss_chart.h"

#include "chart_colors.h"
#include "metric_history.h"

namespace paralab {

LossChart::LossChart(QWidget* parent) : Chart("loss", tr("Training loss"), parent) {
  setAxisLabel(xAxis, tr("step"));
  setAxisLabel(yAxis, tr("loss (nats)"));
  setAxisLabel(yAxis2, tr("test accuracy (%)"));
  yAxis2->setTickLabels(true);
  yAxis2->setRange(0, 100);
  yAxis->setRange(0, 2.5);

  m_loss = addSeries(tr("loss, each step"), "loss_nats", yAxis,
                     chartcolors::faint(chartcolors::kBlue), 1);
  m_lossMean = addSeries(tr("loss, mean of last %1 steps").arg(MetricHistory::kMeanWindow),
                         QString("loss_mean%1_nats").arg(MetricHistory::kMeanWindow), yAxis,
                         chartcolors::kBlue, 2.2);
  m_accuracy =
      addSeries(tr("test accuracy"), "test_accuracy_percent", yAxis2, chartcolors::kOrange, 1.8);
  // Filled dots: each is one evaluation, and they read the same on light and dark screens.
  m_accuracy->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssDisc, chartcolors::kOrange, chartcolors::kOrange, 6));
  finishUpdate();
}

void LossChart::showHistory(const MetricHistory& history) {
  const auto& rows = history.rows();
  QVector<double> steps, loss, lossMean;
  steps.reserve(rows.size());
  loss.reserve(rows.size());
  lossMean.reserve(rows.size());
  double maxLoss = 0;
  for (const auto& r : rows) {
    steps.push_back(r.step);
    loss.push_back(r.loss);
    lossMean.push_back(r.lossMean);
    maxLoss = std::max(maxLoss, r.loss);
  }
  m_loss->setData(steps, loss, true);
  m_lossMean->setData(steps, lossMean, true);

  QVector<double> accSteps, acc;
  for (const auto& a : history.accuracy()) {
    accSteps.push_back(a.step);
    acc.push_back(a.percent);
  }
  m_accuracy->setData(accSteps, acc, true);
  // Loss is drawn from zero so that its fall reads as a fraction of where it started.
  yAxis->setRange(0, maxLoss > 0 ? maxLoss * 1.08 : 2.5);
  finishUpdate();
}

}  // namespace paralab
