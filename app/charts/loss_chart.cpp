// LossChart: loss, held-out loss and test accuracy over steps, and earlier runs kept faded (see
// loss_chart.h).
// See tests/app/tst_app.cpp (startPauseStepReset) and tests/app/tst_charts.cpp (lossOverlays).
#include "charts/loss_chart.h"

#include <cmath>
#include <limits>

#include "charts/chart_colors.h"
#include "describe.h"

namespace paralab {

LossChart::LossChart(QWidget* parent) : Chart("loss", tr("Training loss"), parent) {
  setAxisLabel(xAxis, tr("step"));
  useStepTicks(xAxis);
  setAxisLabel(yAxis, tr("loss (nats)"));
  setAxisLabel(yAxis2, tr("test accuracy (%)"), tr("accuracy (%)"));
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
  // The held-out loss on the loss axis, beside the training loss it should follow: a gap
  // between them is overfitting. Square dots, one per evaluation.
  m_testLoss = addSeries(tr("held-out loss"), "test_loss_nats", yAxis, chartcolors::kGreen, 1.8);
  m_testLoss->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssSquare, chartcolors::kGreen, chartcolors::kGreen, 6));
  setLegendColumns(3);
  finishUpdate();
}

void LossChart::showHistory(const MetricHistory& history) {
  const auto& rows = history.rows();
  QVector<double> steps, loss, meanSteps, lossMean;
  steps.reserve(rows.size());
  loss.reserve(rows.size());
  for (const auto& r : rows) {
    steps.push_back(r.step);
    loss.push_back(r.loss);
    if (!std::isnan(r.lossMean)) meanSteps.push_back(r.step), lossMean.push_back(r.lossMean);
  }
  m_loss->setData(steps, loss, true);
  m_lossMean->setData(meanSteps, lossMean, true);
  m_steps = history.steps();
  showChanges(history);

  QVector<double> accSteps, acc, lossSteps, testLoss;
  for (const auto& a : history.accuracy()) {
    accSteps.push_back(a.step);
    acc.push_back(a.percent);
    if (a.loss >= 0) lossSteps.push_back(a.step), testLoss.push_back(a.loss);
  }
  m_accuracy->setData(accSteps, acc, true);
  m_testLoss->setData(lossSteps, testLoss, true);
  fitValueAxis();
  finishUpdate();
}

// Loss is drawn from zero so that its fall reads as a fraction of where it started; the top
// leaves room for the highest of this run's and the kept runs' values.
void LossChart::fitValueAxis() {
  double maxLoss = 0;
  QList<QCPGraph*> graphs = {m_loss, m_testLoss};
  for (const Overlay& o : m_overlays)
    if (!o.diverged) graphs << o.graph;  // one run at 10^15 would flatten every other curve
  for (QCPGraph* g : graphs)
    for (const QCPGraphData& d : *g->data())
      if (std::isfinite(d.value)) maxLoss = std::max(maxLoss, d.value);
  yAxis->setRange(0, maxLoss > 0 ? maxLoss * 1.08 : 2.5);
}

void LossChart::keepAsOverlay(const QString& label, std::optional<RunConfig> of) {
  if (m_lossMean->data()->isEmpty()) return;
  // Diverged: a mean that is not finite, or that rose far past where it began.
  const double first = m_lossMean->data()->begin()->value;
  bool diverged = !std::isfinite(first);
  for (const QCPGraphData& d : *m_lossMean->data())
    diverged = diverged || !std::isfinite(d.value) || d.value > kDivergedFactor * first;
  // The oldest goes, and its run file with it when nothing else shows that run.
  if (m_overlays.size() >= kMaxOverlays) removeSeries(m_overlays.takeFirst().graph);
  // The mean, not every step: five noisy curves on top of each other would read as one smear.
  const QColor color = chartcolors::overlayColor(m_kept++);
  QString column = QString("loss_mean%1_nats [%2]").arg(MetricHistory::kMeanWindow).arg(label);
  column.replace(',', ';');
  QCPGraph* g = addSeries(
      diverged ? tr("%1 (earlier run, diverged)").arg(label) : tr("%1 (earlier run)").arg(label),
      column, yAxis, color, 1.6);
  // A value that is not finite is a gap in the line (QCustomPlot draws NaN as none).
  QVector<double> keys, values;
  for (const QCPGraphData& d : *m_lossMean->data())
    keys << d.key, values << (std::isfinite(d.value) ? d.value : qQNaN());
  g->setData(keys, values, true);
  g->setLayer("grid");  // under the run being trained, above the grid lines
  m_overlays.push_back({g, column, m_steps, std::move(of), diverged});
  fitLegend();
  fitValueAxis();
  finishUpdate();
}

