// GoodputChart: goodput against K on a log2 axis beside Young/Daly's K (see goodput_chart.h).
// The figures are the engine's (train/goodput_sweep.h); this only draws them.
// See tests/app/tst_window_failures.cpp.
#include "charts/goodput_chart.h"

#include <cmath>

#include "charts/chart_colors.h"

namespace paralab {

GoodputChart::GoodputChart(QWidget* parent)
    : Chart("goodput", tr("Goodput vs checkpoint interval"), parent) {
  using namespace chartcolors;
  setTabTitle(tr("Goodput"));
  setKeyColumn("checkpoint_every");
  setAxisLabel(xAxis, tr("checkpoint every K steps (log scale)"), tr("K (steps)"));
  setAxisLabel(yAxis, tr("goodput (useful steps/s)"), tr("steps/s"));
  xAxis->setScaleType(QCPAxis::stLogarithmic);
  m_measured =
      addSeries(tr("measured (emulated failures)"), "goodput_steps_per_s", yAxis, kBlue, 2);
  m_measured->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kBlue, kBlue, 7));
  m_best = addSeries(tr("best K measured"), "best_goodput_steps_per_s", yAxis, kGreen, 0);
  m_best->setLineStyle(QCPGraph::lsNone);
  m_best->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(kGreen, 2.5), Qt::NoBrush, 16));
  m_youngDaly = addSeries(tr("Young/Daly (reference)"), "young_daly_reference", yAxis, kRed, 1.6);
  m_youngDaly->setPen(QPen(kRed, 1.6, Qt::DashLine));
  setLegendColumns(2);
  setToolTip(
      tr("<p>Each point: the same run under the same emulated failures (--mtbf, seeded) with a "
         "checkpoint every K steps; goodput is its useful steps per second of wall time, "
         "failures, redone steps and checkpoints included. The dashed line is Young/Daly's "
         "optimum √(2·C·MTBF) in steps, C the checkpoint cost measured in the sweep: a "
         "reference, not a measurement.</p>"));
  clear();
}

void GoodputChart::clear() {
  setSubtitle(QString());
  m_sweep = {};
  m_measured->data()->clear();
  m_best->data()->clear();
  m_youngDaly->data()->clear();
  // The empty axis in powers of two, as Ks are swept: a log axis's own ticks crowd its top.
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int k = 1; k <= 64; k *= 2) ticker->addTick(k, QString::number(k));
  xAxis->setTicker(ticker);
  showEmpty({0.8, 80}, {0, 1});
  setPlaceholderText(
      tr("No goodput sweep yet: in the sweep panel choose \"checkpoint interval K\" and Run "
         "sweep"));
}

void GoodputChart::showHistory(const MetricHistory&) {}

void GoodputChart::showSweep(const GoodputSweepResult& sweep, const QString& subtitle) {
  clear();
  setSubtitle(subtitle);
  if (sweep.points.empty()) return;
  m_sweep = sweep;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double top = 0, lo = sweep.points.front().checkpointEvery, hi = lo;
  for (const GoodputPoint& p : sweep.points) {
    m_measured->addData(p.checkpointEvery, p.goodput);
    ticker->addTick(p.checkpointEvery, QString::number(p.checkpointEvery));
    if (p.checkpointEvery == sweep.bestK) m_best->addData(p.checkpointEvery, p.goodput);
    top = std::max(top, p.goodput);
    lo = std::min(lo, double(p.checkpointEvery));
    hi = std::max(hi, double(p.checkpointEvery));
  }
  xAxis->setTicker(ticker);
  m_best->setName(tr("best K measured: %1").arg(sweep.bestK));
  if (sweep.youngDalySteps > 0) {
    const double k = sweep.youngDalySteps;
    lo = std::min(lo, k), hi = std::max(hi, k);
    m_youngDaly->addData(k, 0);
    m_youngDaly->addData(k, top * 1.15);
    m_youngDaly->setName(tr("Young/Daly √(2·C·MTBF) = %1 steps\n(reference; C = %2 ms measured)")
                             .arg(k, 0, 'f', 1)
                             .arg(1e3 * sweep.checkpointCostS, 0, 'f', 2));
  }
  xAxis->setRange(lo / 1.4, hi * 1.4);
  yAxis->setRange(0, top * 1.15);
  setPlaceholderVisible(false);
  fitLegend();
  replot(rpQueuedReplot);
}

void GoodputChart::writeCsv(QTextStream& out) const {
  const GoodputSweepResult& r = m_sweep;
  out << "# mtbf_s " << csvNumber(r.mtbfS) << ", checkpoint_cost_s " << csvNumber(r.checkpointCostS)
      << ", restart_s " << csvNumber(r.restartS) << ", step_s " << csvNumber(r.stepS)
      << ", young_daly_steps_reference " << csvNumber(r.youngDalySteps) << ", best_k " << r.bestK
      << ", runs_per_k " << r.repeats << '\n';
  out << "checkpoint_every,goodput_steps_per_s,failures,checkpoints,wall_s,lost_s,checkpoint_s\n";
  for (const GoodputPoint& p : r.points)
    out << p.checkpointEvery << ',' << csvNumber(p.goodput) << ',' << p.failures << ','
        << p.checkpoints << ',' << csvNumber(p.wallS) << ',' << csvNumber(p.lostS) << ','
        << csvNumber(p.checkpointS) << '\n';
}

}  // namespace paralab
