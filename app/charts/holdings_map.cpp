// HoldingsMap: the ranks' holdings as slices of each layer (see holdings_map.h). The slices
// are the strategies' own sharding metadata (engine/parallel/holdings.h), only laid end to end.
// Its drawing; the layout is holdings_cells.cpp. See tests/app/tst_charts_ranks.cpp
// (holdingsMapDrawsTheSlices), tst_holdings_layouts.cpp and tst_holdings_precision.cpp.
#include "charts/holdings_map.h"

#include <QHelpEvent>
#include <QRegularExpression>
#include <QToolTip>
#include <algorithm>
#include <map>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/holdings_rows.h"
#include "charts/metric_history.h"
#include "charts/rect_layer.h"

namespace paralab {

using namespace holdings_rows;

namespace {

// A row of the batch's rows (batch, activations, recomputed) rather than a layer's weights.
bool isDataRow(const QString& row) {
  return row == kBatch || row == kActivations || row == kRecomputed || row == kInFlight;
}

QColor kindColor(HoldingKind k) {
  switch (k) {
    case HoldingKind::Params:
      return chartcolors::memoryColor(MemCategory::Params);
    case HoldingKind::Grads:
      return chartcolors::memoryColor(MemCategory::Grads);
    case HoldingKind::Optimizer:
      return chartcolors::memoryColor(MemCategory::Optimizer);
    case HoldingKind::Activations:
      return chartcolors::memoryColor(MemCategory::Activations);
    case HoldingKind::Batch:
      return chartcolors::spanColor(SpanKind::Data);
    case HoldingKind::Master:
      return chartcolors::memoryColor(MemCategory::Master);
  }
  return chartcolors::kGrey;
}

// Model order: the input projection, each block followed by its experts, the classifier.
double rowOrder(const QString& row) {
  if (row == kBatch) return -2;
  if (row == kActivations) return -1;
  if (row == kRecomputed) return -0.5;
  if (row == kInFlight) return -0.25;
  if (row == "in_proj" || row == "embed") return 0;  // the input layer: the MLP's, the GPT's
  if (row == "classifier" || row == "head") return 1e9;
  // "block3", "block3.expert2", and "block3.experts" (ZeRO's flat chunks of all of them).
  static const QRegularExpression block("^block(\\d+)(?:\\.expert(s|\\d+))?(?: \\(flat\\))?$");
  if (const auto m = block.match(row); m.hasMatch())
    return 1 + m.captured(1).toDouble() * 1000 +
           (m.captured(2).isEmpty() ? 0 : m.captured(2) == "s" ? 0.5 : 1 + m.captured(2).toDouble());
  return 2e9;
}

// The kinds a layer's row has a bar for, top to bottom: mixed precision adds the fp32 master
// copy under the optimizer state it is sharded with.
std::vector<HoldingKind> layerKinds(bool master) {
  std::vector<HoldingKind> k{HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer};
  if (master) k.push_back(HoldingKind::Master);
  return k;
}

// Vertical place of a kind's bar in a row (rows grow downwards): a layer's row holds its kinds'
// bars one under another (`master`: four of them), a data row one bar.
QCPRange barRows(int row, HoldingKind k, bool layerRow, bool master) {
  if (!layerRow) return {row + 0.22, row + 0.78};
  const std::vector<HoldingKind> kinds = layerKinds(master);
  const size_t at = size_t(std::find(kinds.begin(), kinds.end(), k) - kinds.begin());
  const double top = master ? 0.06 + 0.22 * double(at) : 0.08 + 0.29 * double(at);
  return {row + top, row + top + (master ? 0.19 : 0.26)};
}

// A kind as the legend names it, with the dtype where it is not fp32's alone to say ("params
// (bf16)", "master (fp32)").
QString kindWithDtype(HoldingKind k, Dtype d) {
  const QString name = holdingKindName(k);
  if (k == HoldingKind::Master || d != Dtype::Fp32)
    return QString("%1 (%2)").arg(name, QString::fromStdString(nameOf(d)));
  return name;
}

// What a recomputed buffer is recomputed for, from the engine's name for it
// ("recomputed in backward: attention probabilities (one block's buffers)"); "" if unnamed.
QString recomputedWhat(const std::string& tensor) {
  static const QRegularExpression what("^recomputed in backward: (.+) \\(");
  return what.match(QString::fromStdString(tensor)).captured(1);
}

}  // namespace

HoldingsMap::HoldingsMap(QWidget* parent) : Chart("holdings", tr("What every rank holds"), parent) {
  setTabTitle(tr("Holdings"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, QString());
  xAxis->setVisible(true);
  connect(this, &QCustomPlot::afterLayout, this, &HoldingsMap::fitByteLabels);
  setAxisLabel(yAxis, tr("layer"));
  yAxis->setRangeReversed(true);
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->grid()->setVisible(false);
    a->setTickLength(0, 0);
    a->setSubTicks(false);
  }
  m_outlines = new RectLayer(xAxis, yAxis);
  m_outlines->setName(tr("not held (outline: the whole)"));
  m_outlines->setPen(QPen(chartcolors::kReference, 1));
  m_outlines->setBrush(Qt::NoBrush);
  for (HoldingKind k : {HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer,
                        HoldingKind::Master, HoldingKind::Activations, HoldingKind::Batch}) {
    auto* layer = new RectLayer(xAxis, yAxis);
    layer->setName(holdingKindName(k));
    layer->setBrush(kindColor(k));
    layer->setPen(Qt::NoPen);
    m_layers[size_t(k)] = layer;
  }
  // Hatched in the activations' colour, outlined in it: held only while the backward
  // recomputes into it, one block at a time.
  const QColor activations = kindColor(HoldingKind::Activations);
  m_recomputed = new RectLayer(xAxis, yAxis);
  m_recomputed->setName(tr("recomputed in backward"));
  m_recomputed->setBrush(QBrush(activations, Qt::BDiagPattern));
  m_recomputed->setPen(QPen(activations, 1));
  m_inFlight = new RectLayer(xAxis, yAxis);
  m_inFlight->setName(tr("K/V blocks of other ranks, in flight (ring)"));
  m_inFlight->setBrush(QBrush(activations, Qt::DiagCrossPattern));
  m_inFlight->setPen(QPen(activations, 1));
  setLegendColumns(3);
  setPlaceholderText(tr("No holdings yet: they come with the first step"));
  clear();
}

void HoldingsMap::clear() {
  for (RectLayer* l : m_layers) l->rects.clear();
  m_outlines->rects.clear();
  m_recomputed->rects.clear();
  m_inFlight->rects.clear();
  // Mixed precision's names and its master's entry only while a run shows them.
  m_layers[size_t(HoldingKind::Params)]->setName(holdingKindName(HoldingKind::Params));
  m_master = false;
  bool legendChanged = m_recomputed->removeFromLegend();
  legendChanged = m_layers[size_t(HoldingKind::Master)]->removeFromLegend() || legendChanged;
  if (m_inFlight->removeFromLegend() || legendChanged) fitLegend();
  for (const ByteLabel& l : m_byteLabels) removeItem(l.item);
  m_byteLabels.clear();
  m_cells.clear();
  m_rows.clear();
  m_holdings.clear();
  m_columns.clear();
  m_columnLabels.clear();
  m_rowLabels.clear();
  setAxisLabel(xAxis, QString());
  xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  xAxis->setRange(0, 1);
  yAxis->setRange(0, 1);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

void HoldingsMap::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

// [SECTION] Drawing

void HoldingsMap::showHoldings(const std::vector<RankHoldings>& holdings) {
  clear();
  if (holdings.empty()) return;
  m_holdings = holdings;
  m_cells = cellsOf(holdings);
  for (const Cell& c : m_cells) {
    if (!m_rows.contains(c.row)) m_rows.push_back(c.row);
    m_master = m_master || c.kind == HoldingKind::Master;
  }
  std::stable_sort(m_rows.begin(), m_rows.end(),
                   [](const QString& a, const QString& b) { return rowOrder(a) < rowOrder(b); });

  // Draw: the whole of every bar as an outline, the parts held filled.
  for (const Cell& c : m_cells) {
    const int row = int(m_rows.indexOf(c.row));
    const QCPRange y = barRows(row, c.kind, !isDataRow(c.row), m_master);
    const double x0 = c.rank + 0.08, w = 0.84;
    RectLayer* layer = c.row == kRecomputed ? m_recomputed
                       : c.row == kInFlight ? m_inFlight
                                            : m_layers[size_t(c.kind)];
    for (const auto& [a, b] : c.parts)
      layer->rects.push_back({x0 + a * w, x0 + b * w, y.lower, y.upper});
  }
  // On the activations and recomputed bars, the bytes they take: the bars say which rows, not
  // how much, and kept against recomputed is what --recompute trades.
  for (const Cell& c : m_cells) {
    if (!isDataRow(c.row) || c.row == kBatch || c.parts.empty()) continue;
    const QString bytes = formatBytes(double(c.bytes));
    ByteLabel l;
    l.row = int(m_rows.indexOf(c.row));
    l.x0 = c.rank + 0.08 + c.parts.front().first * 0.84;
    l.x1 = c.rank + 0.08 + c.parts.back().second * 0.84;
    l.texts = c.row == kActivations ? QStringList{tr("%1 kept for backward").arg(bytes),
                                                  tr("%1 kept").arg(bytes), bytes}
              : c.row == kInFlight  ? QStringList{tr("%1 in flight").arg(bytes), bytes}
                                    : QStringList{tr("%1 for one block").arg(bytes), bytes};
    l.item = new QCPItemText(this);
    l.item->position->setCoords((l.x0 + l.x1) / 2, l.row + 0.5);
    l.item->setPadding(QMargins(4, 1, 4, 1));
    l.item->setClipToAxisRect(true);
    m_byteLabels.push_back(l);
  }
  styleByteLabels(palette());

  // Its legend entry only where something is recomputed (an MLP's map does not need it),
  // saying what: every rank recomputes the same.
  if (!m_recomputed->rects.isEmpty()) {
    QString what;
    for (const RankHoldings& h : holdings)
      for (const HeldSlice& s : h.items)
        if (s.recomputed && what.isEmpty()) what = recomputedWhat(s.tensor);
    m_recomputed->setName(what.isEmpty() ? tr("recomputed in backward")
                                         : tr("recomputed in backward: %1").arg(what));
    m_recomputed->addToLegend();
    fitLegend();
  }
  if (!m_inFlight->rects.isEmpty()) {
    m_inFlight->addToLegend();
    fitLegend();
  }
  // Mixed precision: the parameters' dtype, and the fp32 master copy as a kind of its own.
  for (const Cell& c : m_cells)
    if (c.kind == HoldingKind::Params && c.dtype != Dtype::Fp32) {
      m_layers[size_t(HoldingKind::Params)]->setName(kindWithDtype(c.kind, c.dtype));
      break;
    }
  if (m_master) {
    RectLayer* master = m_layers[size_t(HoldingKind::Master)];
    master->setName(kindWithDtype(HoldingKind::Master, Dtype::Fp32));
    master->addToLegend();
    fitLegend();
  }
  for (const RankHoldings& h : holdings)
    for (int i = 0; i < m_rows.size(); ++i) {
      const bool layerRow = !isDataRow(m_rows[i]);
      for (HoldingKind k : layerRow ? layerKinds(m_master)
                                    : std::vector{m_rows[i] == kBatch ? HoldingKind::Batch
                                                                      : HoldingKind::Activations}) {
        const QCPRange y = barRows(i, k, layerRow, m_master);
        m_outlines->rects.push_back({h.rank + 0.08, h.rank + 0.92, y.lower, y.upper});
      }
    }

  // Under each column: its groups and their sizes ("dp 4 · tp 2"), and the bytes it sent in
  // the last step, to whom; fitLabels() keeps what the column's width allows.
  m_columns.clear();
  for (const RankHoldings& h : holdings) {
    Column c;
    c.rank = h.rank;
    QStringList place;
    for (const HeldGroup& g : h.groups)
      if (g.worldRanks.size() > 1 && g.name != "world")
        place << QString("%1 %2").arg(g.name.c_str()).arg(g.worldRanks.size());
    c.groups = place.isEmpty() ? tr("world %1").arg(holdings.size()) : place.join(" · ");
    QStringList to;
    for (size_t r = 0; r < h.lastStep.sentTo.size(); ++r)
      if (h.lastStep.sentTo[r] > 0) to << QString::number(r);
    // Bytes and destinations on lines of their own: a column is narrow at 8 ranks, and "1,2"
    // beside a byte count reads as a decimal.
    if (to.isEmpty()) {
      c.traffic << tr("sent nothing");
    } else {
      c.traffic << formatBytes(double(h.lastStep.bytesSent));
      c.traffic << tr("→ %1").arg(
          to.size() + 1 == int(holdings.size()) && to.size() > 2 ? tr("all") : to.join(", "));
    }
    m_columns.push_back(c);
  }
  const bool shared = std::all_of(m_columns.begin(), m_columns.end(), [&](const Column& c) {
    return c.groups == m_columns.front().groups;
  });
  setAxisLabel(xAxis,
               shared ? tr("rank (every rank in %1)").arg(m_columns.front().groups) : tr("rank"),
               tr("rank"));
  // The ranges first: the labels are fitted to the columns and rows as the plot shows them.
  xAxis->setRange(0, double(holdings.size()));
  yAxis->setRange(0, double(m_rows.size()));
  fitLabels();
  fitByteLabels();
  setPlaceholderVisible(false);
  replot(rpQueuedReplot);
}

void HoldingsMap::updateLayout() {
  QCustomPlot::updateLayout();
  // After a change the labels are fitted again to the plot their margins leave, never wider
  // nor denser than before in this layout: thinner labels leave a plot at least as large, so
  // this settles in a pass or two, on labels that fit the plot drawn.
  int width = std::numeric_limits<int>::max(), every = 1;
  for (int pass = 0; pass < 4 && fitLabels(width, every); ++pass) {
    width = m_columnWidth;
    every = m_rowsEvery;
    QCustomPlot::updateLayout();  // the axes' tick labels and margins from the new tickers
  }
}

// What a column's width allows under it, most needed first: "rank N" (or "N"), its groups
// one to a line, bytes sent, to whom. Groups every rank shares ("dp 8 · ep 4") are said once,
// in the axis label, not under every column.
// The rows likewise: each row's name where a line of text fits a row, else every k-th row's
// (hovering a bar names its row).
bool HoldingsMap::fitLabels(int maxWidth, int minEvery) {
  if (m_columns.empty()) return false;
  const int width = std::min(
      maxWidth, int(std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0))) - 6);
  const double rowPx = std::max(1e-3, std::abs(yAxis->coordToPixel(1) - yAxis->coordToPixel(0)));
  const int every = std::max(
      minEvery,
      std::max(1, int(std::ceil((QFontMetrics(yAxis->tickLabelFont()).height() + 1) / rowPx))));
  m_columnWidth = width;
  m_rowsEvery = every;
  QStringList rowLabels;
  for (int i = 0; i < m_rows.size(); ++i) rowLabels << (i % every == 0 ? m_rows[i] : QString());
  const QFontMetrics fm(xAxis->tickLabelFont());
  auto fits = [&](const QString& line) { return fm.horizontalAdvance(line) <= width; };
  const bool shared = std::all_of(m_columns.begin(), m_columns.end(), [&](const Column& c) {
    return c.groups == m_columns.front().groups;
  });
  QStringList columnLabels;
  for (const Column& c : m_columns) {
    const QString rank = tr("rank %1").arg(c.rank);
    QStringList lines{fits(rank) ? rank : QString::number(c.rank)};
    if (!shared)
      for (const QString& g : c.groups.split(" · "))
        if (fits(g)) lines << g;
    // The bytes and whom they went to together, or neither ("→ all" alone says too little).
    if (std::all_of(c.traffic.begin(), c.traffic.end(), fits)) lines += c.traffic;
    columnLabels << lines.join('\n');
  }
  if (rowLabels == m_rowLabels && columnLabels == m_columnLabels) return false;
  m_rowLabels = rowLabels;
  m_columnLabels = columnLabels;
  auto rows = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < m_rows.size(); ++i)
    if (!rowLabels[i].isEmpty()) rows->addTick(i + 0.5, rowLabels[i]);
  yAxis->setTicker(rows);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t i = 0; i < m_columns.size(); ++i)
    ticker->addTick(m_columns[i].rank + 0.5, columnLabels[int(i)]);
  xAxis->setTicker(ticker);
  return true;
}