QList<QCPAbstractPlottable*> LossChart::legendOptional() const {
  QList<QCPAbstractPlottable*> out;
  for (const Overlay& o : m_overlays) out << o.graph;
  return out;
}

void LossChart::clearOverlays() {
  for (const Overlay& o : m_overlays) removeSeries(o.graph);
  m_overlays.clear();
  fitLegend();
  fitValueAxis();
  finishUpdate();
}

// Every step of the run shown, and beside it the kept runs' mean loss at the same step: those
// are read whole (one number a step), the run shown streams past them.
void LossChart::writeCsv(QTextStream& out) const {
  const QString mean = QString("loss_mean%1_nats").arg(MetricHistory::kMeanWindow);
  out << "step,loss_nats," << mean << (m_evaluates ? ",test_accuracy_percent,test_loss_nats" : "");
  for (const Overlay& o : m_overlays) out << ',' << o.column;
  out << '\n';
  QString error;
  std::vector<std::vector<std::pair<double, double>>> kept(size_t(m_overlays.size()));
  for (size_t i = 0; i < kept.size() && error.isEmpty(); ++i)
    error = m_overlays[int(i)].steps.forEach([&](const MetricHistory::Row& r, const StepMetrics&) {
      kept[i].emplace_back(r.step, r.lossMean);
    });
  std::vector<size_t> next(kept.size(), 0);
  // The kept runs' cells at `step` (empty where a run has none), each run moving past it.
  const auto keptCells = [&](double step) {
    for (size_t i = 0; i < kept.size(); ++i) {
      out << ',';
      if (next[i] < kept[i].size() && kept[i][next[i]].first == step)
        out << csvNumber(kept[i][next[i]++].second);
    }
    out << '\n';
  };
  // Rows of steps the run shown does not have (a kept run that went further).
  const auto keptOnlyBefore = [&](double step) {
    for (;;) {
      double first = step;
      for (size_t i = 0; i < kept.size(); ++i)
        if (next[i] < kept[i].size()) first = std::min(first, kept[i][next[i]].first);
      if (first >= step) return;
      out << qlonglong(first) << (m_evaluates ? ",,,," : ",,");
      keptCells(first);
    }
  };
  if (error.isEmpty())
    error = m_steps.forEach([&](const MetricHistory::Row& r, const StepMetrics& m) {
      keptOnlyBefore(r.step);
      out << qlonglong(r.step) << ',' << csvNumber(r.loss) << ',' << csvNumber(r.lossMean);
      if (m_evaluates)
        out << ',' << (m.testAccuracy ? csvNumber(100.0 * *m.testAccuracy) : QString()) << ','
            << (m.testLoss ? csvNumber(*m.testLoss) : QString());
      keptCells(r.step);
    });
  keptOnlyBefore(std::numeric_limits<double>::infinity());
  setCsvError(error);
}

void LossChart::showRunOf(const RunConfig& c, bool settingsKnown) {
  describeAccuracy(c);
  if (!settingsKnown) return;
  const qsizetype before = m_overlays.size();
  m_overlays.removeIf([&](const Overlay& o) {
    const bool other = o.of && (o.of->model != c.model || o.of->dataset != c.dataset);
    if (other) removeSeries(o.graph);
    return other;
  });
  if (m_overlays.size() == before) return;
  fitLegend();
  fitValueAxis();
  finishUpdate();
}

void LossChart::describeAccuracy(const RunConfig& c) {
  const bool text = c.model == ModelKind::Gpt;
  m_accuracy->setName(text ? tr("next-character accuracy (held out)") : tr("test accuracy"));
  m_testLoss->setName(text ? tr("held-out loss per character") : tr("held-out loss"));
  // The GPT's label is long for a short plot: its short form keeps the unit.
  setAxisLabel(yAxis, text ? tr("loss (nats per character)") : tr("loss (nats)"),
               text ? tr("loss (nats/char)") : QString());
  setAxisLabel(yAxis2, text ? tr("next-character accuracy (%)") : tr("test accuracy (%)"),
               tr("accuracy (%)"));
  // A run that never evaluates (eval-every 0) has no held-out measurement: no legend entry, no
  // accuracy axis and no CSV column stands for one.
  m_evaluates = c.evalEvery > 0;
  for (QCPGraph* g : {m_accuracy, m_testLoss}) {
    g->setVisible(m_evaluates);
    if (m_evaluates) g->addToLegend();
    else g->removeFromLegend();
  }
  yAxis2->setVisible(m_evaluates);
  fitLegend();  // longer names: the columns laid out for the shorter ones would cut them
  finishUpdate();
}

// The engine's description of the run (describe.h), in brief.
QString LossChart::runLabel(const RunConfig& c, bool withRanks) {
  return QString::fromStdString(describeRun(c).brief(withRanks));
}

}  // namespace paralab
