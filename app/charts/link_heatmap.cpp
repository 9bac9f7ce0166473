// LinkHeatmap: the N x N bytes of the last step (see link_heatmap.h); cells are sentTo as
// the communicator counted it, divided into the colour scale's unit, each node's block framed.
// See tests/app/tst_charts_ranks.cpp (heatmapCellsAreSentTo) and tst_charts_tiers.cpp.
#include "charts/link_heatmap.h"

#include <cmath>
#include <limits>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/metric_history.h"

namespace paralab {

namespace {

constexpr int kMaxLabelledRanks = 8;  // more cells than that: the colour alone

// Light for little, dark for much (ColorBrewer YlOrRd), communication's orange in the middle.
QCPColorGradient bytesGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(255, 237, 160));
  g.setColorStopAt(0.5, QColor(253, 141, 60));
  g.setColorStopAt(1.0, QColor(165, 0, 38));
  g.setNanHandling(QCPColorGradient::nhTransparent);  // no traffic: no colour
  return g;
}

}  // namespace

LinkHeatmap::LinkHeatmap(QWidget* parent)
    : Chart("links", tr("Bytes per link, last step"), parent) {
  setTabTitle(tr("Links"));
  setKeyColumn("from_rank");
  setAxisLabel(xAxis, tr("to rank"));
  setAxisLabel(yAxis, tr("from rank"));
  yAxis->setRangeReversed(true);  // rank 0 on top, as a matrix is read
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->grid()->setVisible(false);
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    a->setTicker(ticker);
    a->setSubTicks(false);
    a->setTickLength(0, 4);  // outside only: a tick inside would cross the first cell's label
  }
  m_map = new QCPColorMap(xAxis, yAxis);
  m_map->setInterpolate(false);
  m_map->removeFromLegend();
  legend->setVisible(false);
  // The plot and its colour scale share one cell of the chart's column: a second column of the
  // whole layout would leave the title and the subtitle only the plot's width (the subtitle
  // was cut at both ends).
  m_scale = new QCPColorScale(this);
  auto* plotRow = new QCPLayoutGrid;
  const int row = plotLayout()->rowCount() - 1;
  QCPAxisRect* plot = axisRect();
  plotLayout()->take(plot);
  plotLayout()->addElement(row, 0, plotRow);
  plotRow->addElement(0, 0, plot);
  plotRow->addElement(0, 1, m_scale);
  plotRow->setColumnStretchFactor(1, 0.01);
  m_scale->setType(QCPAxis::atRight);
  m_scale->setBarWidth(14);
  // Beside a short plot (a 720 px screen) the scale says it in brief.
  setAxisLabel(m_scale->axis(), tr("bytes sent per step (B)"), tr("bytes/step (B)"));
  axisRect()->setMinimumMargins(QMargins(84, 8, 16, 8));  // the scale sits beside it
  m_map->setColorScale(m_scale);  // the map takes the scale's gradient: set it there
  m_scale->setGradient(bytesGradient());
  connect(this, &QCustomPlot::afterLayout, this, &LinkHeatmap::fitCellLabels);
  // The scale's bar spans the plot's height exactly.
  auto* group = new QCPMarginGroup(this);
  axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  setToolTip(
      tr("<p>Row: the rank that sent; column: the rank that received; colour and label: "
         "bytes in the last step, as the communicator counted them. A ring all-reduce "
         "lights the cells beside the diagonal, a parameter server its columns and rows, "
         "a pipeline the next stage.</p><p>With nodes (--gpus-per-node G) each node's G x G "
         "block is framed: cells inside a frame crossed the link inside the node (--link), "
         "cells outside it the link between nodes (--node-link).</p>"));
  applyLook(palette());
  clear();
}

void LinkHeatmap::applyLook(const QPalette& pal) {
  Chart::applyLook(pal);
  if (!m_scale) return;  // Chart's constructor: the scale comes later
  for (QCPItemStraightLine* l : m_lines) l->setPen(QPen(pal.color(QPalette::Base), 2));
  for (QCPItemRect* f : m_frames) f->setPen(QPen(pal.color(QPalette::Text), 2.5));
  QCPAxis* a = m_scale->axis();
  {
    const QCPAxis* from = yAxis;
    a->setBasePen(from->basePen());
    a->setTickPen(from->tickPen());
    a->setSubTickPen(from->subTickPen());
    a->setTickLabelColor(from->tickLabelColor());
    a->setLabelColor(from->labelColor());
    a->setTickLabelFont(from->tickLabelFont());
    a->setLabelFont(from->labelFont());
  }
}

void LinkHeatmap::clear() {
  for (QCPItemText* t : m_labels) removeItem(t);
  m_labels.clear();
  for (QCPItemStraightLine* l : m_lines) removeItem(l);
  m_lines.clear();
  for (QCPItemRect* f : m_frames) removeItem(f);
  m_frames.clear();
  m_gpusPerNode = 0;
  setAxisLabel(xAxis, tr("to rank"));
  m_bytes.clear();
  m_unit = 1;
  m_map->data()->clear();
  m_map->data()->setSize(1, 1);
  m_map->data()->fill(std::numeric_limits<double>::quiet_NaN());
  m_map->data()->setRange(QCPRange(0, 0), QCPRange(0, 0));
  m_map->setDataRange(QCPRange(0, 1));
  showEmpty({-0.5, 0.5}, {-0.5, 0.5});
}

