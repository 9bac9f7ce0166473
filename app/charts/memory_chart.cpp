// MemoryChart: per-rank bytes by category, peaks and the formula's reference (memory_chart.h).
// Bars are the tracker's bytes as the snapshot carries them, only divided into the axis unit.
// See tests/app/tst_charts.cpp (memoryBarsAreTheSnapshotBytes).
#include "charts/memory_chart.h"

#include <QToolTip>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/hatch.h"
#include "charts/metric_history.h"
#include "memory_estimate.h"  // stateWidths: each category's dtype

namespace paralab {

namespace {

// Measured stack left of the rank's tick, the reference bar right of it.
constexpr double kStackOffset = -0.12, kStackWidth = 0.5;
constexpr double kRefOffset = 0.26, kRefWidth = 0.22;

QString categoryName(MemCategory c) {
  switch (c) {
    case MemCategory::Params:
      return QObject::tr("params");
    case MemCategory::Grads:
      return QObject::tr("grads");
    case MemCategory::Optimizer:
      return QObject::tr("optimizer");
    case MemCategory::Activations:
      return QObject::tr("activations");
    case MemCategory::Comm:
      return QObject::tr("comm buffers");
    case MemCategory::Workspace:
      return QObject::tr("workspace");
    case MemCategory::Master:
      return QObject::tr("master params");
  }
  return {};
}

// A category with the dtype the run stores it in (memory_estimate.h, stateWidths): "params
// (bf16)" under mixed precision, "grads (fp32)".
QString categoryWithDtype(MemCategory c, Dtype precision) {
  const StateWidths w = stateWidths(precision);
  const int bytes = c == MemCategory::Params || c == MemCategory::Activations ? w.params : 4;
  const std::string half = nameOf(precision);
  const std::string_view dtype = memDtypeName(bytes, half);
  return QStringLiteral("%1 (%2)").arg(categoryName(c),
                                        QString::fromUtf8(dtype.data(), qsizetype(dtype.size())));
}

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : Chart("memory", tr("Memory per rank"), parent) {
  setTabTitle(tr("Memory"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, tr("rank"));
  setAxisLabel(yAxis, tr("memory per rank (B)"), tr("memory (B)"));
  xAxis->grid()->setVisible(false);
  QCPBars* below = nullptr;
  for (int c = 0; c < kMemCategories; ++c) {
    auto* bars = new QCPBars(xAxis, yAxis);
    const QColor color = chartcolors::memoryColor(MemCategory(c));
    bars->setName(categoryName(MemCategory(c)));
    bars->setBrush(color);
    bars->setPen(QPen(color.darker(130), 1));
    bars->setWidth(kStackWidth);
    if (below) bars->moveAbove(below);
    below = bars;
    m_bars[size_t(c)] = bars;
  }
  m_bars[size_t(MemCategory::Master)]->removeFromLegend();  // until a run holds one
  m_peakLegend = addGraph();
  m_peakLegend->setPen(QPen(chartcolors::kRed, 2.2));
  m_peakLegend->setName(tr("step peak"));
  m_reference = new HatchedBars(xAxis, yAxis);
  m_reference->setWidth(kRefWidth);
  m_reference->setPen(QPen(chartcolors::kReference, 1.4, Qt::DashLine));
  m_reference->setBrush(QBrush(chartcolors::kReference, Qt::BDiagPattern));
  m_reference->setName(tr("reference"));
  setLegendColumns(4);
  setPlaceholderText(tr("No data yet: press Start (F5) to train"));
  setToolTip(
      tr("<p>Bytes each rank's tracking allocator counts at the end of the last step, "
         "stacked by category; the red line is the step's peak of their sum.</p><p>The "
         "hatched bar is the lesson's formula for parameters + gradients + optimizer "
         "state of P parameters over N ranks (fp32: 4 bytes each; momentum 4, Adam 8 "
         "per parameter), a reference to compare with "
         "the blue, cyan and purple part of the stack.</p>"));
  clear();
}

void MemoryChart::clear() {
  for (QCPBars* b : m_bars) b->data()->clear();
  m_reference->data()->clear();
  for (QCPItemLine* l : m_peaks) removeItem(l);
  m_peaks.clear();
  m_mem.clear();
  m_ranks.clear();
  m_ref.reset();
  m_unit = 1;
  showEmpty({-0.6, 0.6}, {0, 1});
}

void MemoryChart::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void MemoryChart::showSnapshot(const Snapshot& s) {
  if (s.steps.empty()) return;
  const StepMetrics& step = s.steps.back();
  clear();
  m_ref = modelStatesReference(s.config, s.parameterCount);
  double maxBytes = m_ref ? m_ref->total() : 0;
  for (const RankMetrics& r : step.ranks) {
    m_mem.push_back(r.mem);
    m_ranks.push_back(r.rank);
    maxBytes = std::max({maxBytes, double(r.mem.total()), double(r.mem.peakTotal)});
  }
  // Each category says its dtype; the master copy is listed in a mixed-precision run.
  m_precision = s.config.precision;
  for (int c = 0; c < kMemCategories; ++c)
    m_bars[size_t(c)]->setName(categoryWithDtype(MemCategory(c), m_precision));
  if (m_precision == Dtype::Bf16 || m_precision == Dtype::Fp16)
    m_bars[size_t(MemCategory::Master)]->addToLegend();
  else
    m_bars[size_t(MemCategory::Master)]->removeFromLegend();
  const ByteUnit unit = byteUnitFor(maxBytes);
  m_unit = unit.bytes;
  setAxisLabel(yAxis, tr("memory per rank (%1)").arg(unit.name), tr("memory (%1)").arg(unit.name));

  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t i = 0; i < step.ranks.size(); ++i) {
    const RankMetrics& r = step.ranks[i];
    const double x = r.rank + kStackOffset;
    ticker->addTick(r.rank, QString::number(r.rank));
    for (int c = 0; c < kMemCategories; ++c)
      m_bars[size_t(c)]->addData(x, double(r.mem.current[size_t(c)]) / m_unit);
    auto* peak = new QCPItemLine(this);
    peak->setPen(m_peakLegend->pen());
    peak->start->setCoords(x - kStackWidth / 2, double(r.mem.peakTotal) / m_unit);
    peak->end->setCoords(x + kStackWidth / 2, double(r.mem.peakTotal) / m_unit);
    m_peaks.push_back(peak);
    if (m_ref) m_reference->addData(r.rank + kRefOffset, m_ref->total() / m_unit);
  }
  xAxis->setTicker(ticker);
  if (m_ref) m_reference->setName(tr("reference: %1").arg(m_ref->formula));
  setAxisLabel(xAxis,
               m_ref ? tr("rank   (P = %L1 parameters, N = %2 data-parallel ranks)")
                           .arg(s.parameterCount)
                           .arg(s.config.dpDegree())
                     : tr("rank"),
               tr("rank"));
  // No formula for this run (tensor, pipeline, expert parallel, ...): no reference entry.
  if (m_ref)
    m_reference->addToLegend();
  else
    m_reference->removeFromLegend();
  fitLegend();
  const double ranks = double(step.ranks.size());
  xAxis->setRange(-0.6, ranks - 0.4);
  yAxis->setRange(0, maxBytes / m_unit * 1.12);
  setPlaceholderVisible(step.ranks.empty());
  replot(rpQueuedReplot);
}

int MemoryChart::pointCount() const {
  int n = m_reference->dataCount();
  for (QCPBars* b : m_bars) n += b->dataCount();
  return n;
}

void MemoryChart::writeCsv(QTextStream& out) const {
  // The master copy's column in a mixed-precision run's CSV.
  const bool master = m_precision == Dtype::Bf16 || m_precision == Dtype::Fp16;
  const auto listed = [&](int c) { return master || MemCategory(c) != MemCategory::Master; };
  out << "rank";
  for (int c = 0; c < kMemCategories; ++c)
    if (listed(c)) out << ',' << memCategoryName(MemCategory(c)).data() << "_bytes";
  out << ",peak_bytes,model_states_reference_bytes\n";
  for (size_t r = 0; r < m_mem.size(); ++r) {
    out << m_ranks[r];
    for (int c = 0; c < kMemCategories; ++c)
      if (listed(c)) out << ',' << m_mem[r].current[size_t(c)];
    out << ',' << m_mem[r].peakTotal << ',';
    if (m_ref) out << qint64(std::llround(m_ref->total()));
    out << '\n';
  }
}

}  // namespace paralab
