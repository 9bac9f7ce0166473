// LossScaleChart: fp16's dynamic loss scale and the steps it skipped (see loss_scale_chart.h).
// The scale halves on an overflow and doubles after --loss-scale-window clean steps, so it is
// drawn on a base-2 log axis. See tests/app/tst_loss_scale_chart.cpp.
#include "charts/loss_scale_chart.h"

#include "charts/chart_colors.h"

namespace paralab {

LossScaleChart::LossScaleChart(QWidget* parent) : Chart("loss_scale", tr("Loss scale"), parent) {
  setTabTitle(tr("Loss scale"));
  setAxisLabel(xAxis, tr("step"));
  useStepTicks(xAxis);
  setAxisLabel(yAxis, tr("loss scale S (log₂)"), tr("S (log₂)"));
  yAxis->setScaleType(QCPAxis::stLogarithmic);
  auto log2 = QSharedPointer<QCPAxisTickerLog>::create();
  log2->setLogBase(2);
  yAxis->setTicker(log2);
  yAxis->setNumberFormat("gb");
  yAxis->setRange(0.5, 131072);
  yAxis2->setVisible(true);
  setAxisLabel(yAxis2, tr("steps skipped on an overflow (so far)"), tr("skipped"));
  yAxis2->setRange(0, 1);
  m_scale = addSeries(tr("loss scale S"), "loss_scale", yAxis, chartcolors::kBlue, 2.2);
  m_skipped =
      addSeries(tr("steps skipped (overflow)"), "skipped_steps", yAxis2, chartcolors::kRed, 1.5);
  m_skipped->setLineStyle(QCPGraph::lsStepLeft);
  setPlaceholderText(tr("No loss scale: this run trains in fp32 (try --precision fp16)"));
  finishUpdate();
}

void LossScaleChart::showHistory(const MetricHistory& history) {
  QVector<double> steps, scale, skipped;
  double lo = 1, hi = 1, most = 0;
  for (const MetricHistory::Row& r : history.rows()) {
    if (std::isnan(r.lossScale)) continue;  // an fp32 step: no scale
    steps.push_back(r.step);
    scale.push_back(r.lossScale);
    skipped.push_back(r.skippedSteps);
    lo = std::min(lo, r.lossScale), hi = std::max(hi, r.lossScale);
    most = std::max(most, r.skippedSteps);
  }
  m_scale->setData(steps, scale, true);
  m_skipped->setData(steps, skipped, true);
  m_steps = history.steps();
  showChanges(history);
  yAxis->setRange(lo / 2, hi * 2);
  yAxis2->setRange(0, std::max(1.0, most * 1.1));
  finishUpdate();  // the placeholder where no step had a scale
}

void LossScaleChart::writeCsv(QTextStream& out) const {
  out << "step,loss_scale,skipped_steps\n";
  setCsvError(m_steps.forEach([&](const MetricHistory::Row& r, const StepMetrics&) {
    if (std::isnan(r.lossScale)) return;
    out << qlonglong(r.step) << ',' << csvNumber(r.lossScale) << ',' << qlonglong(r.skippedSteps)
        << '\n';
  }));
}

}  // namespace paralab
