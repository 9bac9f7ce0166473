// OverlapChart: per-rank stacked bars of the overlap meter of the last step (overlap_chart.h).
// The figures are the engine's (RankMetrics::overlap), only stacked: compute − hidden, hidden,
// exposed, idle, which add up to the rank's step. See tests/app/tst_charts_ranks.cpp.
#include "charts/overlap_chart.h"

#include <QLocale>

#include "charts/chart_colors.h"
#include "charts/metric_history.h"

namespace paralab {

namespace {

constexpr double kBarWidth = 0.55;

}  // namespace

OverlapChart::OverlapChart(QWidget* parent)
    : Chart("overlap", tr("Overlap per rank, last step"), parent) {
  setTabTitle(tr("Overlap"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, tr("rank"));
  setAxisLabel(yAxis, tr("time in the step (ms)"), tr("ms"));
  xAxis->grid()->setVisible(false);
  xAxis->setTickLength(0, 0);
  const std::array<QString, kLayers> names = {tr("compute alone"),
                                              tr("communication hidden (under compute)"),
                                              tr("communication exposed"), tr("idle")};
  const std::array<QColor, kLayers> colors = {chartcolors::kBlue, chartcolors::kGreen,
                                              chartcolors::kRed, chartcolors::kGrey};
  QCPBars* below = nullptr;
  for (int l = 0; l < kLayers; ++l) {
    auto* bars = new QCPBars(xAxis, yAxis);
    bars->setName(names[size_t(l)]);
    bars->setBrush(colors[size_t(l)]);
    bars->setPen(QPen(colors[size_t(l)].darker(130), 1));
    bars->setWidth(kBarWidth);
    if (below) bars->moveAbove(below);
    below = bars;
    m_bars[size_t(l)] = bars;
  }
  setLegendColumns(2);
  connect(this, &QCustomPlot::afterLayout, this, &OverlapChart::fitLabels);
  setToolTip(
      tr("<p>Each rank's last step, stacked: the time it computed alone, the time it "
         "computed while its communication ran (<b>hidden</b>: the bucketed all-reduce "
         "during the backward, the ring's blocks in flight), the time it only "
         "communicated (<b>exposed</b>: what communication added to the step) and idle. "
         "The bar is the step's time.</p><p>Above each bar: the share of its "
         "communication that hid. Measured from the rank's spans as unions of intervals "
         "(lessons/reference/metrics.md, Overlap); the run's totals are in the "
         "summary.</p>"));
  clear();
}

void OverlapChart::clear() {
  for (QCPBars* b : m_bars) b->data()->clear();
  for (QCPItemText* t : m_shares) removeItem(t);
  m_shares.clear();
  m_rows.clear();
  xAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
  showEmpty({-0.6, 0.6}, {0, 1});
}

void OverlapChart::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void OverlapChart::showSnapshot(const Snapshot& s) {
  if (s.steps.empty()) return;
  const StepMetrics& step = s.steps.back();
  clear();
  for (const RankMetrics& r : step.ranks)
    if (r.overlap) m_rows.push_back({r.rank, *r.overlap});
  if (m_rows.empty()) {
    setPlaceholderText(tr("No overlap figures: this run's spans were not recorded"));
    replot(rpQueuedReplot);
    return;
  }
  double top = 0;
  for (const Row& row : m_rows) {
    const OverlapMeter& m = row.meter;
    const double x = row.rank;
    const double layers[kLayers] = {std::max(0.0, m.computeMs - m.hiddenMs), m.hiddenMs,
                                    m.exposedMs, m.idleMs};
    double height = 0;
    for (int l = 0; l < kLayers; ++l) {
      // A zero is left out: an empty bar would still draw its outline, a line on the axis.
      if (layers[l] > 0) m_bars[size_t(l)]->addData(x, layers[l]);
      height += layers[l];
    }
    top = std::max(top, height);
    auto* label = new QCPItemText(this);
    label->position->setType(QCPItemPosition::ptPlotCoords);
    label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    label->setClipToAxisRect(false);
    label->setPadding(QMargins(0, 0, 0, 4));  // a gap above the bar's outline
    label->setColor(palette().color(QPalette::WindowText));
    label->setFont(xAxis->tickLabelFont());
    label->position->setCoords(x, height);
    m_shares.push_back(label);
  }
  fitLegend();
  xAxis->setRange(-0.6, double(m_rows.back().rank) + 0.6);
  yAxis->setRange(0, top > 0 ? top * 1.18 : 1);  // room above the bars for their share
  m_words = -1;
  fitLabels();  // for the plot as it is now; the next layout fits them to its width
  setPlaceholderVisible(false);
  replot(rpQueuedReplot);
}

void OverlapChart::fitLabels() {
  if (m_rows.empty()) return;
  const QFontMetrics fm(xAxis->tickLabelFont());
  const double rankPx = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0));
  const int gap = fm.horizontalAdvance(' ') * 2;
  const QString widest = QString::number(m_rows.back().rank);
  // 2: "rank 3" and "40 % hidden"; 1: "3" and "40 %"; 0: "3" and no share.
  const int words = rankPx >= fm.horizontalAdvance(tr("100 % hidden")) + gap ? 2
                    : rankPx >= fm.horizontalAdvance(tr("100 %")) + gap      ? 1
                                                                             : 0;
  if (words == m_words) return;
  m_words = words;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t i = 0; i < m_rows.size(); ++i) {
    const Row& row = m_rows[i];
    const bool named =
        words == 2 && rankPx >= fm.horizontalAdvance(tr("rank %1").arg(widest)) + gap;
    ticker->addTick(row.rank, named ? tr("rank %1").arg(row.rank) : QString::number(row.rank));
    const OverlapMeter& m = row.meter;
    const QString share = QLocale::c().toString(100 * m.hiddenShare(), 'f', 0);
    QCPItemText* label = m_shares[int(i)];
    label->setVisible(words > 0);
    label->setText(m.commMs <= 0 ? (words == 2 ? tr("no comm") : tr("–"))
                   : words == 2  ? tr("%1 % hidden").arg(share)
                                 : tr("%1 %").arg(share));
  }
  xAxis->setTicker(ticker);
  setAxisLabel(xAxis,
               words == 2   ? tr("rank")
               : words == 1 ? tr("rank (above each bar: the share of its communication hidden)")
                            : tr("rank (hidden shares: the CSV, or a wider chart)"),
               tr("rank"));
  replot(rpQueuedReplot);
}

void OverlapChart::applyLook(const QPalette& palette) {
  Chart::applyLook(palette);
  for (QCPItemText* t : m_shares) {
    t->setColor(palette.color(QPalette::WindowText));
    t->setFont(xAxis->tickLabelFont());
  }
}

int OverlapChart::pointCount() const {
  int n = 0;
  for (QCPBars* b : m_bars) n += b->dataCount();
  return n;
}

void OverlapChart::writeCsv(QTextStream& out) const {
  out << "rank,compute_ms,comm_ms,hidden_ms,exposed_ms,idle_ms,hidden_share\n";
  for (const Row& r : m_rows) {
    const OverlapMeter& m = r.meter;
    out << r.rank << ',' << csvNumber(m.computeMs) << ',' << csvNumber(m.commMs) << ','
        << csvNumber(m.hiddenMs) << ',' << csvNumber(m.exposedMs) << ',' << csvNumber(m.idleMs)
        << ',' << csvNumber(m.hiddenShare()) << '\n';
  }
}

}  // namespace paralab