// The longest wording that fits inside the bar's filled part, none where not even the bytes
// do (hovering the bar says them). Items are drawn after the layout: no second replot.
void HoldingsMap::fitByteLabels() {
  for (const ByteLabel& l : m_byteLabels) {
    const QFontMetrics fm(l.item->font());
    const double width = std::abs(xAxis->coordToPixel(l.x1) - xAxis->coordToPixel(l.x0)) - 4;
    const QCPRange bar = barRows(l.row, HoldingKind::Activations, false, m_master);
    const double height = std::abs(yAxis->coordToPixel(bar.upper) - yAxis->coordToPixel(bar.lower));
    const QMargins pad = l.item->padding();
    auto fits = [&](const QString& t) {
      return fm.horizontalAdvance(t) + pad.left() + pad.right() <= width &&
             fm.height() + pad.top() + pad.bottom() <= height;
    };
    const auto it = std::find_if(l.texts.begin(), l.texts.end(), fits);
    l.item->setVisible(it != l.texts.end());
    if (it != l.texts.end()) l.item->setText(*it);
  }
}

// A box of the background's colour behind dark text: readable on the solid bar and on the
// hatched one alike, in either theme.
void HoldingsMap::applyLook(const QPalette& pal) {
  Chart::applyLook(pal);
  styleByteLabels(pal);
}

