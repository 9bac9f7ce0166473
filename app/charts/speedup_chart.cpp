// SpeedupChart: measured points, ideal line and fitted law of a sweep (see speedup_chart.h).
// The fits are the engine's (engine/train/sweep.h); this only samples them for drawing.
// See tests/app/tst_charts.cpp (speedupDrawsTheSweep).
#include "charts/speedup_chart.h"

#include <cmath>

#include "charts/chart_colors.h"
#include "charts/metric_history.h"

namespace paralab {

QString SpeedupChart::fitName(const SweepResult& sweep) {
  const bool weak = sweep.scaling == Scaling::Weak;
  const char* law = weak ? "Gustafson" : "Amdahl";
  // A fraction outside 0..1 is no fraction of the work: words, not a number to trust (the
  // sweep panel says why in full).
  if (!fitCaveat(sweep).empty()) {
    const bool slower = weak ? sweep.gustafson.s > 1 : sweep.amdahl.p < 0;
    return slower ? tr("%1's law does not fit: more ranks made it slower").arg(law)
                  : tr("%1's law does not fit: faster than ideal").arg(law);
  }
  // What the fit stands on: the ranks it was fitted on and whether they shared cores (the
  // dotted cores line marks where sharing starts), on a line of its own: on one line the entry
  // is wider than the chart at 1280×720.
  const QString over =
      sweep.points.empty()
          ? QString()
          : tr("\nfitted on %1")
                .arg(QString::fromStdString(fitBasis(sweep.points.front().ranks,
                                                     sweep.points.back().ranks, sweep.cores)));
  return weak ? tr("Gustafson fit s = %1, R² = %2 (reference)%3")
                    .arg(sweep.gustafson.s, 0, 'f', 3)
                    .arg(QString::fromStdString(r2Text(sweep.gustafson.r2)), over)
              : tr("Amdahl fit p = %1, R² = %2 (reference)%3")
                    .arg(sweep.amdahl.p, 0, 'f', 3)
                    .arg(QString::fromStdString(r2Text(sweep.amdahl.r2)), over);
}

SpeedupChart::SpeedupChart(QWidget* parent) : Chart("speedup", tr("Speedup vs ranks"), parent) {
  setTabTitle(tr("Speedup"));
  using namespace chartcolors;
  setKeyColumn("ranks");
  setAxisLabel(xAxis, tr("ranks (N)"));
  setAxisLabel(yAxis, tr("speedup (×)"));
  m_measured = addSeries(tr("measured"), "measured_speedup", yAxis, kBlue, 2);
  m_measured->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kBlue, kBlue, 8));
  m_ideal = addSeries(tr("ideal S = N"), "ideal_speedup", yAxis, kReference, 1.4);
  m_ideal->setPen(QPen(kReference, 1.4, Qt::DotLine));
  m_fit = addSeries(tr("fit (reference)"), "fit_speedup_reference", yAxis, kRed, 1.6);
  m_fit->setPen(QPen(kRed, 1.6, Qt::DashLine));
  m_fit->setAdaptiveSampling(false);
  setLegendColumns(3);
  setPlaceholderText(
      tr("No sweep yet: Run Scaling Sweep (Ctrl+R) measures these settings at several rank "
         "counts"));
  connect(this, &QCustomPlot::afterLayout, this, &SpeedupChart::placeLabels);
  setToolTip(
      tr("<p>Speedup from the median step time of each rank count: strong scaling "
         "T₁ / T<sub>N</sub> (same global batch), weak scaling N · T₁ / T<sub>N</sub> "
         "(batch per rank fixed). The fitted law is a reference drawn through the "
         "measured points, not a measurement.</p>"));
  clear();
}