void LinkHeatmap::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void LinkHeatmap::showSnapshot(const Snapshot& s) {
  if (s.steps.empty()) return;
  const StepMetrics& step = s.steps.back();
  clear();
  const int n = int(step.ranks.size());
  if (n == 0) return;
  m_bytes.assign(size_t(n), std::vector<int64_t>(size_t(n), 0));
  double maxBytes = 0;
  for (const RankMetrics& r : step.ranks)
    for (size_t to = 0; to < r.sentTo.size() && to < size_t(n) && r.rank < n; ++to) {
      m_bytes[size_t(r.rank)][to] = r.sentTo[to];
      maxBytes = std::max(maxBytes, double(r.sentTo[to]));
    }
  const ByteUnit unit = byteUnitFor(maxBytes);
  m_unit = unit.bytes;
  setAxisLabel(m_scale->axis(), tr("bytes sent per step (%1)").arg(unit.name),
               tr("bytes/step (%1)").arg(unit.name));

  QCPColorMapData* data = m_map->data();
  data->setSize(n, n);
  data->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
  QFont labelFont = legend->font();
  if (n > 4) labelFont.setPointSizeF(labelFont.pointSizeF() - 1);
  for (int from = 0; from < n; ++from)
    for (int to = 0; to < n; ++to) {
      const int64_t b = m_bytes[size_t(from)][size_t(to)];
      data->setCell(to, from,
                    b > 0 ? double(b) / m_unit : std::numeric_limits<double>::quiet_NaN());
      if (b <= 0 || n > kMaxLabelledRanks) continue;
      auto* label = new QCPItemText(this);
      label->position->setCoords(to, from);
      label->setText(formatBytes(double(b)));
      label->setProperty("bytes", double(b));  // fitCellLabels() words it for the cell's width
      label->setFont(labelFont);
      // Dark text on the light end of the scale, white on the dark end.
      label->setColor(double(b) / maxBytes > 0.55 ? Qt::white : Qt::black);
      label->setClipToAxisRect(true);
      m_labels.push_back(label);
    }
  // Lines between the cells, in the background's colour (applyLook), so equal neighbours
  // still read as separate links.
  for (int i = 1; i < n; ++i)
    for (bool vertical : {true, false}) {
      auto* line = new QCPItemStraightLine(this);
      line->point1->setCoords(vertical ? i - 0.5 : 0, vertical ? 0 : i - 0.5);
      line->point2->setCoords(vertical ? i - 0.5 : 1, vertical ? 1 : i - 0.5);
      line->setPen(QPen(palette().color(QPalette::Base), 2));
      m_lines.push_back(line);
    }
  // Nodes: a frame around each node's block, in the text's colour (applyLook). Inside a frame
  // the bytes crossed the intra-node link, outside it the link between nodes.
  const int g = step.gpusPerNode.value_or(0);
  if (g > 0 && g < n) {
    m_gpusPerNode = g;
    for (int first = 0; first < n; first += g) {
      auto* frame = new QCPItemRect(this);
      const double last = std::min(first + g, n) - 0.5;
      frame->topLeft->setCoords(first - 0.5, first - 0.5);
      frame->bottomRight->setCoords(last, last);
      frame->setPen(QPen(palette().color(QPalette::Text), 2.5));
      frame->setBrush(Qt::NoBrush);
      frame->setClipToAxisRect(true);
      m_frames.push_back(frame);
    }
    setAxisLabel(xAxis, tr("to rank (framed: inside a node of %1; outside: between nodes)").arg(g),
                 tr("to rank (framed: same node)"));
  }
  m_map->setDataRange(QCPRange(0, maxBytes > 0 ? maxBytes / m_unit : 1));
  xAxis->setRange(-0.5, n - 0.5);
  yAxis->setRange(-0.5, n - 0.5);
  setPlaceholderText(tr("No communication in the last step"));
  setPlaceholderVisible(maxBytes == 0);
  replot(rpQueuedReplot);
}

// A cell's label with its unit where the cell is wide enough ("25.3 KiB"), the number alone
// where only that fits (the scale's label gives the unit), none where not even that does.
void LinkHeatmap::fitCellLabels() {
  const double cellPx = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0)) - 4;
  for (QCPItemText* label : m_labels) {  // items are drawn after this: no second replot
    const double b = label->property("bytes").toDouble();
    const QFontMetrics fm(label->font());
    QString text = formatBytes(b);
    if (fm.horizontalAdvance(text) > cellPx) text = QString::number(b / m_unit, 'g', 3);
    label->setText(text);
    label->setVisible(fm.horizontalAdvance(text) <= cellPx);
  }
}

double LinkHeatmap::cell(int from, int to) const { return m_map->data()->cell(to, from); }

int LinkHeatmap::pointCount() const { return int(m_bytes.size() * m_bytes.size()); }

void LinkHeatmap::writeCsv(QTextStream& out) const {
  // With nodes, the sending rank's node first: a cell is intra-node where the columns' node
  // (to / gpus per node) is the row's.
  const bool nodes = m_gpusPerNode > 0;
  out << "from_rank" << (nodes ? ",node" : "");
  for (size_t to = 0; to < m_bytes.size(); ++to) out << ",to_rank_" << to << "_bytes";
  out << '\n';
  for (size_t from = 0; from < m_bytes.size(); ++from) {
    out << from;
    if (nodes) out << ',' << int(from) / m_gpusPerNode;
    for (int64_t b : m_bytes[from]) out << ',' << b;
    out << '\n';
  }
}

}  // namespace paralab