void HoldingsMap::styleByteLabels(const QPalette& pal) {
  QFont font = yAxis->tickLabelFont();
  font.setPointSizeF(std::max(font.pointSizeF() - 1, 7.0));
  for (const ByteLabel& l : m_byteLabels) {
    l.item->setFont(font);
    l.item->setColor(pal.color(QPalette::WindowText));
    l.item->setBrush(pal.color(QPalette::Base));
    l.item->setPen(Qt::NoPen);
  }
}

bool HoldingsMap::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip) return Chart::event(e);
  const QPoint pos = static_cast<QHelpEvent*>(e)->pos();
  const double x = xAxis->pixelToCoord(pos.x()), y = yAxis->pixelToCoord(pos.y());
  QString text =
      tr("Each bar is the whole of a layer's parameters, gradients or optimizer state (under "
         "mixed precision also its fp32 master copy), or of the batch; the filled part is what "
         "this rank holds. Hatched: the buffers the backward recomputes activations into, one "
         "block at a time (--recompute).");
  for (const Cell& c : m_cells) {
    const int row = int(m_rows.indexOf(c.row));
    const QCPRange ys = barRows(row, c.kind, !isDataRow(c.row), m_master);
    if (int(std::floor(x)) == c.rank && ys.contains(y)) {
      QStringList lines = c.items.mid(0, 8);
      if (c.items.size() > 8) lines << tr("… and %1 more").arg(c.items.size() - 8);
      text = tr("rank %1 · %2 · %3 (%4)\n")
                 .arg(c.rank)
                 .arg(c.row, kindWithDtype(c.kind, c.dtype), formatBytes(double(c.bytes))) +
             lines.join('\n');
    }
  }
  QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), text, this);
  return true;
}

int HoldingsMap::pointCount() const { return int(m_cells.size()); }

void HoldingsMap::writeCsv(QTextStream& out) const {
  out << "rank,row,tensor,kind,dim,begin,end,total,rows,cols,bytes\n";
  for (const RankHoldings& h : m_holdings)
    for (const HeldSlice& s : h.items)
      out << h.rank << ',' << rowOf(s.tensor) << ','
          << QString::fromStdString(s.tensor).replace(',', ';') << ',' << holdingKindName(s.kind)
          << ',' << s.dim << ',' << s.begin << ',' << s.end << ',' << s.total << ',' << s.rows
          << ',' << s.cols << ',' << s.bytes << '\n';
}

}  // namespace paralab
