// BenchChart: each teaching benchmark drawn as bars (see bench_chart.h). This file holds what
// every kind shares: the series, clearing, value labels and notes, and x-axis names fitted to
// the plot's width; each kind's drawing is in bench_chart_measured.cpp and
// bench_chart_projected.cpp, its CSV in bench_chart_csv.cpp. See tests/app/tst_charts_bench.cpp.
#include "charts/bench_chart.h"

#include <algorithm>
#include <cmath>

#include "charts/chart_colors.h"
#include "charts/hatch.h"

namespace paralab {

namespace {

// HatchedBars: the memory-bound bars and their legend key are hatched.
QCPBars* makeBars(QCPAxis* x, QCPAxis* y, const QString& name, const QColor& color) {
  auto* b = new HatchedBars(x, y);
  b->setName(name);
  b->setBrush(color);
  b->setPen(QPen(color.darker(130), 1));
  b->setWidth(0.6);
  return b;
}

}  // namespace

BenchChart::BenchChart(QWidget* parent) : Chart("benchmark", tr("Teaching benchmark"), parent) {
  setTabTitle(tr("Benchmark"));
  using namespace chartcolors;
  xAxis->grid()->setVisible(false);
  m_rungs = makeBars(xAxis, yAxis, tr("ParaLab rungs (measured)"), kBlue);
  m_vendor = makeBars(xAxis, yAxis, tr("OpenBLAS (measured)"), kOrange);
  m_ideal = makeBars(xAxis, yAxis, tr("lanes × the scalar rate (reference formula)"), kReference);
  m_ideal->setBrush(Qt::NoBrush);
  m_ideal->setPen(QPen(kReference, 1.4, Qt::DashLine));
  m_peak = addGraph();
  m_peak->setPen(QPen(kReference, 1.6, Qt::DashLine));
  m_group = new QCPBarsGroup(this);
  m_shared = makeBars(xAxis, yAxis, tr("counters in one cache line"), kRed);
  m_padded = makeBars(xAxis, yAxis, tr("padded: a line each"), kBlue);
  for (QCPBars* b : {m_shared, m_padded}) b->setWidth(0.38), b->setBarsGroup(m_group);
  auto* rates = new QCPBarsGroup(this);
  m_cpuRate = makeBars(xAxis, yAxis, tr("CPU samples/s (bars)"), kBlue);
  m_gpuRate = makeBars(xAxis, yAxis, tr("GPU samples/s (bars)"), kGreen);
  for (QCPBars* b : {m_cpuRate, m_gpuRate}) b->setWidth(0.38), b->setBarsGroup(rates);
  m_cpuLatency = addGraph(xAxis, yAxis2);
  m_cpuLatency->setName(tr("CPU ms per forward (line, right axis)"));
  m_cpuLatency->setPen(QPen(kPurple, 2));
  m_cpuLatency->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kPurple, kPurple, 6));
  m_gpuLatency = addGraph(xAxis, yAxis2);
  m_gpuLatency->setName(tr("GPU ms per forward (line, right axis)"));
  m_gpuLatency->setPen(QPen(kBrown, 2, Qt::DashLine));
  m_gpuLatency->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, kBrown, kBrown, 6));
  m_cpuLayers = makeBars(xAxis, yAxis, tr("measured on this CPU"), kBlue);
  m_gpuLayers = makeBars(xAxis, yAxis, tr("measured on the GPU"), kPurple);
  const QColor gpuColors[2] = {kGreen, kOrange};
  for (int g = 0; g < 2; ++g)
    for (int bound = 0; bound < 2; ++bound) {
      QCPBars* b = makeBars(xAxis, yAxis, QString(), gpuColors[g]);
      // Memory-bound: hatched; compute-bound: solid.
      if (bound == 0) b->setBrush(QBrush(gpuColors[g].darker(110), Qt::BDiagPattern));
      m_projected[g][bound] = b;
    }
  // A legend key, no data: how the GPU bars say what bounds them.
  m_boundKey =
      makeBars(xAxis, yAxis, tr("hatched: memory-bound, solid: compute-bound (roofline)"), kGrey);
  m_boundKey->setBrush(QBrush(kGrey, Qt::BDiagPattern));
  const QColor splitColors[4] = {kBlue, kRed, kGrey, kPurple};
  const QString splitNames[4] = {tr("compute (projected)"), tr("TP communication (projected)"),
                                 tr("pipeline bubble and sends (projected)"),
                                 tr("DP communication, optimizer, other (projected)")};
  for (int i = 0; i < 4; ++i) {
    m_split[i] = makeBars(xAxis, yAxis, splitNames[i], splitColors[i]);
    if (i > 0) m_split[i]->moveAbove(m_split[i - 1]);
  }
  setLegendColumns(2);
  setPlaceholderText(
      tr("No benchmark yet: a lesson step with a benchmark (lesson 4) runs one here"));
  setToolTip(
      tr("<p>A teaching benchmark, measured on this machine when its lesson step ran.</p>"
         "<p>GEMM ladder: GFLOP/s = 2n³ / the median seconds per call of each kernel; the "
         "dashed line is a reference formula, the FMA peak of one core (measured by a probe of "
         "independent fused multiply-adds) × the threads.</p><p>SIMD width: the same probe on "
         "one core at 1, 4, 8 and 16 floats per instruction; each dashed outline is lanes × the "
         "scalar rate, a reference formula.</p><p>False sharing: wall time over "
         "the increments each thread did, in ns, with the threads' counters in one 64-byte "
         "cache line or each on its own line.</p>"));
  clear();
}

