// TrafficChart: per-rank bytes by op of the last step (see traffic_chart.h), or by tier over
// several nodes. The bytes are the communicator's count (engine/comm/comm_accounting.h), split
// by RankMetrics::ops or RankMetrics::tiers.
// See tests/app/tst_charts_ranks.cpp (trafficBarsAreTheCountedBytes) and tst_charts_tiers.cpp.
#include "charts/traffic_chart.h"

#include <map>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/metric_history.h"

namespace paralab {

namespace {

constexpr double kBarWidth = 0.38;

QString layerName(const OpTraffic& o) {
  const QString op = QString::fromStdString(o.op);
  return o.group.empty() || o.group == "world" ? op : QString("%1 (%2)").arg(op, o.group.c_str());
}

}  // namespace

TrafficChart::TrafficChart(QWidget* parent)
    : Chart("traffic", tr("Traffic per rank, last step"), parent) {
  setTabTitle(tr("Traffic"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, tr("rank"));
  setAxisLabel(yAxis, tr("bytes per step (B)"), tr("B/step"));
  xAxis->grid()->setVisible(false);
  xAxis->setTickLength(0, 0);
  setLegendColumns(4);
  connect(this, &QCustomPlot::afterLayout, this, &TrafficChart::fitRankLabels);
  setToolTip(
      tr("<p>Payload bytes the communicator moved for each rank in the last step, "
         "counted by the algorithm actually run (a ring all-reduce sends 2(N−1)/N of "
         "the buffer per rank), stacked by kind of call and communicator group. Left "
         "bar: sent; right bar: received.</p><p>A run under MPI's or NCCL's own "
         "collectives cannot count them: its bytes are the algorithm's model, and the "
         "subtitle says \"bytes modelled\" (lessons/reference/metrics.md).</p><p>Over "
         "several nodes (--gpus-per-node) the bars are stacked by tier instead: bytes to and "
         "from ranks of the same node, and bytes between nodes.</p>"));
  clear();
}

void TrafficChart::clear() {
  for (QCPBars* b : m_layers) removePlottable(b);
  m_layers.clear();
  m_rows.clear();
  m_unit = 1;
  m_ranks = 0;
  m_byTier = false;
  setAxisLabel(xAxis, tr("rank"));
  xAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
  showEmpty({-0.6, 0.6}, {0, 1});
}

void TrafficChart::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void TrafficChart::showSnapshot(const Snapshot& s) {
  if (s.steps.empty()) return;
  const StepMetrics& step = s.steps.back();
  clear();
  const int g = step.gpusPerNode.value_or(0);
  if (g > 0 && g < int(step.ranks.size())) return showTiers(step);
  double maxBytes = 0;
  for (const RankMetrics& r : step.ranks) {
    int64_t sent = 0, recv = 0;
    for (const OpTraffic& o : r.ops) {
      m_rows.push_back({r.rank, o});
      sent += o.bytesSent, recv += o.bytesRecv;
    }
    // Bytes the per-op split does not cover (an engine without it): one layer of their own.
    if (sent != r.bytesSent || recv != r.bytesRecv)
      m_rows.push_back(
          {r.rank, {tr("other").toStdString(), "", 0, r.bytesSent - sent, r.bytesRecv - recv, 0}});
    maxBytes = std::max({maxBytes, double(r.bytesSent), double(r.bytesRecv)});
  }
  const ByteUnit unit = byteUnitFor(maxBytes);
  m_unit = unit.bytes;
  setAxisLabel(yAxis, tr("bytes per step (%1)").arg(unit.name), tr("%1/step").arg(unit.name));

  // One layer per (op, group), in a fixed order so every rank stacks them alike.
  std::map<std::pair<std::string, std::string>, QCPBars*> layers;
  for (const Row& row : m_rows) layers[{row.op.op, row.op.group}] = nullptr;
  QCPBars* below = nullptr;
  int shade = 0;
  QColor lastBase;
  for (auto& [key, bars] : layers) {
    bars = new QCPBars(xAxis, yAxis);
    const OpTraffic named{key.first, key.second};
    bars->setName(layerName(named));
    // Layers of one colour (a second group of an op; send beside recv) get lighter shades of
    // it, so no two legend entries look alike.
    const QColor base = chartcolors::commOpColor(QString::fromStdString(key.first));
    shade = base == lastBase ? shade + 1 : 0;
    lastBase = base;
    const QColor color = base.lighter(100 + 25 * shade);
    bars->setBrush(color);
    bars->setPen(QPen(color.darker(130), 1));
    bars->setWidth(kBarWidth);
    if (below) bars->moveAbove(below);
    below = bars;
    m_layers.push_back(bars);
  }
  fitLegend();
  for (const Row& row : m_rows) {
    QCPBars* bars = layers[{row.op.op, row.op.group}];
    // A zero is left out: an empty bar would still draw its outline, a line on the axis.
    if (row.op.bytesSent) bars->addData(row.rank + kSentOffset, double(row.op.bytesSent) / m_unit);
    if (row.op.bytesRecv) bars->addData(row.rank + kRecvOffset, double(row.op.bytesRecv) / m_unit);
  }
  m_ranks = int(step.ranks.size());
  xAxis->setRange(-0.6, double(m_ranks) - 0.4);
  m_barLabels = -1;
  fitRankLabels();  // for the plot as it is now; the next layout fits them to its width
  yAxis->setRange(0, maxBytes > 0 ? maxBytes / m_unit * 1.12 : 1);
  setPlaceholderText(tr("No communication in the last step"));
  setPlaceholderVisible(maxBytes == 0);
  replot(rpQueuedReplot);
}

// Two layers, inside a node and between nodes, of the bytes each rank sent and received.
void TrafficChart::showTiers(const StepMetrics& step) {
  m_byTier = true;
  double maxBytes = 0;
  for (const RankMetrics& r : step.ranks) {
    const TierBytes t = r.tiers.value_or(TierBytes{r.bytesSent, r.bytesRecv, 0, 0});
    m_rows.push_back({r.rank, {"intra-node", "", 0, t.intraSent, t.intraRecv, 0}});
    m_rows.push_back({r.rank, {"inter-node", "", 0, t.interSent, t.interRecv, 0}});
    maxBytes = std::max({maxBytes, double(r.bytesSent), double(r.bytesRecv)});
  }
  const ByteUnit unit = byteUnitFor(maxBytes);
  m_unit = unit.bytes;
  setAxisLabel(yAxis, tr("bytes per step (%1)").arg(unit.name), tr("%1/step").arg(unit.name));
  const QString names[2] = {tr("inside a node (%1 ranks)").arg(*step.gpusPerNode),
                            tr("between nodes")};
  // Between nodes is the scarce link: the darker colour, on top.
  const QColor colors[2] = {chartcolors::kCyan, chartcolors::kRed};
  for (int k = 0; k < 2; ++k) {
    auto* bars = new QCPBars(xAxis, yAxis);
    bars->setName(names[k]);
    bars->setBrush(colors[k]);
    bars->setPen(QPen(colors[k].darker(130), 1));
    bars->setWidth(kBarWidth);
    if (k == 1) bars->moveAbove(m_layers.front());
    m_layers.push_back(bars);
  }
  fitLegend();
  for (const Row& row : m_rows) {
    QCPBars* bars = m_layers[row.op.op == "intra-node" ? 0 : 1];
    if (row.op.bytesSent) bars->addData(row.rank + kSentOffset, double(row.op.bytesSent) / m_unit);
    if (row.op.bytesRecv) bars->addData(row.rank + kRecvOffset, double(row.op.bytesRecv) / m_unit);
  }
  m_ranks = int(step.ranks.size());
  xAxis->setRange(-0.6, double(m_ranks) - 0.4);
  m_barLabels = -1;
  fitRankLabels();
  yAxis->setRange(0, maxBytes > 0 ? maxBytes / m_unit * 1.12 : 1);
  setPlaceholderText(tr("No communication in the last step"));
  setPlaceholderVisible(maxBytes == 0);
  replot(rpQueuedReplot);
}

// Under each pair of bars "sent" and "recv" and the rank where they fit; where the bars are
// too narrow for their words (8 ranks in a small chart), the axis label says which bar is
// which and each rank is labelled once ("rank 3", or "3" where even that is too wide).
void TrafficChart::fitRankLabels() {
  if (m_ranks == 0) return;
  const QFontMetrics fm(xAxis->tickLabelFont());
  const double rankPx = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0));
  const double barPx = rankPx * (kRecvOffset - kSentOffset);
  const int words =
      barPx >= std::max(fm.horizontalAdvance(tr("sent")), fm.horizontalAdvance(tr("recv"))) +
                   fm.horizontalAdvance(' ') * 2
          ? 2
      : rankPx >= fm.horizontalAdvance(tr("rank %1").arg(m_ranks - 1)) + 8 ? 1
                                                                           : 0;
  if (words == m_barLabels) return;
  m_barLabels = words;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int r = 0; r < m_ranks; ++r) {
    if (words == 2) {
      ticker->addTick(r + kSentOffset, tr("sent"));
      ticker->addTick(r + kRecvOffset, tr("recv"));
      ticker->addTick(r, tr("\nrank %1").arg(r));  // a line under the bars' words
    } else {
      ticker->addTick(r, words == 1 ? tr("rank %1").arg(r) : QString::number(r));
    }
  }
  xAxis->setTicker(ticker);
  setAxisLabel(xAxis, words == 2 ? tr("rank") : tr("rank (left bar sent, right bar received)"),
               tr("rank"));
  replot(rpQueuedReplot);
}

int TrafficChart::pointCount() const {
  int n = 0;
  for (QCPBars* b : m_layers) n += b->dataCount();
  return n;
}

void TrafficChart::writeCsv(QTextStream& out) const {
  if (m_byTier) {  // over several nodes: a row per rank and tier
    out << "rank,tier,bytes_sent,bytes_recv\n";
    for (const Row& r : m_rows)
      out << r.rank << ',' << r.op.op.c_str() << ',' << r.op.bytesSent << ',' << r.op.bytesRecv
          << '\n';
    return;
  }
  out << "rank,op,group,calls,bytes_sent,bytes_recv,ms\n";
  for (const Row& r : m_rows)
    out << r.rank << ',' << r.op.op.c_str() << ',' << r.op.group.c_str() << ',' << r.op.calls << ','
        << r.op.bytesSent << ',' << r.op.bytesRecv << ',' << QString::number(r.op.ms, 'g', 10)
        << '\n';
}

}  // namespace paralab