void SpeedupChart::clear() {
  setSubtitle(QString());
  for (QCPGraph* g : {m_measured, m_ideal, m_fit}) g->data()->clear();
  for (QCPItemText* t : m_labels) removeItem(t);
  m_labels.clear();
  if (m_coresLine) removeItem(m_coresLine), removeItem(m_coresLabel);
  m_coresLine = nullptr, m_coresLabel = nullptr;
  xAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
  xAxis->setRange(0, 8.5);
  yAxis->setRange(0, 8.5);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

void SpeedupChart::showHistory(const MetricHistory&) {}

void SpeedupChart::writeCsv(QTextStream& out) const {
  out << "ranks,measured_speedup,efficiency,ideal_speedup,fit_speedup_reference\n";
  for (const QCPGraphData& d : *m_measured->data()) {
    const auto fit = m_fit->data()->findBegin(d.key, false);
    const bool fitted = fit != m_fit->data()->constEnd() && fit->key == d.key;
    out << qlonglong(std::llround(d.key)) << ',' << csvNumber(d.value) << ','
        << csvNumber(d.value / d.key) << ',' << qlonglong(std::llround(d.key)) << ','
        << (fitted ? csvNumber(fit->value) : QString()) << '\n';
  }
}

void SpeedupChart::showSweep(const SweepResult& sweep, const QString& subtitle) {
  clear();
  setSubtitle(subtitle);
  if (sweep.points.empty()) return;
  const bool weak = sweep.scaling == Scaling::Weak;
  setAxisLabel(yAxis, weak ? tr("scaled speedup N·T(1) / T(N) (×)") : tr("speedup T(1) / T(N) (×)"),
               weak ? tr("scaled speedup (×)") : tr("speedup (×)"));
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double maxN = 1, maxS = 1;
  for (const SweepPoint& p : sweep.points) {
    m_measured->addData(p.ranks, p.speedup);
    ticker->addTick(p.ranks, QString::number(p.ranks));
    maxN = std::max(maxN, double(p.ranks));
    maxS = std::max(maxS, p.speedup);
    auto* label = new QCPItemText(this);
    label->position->setCoords(p.ranks, p.speedup);
    label->setText(tr("%1 %").arg(100 * p.efficiency, 0, 'f', 0));
    label->setColor(chartcolors::kBlue);
    label->setFont(legend->font());
    m_labels.push_back(label);
  }
  xAxis->setTicker(ticker);
  m_ideal->addData(1, 1);
  m_ideal->addData(maxN, maxN);

  // The law, sampled finely between the rank counts and exactly at each of them; not drawn
  // where it does not fit (a fraction outside 0..1 describes no run).
  m_fit->setName(fitName(sweep));
  if (fitCaveat(sweep).empty()) {
    QVector<double> n;
    for (int i = 0; i <= 120; ++i) n.push_back(1 + (maxN - 1) * i / 120.0);
    for (const SweepPoint& p : sweep.points) n.push_back(p.ranks);
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    for (double x : n)
      m_fit->addData(x, weak ? sweep.gustafson.speedup(x) : sweep.amdahl.speedup(x));
  }
  m_measured->setName(sweep.cancelled ? tr("measured (sweep cancelled), labels: efficiency")
                                      : tr("measured, labels: efficiency S/N"));
  // Past the machine's cores, ranks take turns: mark where that starts.
  if (!coresCaveat(sweep).empty()) {
    m_coresLine = new QCPItemStraightLine(this);
    m_coresLine->point1->setCoords(sweep.cores, 0);
    m_coresLine->point2->setCoords(sweep.cores, 1);
    m_coresLine->setPen(QPen(chartcolors::kReference, 1, Qt::DotLine));
    m_coresLabel = new QCPItemText(this);
    m_coresLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_coresLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_coresLabel->position->setCoords(sweep.cores, 0);
    m_coresLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_coresLabel->setPadding(QMargins(4, 2, 0, 0));
    m_coresLabel->setText(tr("%1 cores here: ranks beyond\ntake turns on them").arg(sweep.cores));
    m_coresLabel->setColor(chartcolors::kReference);
    m_coresLabel->setFont(legend->font());
  }
  fitLegend();  // the names now carry the fit
  xAxis->setRange(0.5, maxN + 0.5);
  yAxis->setRange(0, std::max(maxN, maxS) * 1.12);
  setPlaceholderVisible(false);
  replot(rpQueuedReplot);
}

// Each efficiency label beside its point where it fits in the plot and clear of the labels
// placed before it (and of the cores note): right and below first (clear of the ideal line,
// which runs above the points), then the other corners; a label with no room is left out
// (the sweep panel's table lists every efficiency).
void SpeedupChart::placeLabels() {
  const QRect plot = axisRect()->rect();
  QList<QRect> taken;
  if (m_coresLabel) {
    const QPointF at = m_coresLabel->position->pixelPosition();
    const QRect text = QFontMetrics(m_coresLabel->font())
                           .boundingRect(0, 0, 0, 0, Qt::AlignLeft, m_coresLabel->text());
    taken << QRect(at.toPoint(), text.size() + QSize(4, 2));
  }
  struct Corner {
    Qt::Alignment align;
    QMargins padding;
  };
  const Corner corners[] = {{Qt::AlignLeft | Qt::AlignTop, {8, 6, 0, 0}},
                            {Qt::AlignRight | Qt::AlignBottom, {0, 0, 8, 6}},
                            {Qt::AlignLeft | Qt::AlignBottom, {8, 0, 0, 6}},
                            {Qt::AlignRight | Qt::AlignTop, {0, 6, 8, 0}}};
  const QFontMetrics fm(legend->font());
  for (QCPItemText* label : m_labels) {
    const QPoint at = label->position->pixelPosition().toPoint();
    const QSize text = fm.size(0, label->text());
    label->setVisible(false);
    for (const Corner& c : corners) {
      const QSize box =
          text + QSize(c.padding.left() + c.padding.right(), c.padding.top() + c.padding.bottom());
      QRect r(at, box);
      if (c.align & Qt::AlignRight) r.moveRight(at.x());
      if (c.align & Qt::AlignBottom) r.moveBottom(at.y());
      // A few pixels apart at least: "17 %" and "6 %" touching read as "17 %6 %".
      const QRect apart = r.adjusted(-4, -2, 4, 2);
      if (!plot.contains(r) || std::any_of(taken.begin(), taken.end(),
                                           [&](const QRect& t) { return t.intersects(apart); }))
        continue;
      label->setPositionAlignment(c.align);
      label->setPadding(c.padding);
      label->setVisible(true);
      taken << r;
      break;
    }
  }
}

}  // namespace paralab