void BenchChart::clear() {
  m_result.reset();
  // The names the ladder and false sharing keep; the counted kinds and the GIL name them anew.
  m_rungs->setName(tr("ParaLab rungs (measured)"));
  m_shared->setName(tr("counters in one cache line"));
  m_padded->setName(tr("padded: a line each"));
  for (QCPBars* b :
       {m_rungs, m_vendor, m_ideal, m_shared, m_padded, m_cpuRate, m_gpuRate, m_cpuLayers,
        m_gpuLayers, m_projected[0][0], m_projected[0][1], m_projected[1][0], m_projected[1][1],
        m_split[0], m_split[1], m_split[2], m_split[3], m_boundKey}) {
    b->data()->clear();
    b->removeFromLegend();
    b->setBaseValue(0);
  }
  for (QCPAbstractItem* i : m_items) removeItem(i);
  m_items.clear();
  m_groupNotes.clear();  // their items are among m_labels
  yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  yAxis->setNumberFormat("gbd");  // QCustomPlot's defaults, as the other kinds draw
  yAxis->setNumberPrecision(6);
  for (QCPGraph* g : {m_peak, m_cpuLatency, m_gpuLatency}) {
    g->data()->clear();
    g->removeFromLegend();
  }
  yAxis2->setVisible(false);
  yAxis->setScaleType(QCPAxis::stLinear);
  for (QCPItemText* t : m_labels) removeItem(t);
  m_labels.clear();
  m_notTimed = nullptr;  // one of m_labels
  setLabels({});
  setSubtitle(QString());
  setAxisLabel(xAxis, QString());
  setAxisLabel(yAxis, QString());
  m_tickNames.clear();
  xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  xAxis->setRange(0, 1);
  yAxis->setRange(0, 1);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

void BenchChart::addValueLabel(double x, double y, const QString& text, const QColor& color) {
  auto* label = new QCPItemText(this);
  label->position->setCoords(x, y);
  label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
  label->setPadding(QMargins(0, 0, 0, 3));
  label->setText(text);
  label->setColor(color);
  label->setFont(legend->font());
  label->setClipToAxisRect(false);
  m_labels << label;
}

void BenchChart::showResult(const BenchResult& result) {
  clear();
  m_result = result;
  if (result.ladder) showLadder(*result.ladder);
  if (result.simd) showSimd(*result.simd, result.repeats);
  if (result.falseSharing) showFalseSharing(*result.falseSharing);
  if (result.latencyCpu) showLatency(result);
  if (result.roofline) showRoofline(*result.roofline);
  if (result.layouts) showLayouts(*result.layouts);
  if (result.gpuCounts) showGpuCounts(*result.gpuCounts);
  if (result.gil) showGil(*result.gil, result.repeats);
  fitLegend();
  setPlaceholderVisible(pointCount() == 0);
  replot(rpQueuedReplot);
}

// A text at plot x `x`, `yRatio` of the way down the axis rect (0 its top edge).
QCPItemText* BenchChart::addNote(double x, double yRatio, const QString& text,
                                 const QColor& color) {
  auto* t = new QCPItemText(this);
  t->position->setTypeX(QCPItemPosition::ptPlotCoords);
  t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  t->position->setCoords(x, yRatio);
  t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  t->setTextAlignment(Qt::AlignHCenter);
  t->setText(text);
  t->setColor(color);
  t->setFont(legend->font());
  t->setClipToAxisRect(false);
  m_labels << t;
  return t;
}

QStringList BenchChart::plotTexts() const {
  QStringList out;
  for (const QCPItemText* t : m_labels)
    if (t->visible()) out << t->text();
  return out;
}

void BenchChart::setTickNames(const QStringList& names) {
  m_tickNames = names;
  fitTickNames();
}

void BenchChart::fitTickNames() {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetrics fm(xAxis->tickLabelFont());
  int widest = 0;
  for (const QString& t : m_tickNames)
    for (const QString& line : t.split('\n'))  // a name may take two lines
      widest = std::max(widest, fm.horizontalAdvance(line));
  // The plot's width before the first layout: the chart less the axes' usual margins.
  const int plot = axisRect()->width() > 0 ? axisRect()->width() : width() - 120;
  const double perTick = m_tickNames.isEmpty() ? 1 : double(plot) / m_tickNames.size();
  const int every = std::max(1, int(std::ceil((widest + 10) / std::max(1.0, perTick))));
  for (int i = 0; i < m_tickNames.size(); ++i)
    ticker->addTick(i + 1, i % every == 0 ? m_tickNames[i] : QString());
  xAxis->setTicker(ticker);
  fitNotTimed(plot);
  fitNotes(plot);
}

// A group's note in full where its lines fit over the group's slots, else the batch alone.
void BenchChart::fitNotes(int plot) {
  if (m_groupNotes.isEmpty() || m_tickNames.isEmpty()) return;
  const double room = double(plot) * m_groupSlots / (m_tickNames.size() + 0.2);
  for (GroupNote& n : m_groupNotes) {
    const QFontMetrics fm(n.item->font());
    const int wide = fm.boundingRect(QRect(), Qt::TextDontClip, n.full).width();
    n.item->setText(wide + 12 <= room ? n.full : n.brief);
  }
}

// "not timed" in the empty slots at the right end where it fits across them, on two lines
// where only "timed" fits; hidden where neither does (the subtitle says it anyway).
void BenchChart::fitNotTimed(int plot) {
  if (!m_notTimed || m_tickNames.isEmpty()) return;
  const double room = plot * (m_untimedSlots + 0.2) / (m_tickNames.size() + 0.2);
  const QFontMetrics fm(m_notTimed->font());
  const QString oneLine = tr("not timed"), twoLines = tr("not\ntimed");
  const auto fits = [&](const QString& t) {
    return fm.boundingRect(QRect(), Qt::TextDontClip, t).width() + 8 <= room;
  };
  m_notTimed->setText(fits(oneLine) ? oneLine : twoLines);
  m_notTimed->setVisible(fits(m_notTimed->text()));
}

void BenchChart::resizeEvent(QResizeEvent* event) {
  Chart::resizeEvent(event);
  if (m_tickNames.isEmpty()) return;
  fitTickNames();
  replot(rpQueuedReplot);
}

int BenchChart::pointCount() const {
  return m_rungs->dataCount() + m_vendor->dataCount() + m_shared->dataCount() +
         m_padded->dataCount() + m_cpuRate->dataCount() + m_gpuRate->dataCount() +
         m_cpuLayers->dataCount() + m_split[0]->dataCount();
}

QStringList BenchChart::tickLabels() const { return m_tickNames; }

}  // namespace paralab
