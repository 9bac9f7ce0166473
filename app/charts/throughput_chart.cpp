// ThroughputChart: samples/s over steps (see throughput_chart.h). The definition of
// samples/s is the engine's (engine/metrics/metrics.h): global batch / step wall time.
// See tests/app/tst_app.cpp (startYieldsPoints).
#include "charts/throughput_chart.h"

#include "charts/chart_colors.h"

namespace paralab {

ThroughputChart::ThroughputChart(QWidget* parent) : Chart("throughput", tr("Throughput"), parent) {
  setAxisLabel(xAxis, tr("step"));
  useStepTicks(xAxis);
  setAxisLabel(yAxis, tr("throughput (samples/s)"), tr("samples/s"));
  yAxis->setRange(0, 1000);
  m_rate = addSeries(tr("samples/s, each step"), "samples_per_s", yAxis,
                     chartcolors::faint(chartcolors::kGreen), 1);
  m_rateMean = addSeries(tr("samples/s over last %1 steps").arg(MetricHistory::kMeanWindow),
                         QString("samples_per_s_last%1").arg(MetricHistory::kMeanWindow), yAxis,
                         chartcolors::kGreen, 2.2);
  finishUpdate();
}

void ThroughputChart::showHistory(const MetricHistory& history) {
  const auto& rows = history.rows();
  QVector<double> steps, rate, rateMean;
  steps.reserve(rows.size());
  rate.reserve(rows.size());
  rateMean.reserve(rows.size());
  double maxRate = 0;
  QVector<double> meanSteps;  // the mean from the step its window is full
  for (const auto& r : rows) {
    steps.push_back(r.step);
    rate.push_back(r.samplesPerS);
    if (!std::isnan(r.samplesPerSMean))
      meanSteps.push_back(r.step), rateMean.push_back(r.samplesPerSMean);
    maxRate = std::max(maxRate, r.samplesPerS);
  }
  m_rate->setData(steps, rate, true);
  m_rateMean->setData(meanSteps, rateMean, true);
  m_steps = history.steps();
  showChanges(history);
  // From zero: a drop from 20k to 18k samples/s should look like 10 %, not like a cliff.
  yAxis->setRange(0, maxRate > 0 ? maxRate * 1.1 : 1000);
  finishUpdate();
}

void ThroughputChart::writeCsv(QTextStream& out) const {
  out << "step,samples_per_s," << QString("samples_per_s_last%1").arg(MetricHistory::kMeanWindow)
      << '\n';
  setCsvError(m_steps.forEach([&](const MetricHistory::Row& r, const StepMetrics&) {
    out << qlonglong(r.step) << ',' << csvNumber(r.samplesPerS) << ','
        << csvNumber(r.samplesPerSMean) << '\n';
  }));
}

}  // namespace paralab
