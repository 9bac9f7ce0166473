// TimelineChart: Gantt rows of the ranks' spans (see timeline_chart.h). Spans are the
// engine's (engine/metrics/span_recorder.h); idle bars are the gaps between them.
// See tests/app/tst_charts.cpp (timelineDrawsEverySpan, chromeTraceParses).
#include "charts/timeline_chart.h"

#include <QHelpEvent>
#include <QToolTip>
#include <algorithm>
#include <limits>
#include <map>
#include <string_view>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/metric_history.h"
#include "charts/rect_layer.h"
#include "export/chrome_trace.h"
#include "metrics/intervals.h"
#include "metrics/step_views.h"

namespace paralab {

// [SECTION] The chart

namespace {

constexpr SpanKind kKinds[] = {SpanKind::Data,      SpanKind::Forward, SpanKind::Backward,
                               SpanKind::Optimizer, SpanKind::Comm,    SpanKind::Idle};

QString legendName(SpanKind k) {
  switch (k) {
    case SpanKind::Comm:
      return QObject::tr("communication (thin row)");
    case SpanKind::Idle:
      return QObject::tr("idle (no span)");
    default:
      return QString::fromUtf8(spanKindName(k).data());
  }
}

using intervals::Interval;
using intervals::merged;
using intervals::minus;

}  // namespace

TimelineChart::TimelineChart(QWidget* parent)
    : Chart("timeline", tr("Timeline of the last steps"), parent) {
  setTabTitle(tr("Timeline"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, tr("time (ms)"));
  setAxisLabel(yAxis, tr("rank"));
  yAxis->setRangeReversed(true);  // rank 0 on top
  yAxis->grid()->setVisible(false);
  yAxis->setTickLength(0, 0);
  // Axis-aligned bars: crisp edges, and a 1 px span keeps its full colour.
  setNotAntialiasedElements(QCP::aePlottables);
  for (SpanKind k : kKinds) {
    auto* layer = new RectLayer(xAxis, yAxis);
    const QColor color = chartcolors::spanColor(k);
    layer->setName(legendName(k));
    if (k == SpanKind::Idle) {
      layer->setBrush(QBrush(color, Qt::BDiagPattern));  // hatched: nothing is happening
      layer->keepThin = false;  // a sliver of idle between two spans is not worth a line
      layer->setPen(QPen(chartcolors::faint(color), 1));
    } else {
      layer->setBrush(color);
      // Compute spans abut one another: no outline, or short ones would be all outline.
      // Consecutive calls in the communication row keep a thin edge so each one shows.
      layer->setPen(k == SpanKind::Comm ? QPen(color.darker(150), 0.6) : QPen(Qt::NoPen));
    }
    m_layers[size_t(k)] = layer;
  }
  // In the compute row, hatched in the communication colour: inside a transfer, nothing to
  // compute. A pipeline's bubble shows as these (a stage waiting for its neighbour).
  m_waitingLayer = new RectLayer(xAxis, yAxis);
  m_waitingLayer->setName(tr("waiting on a transfer (bubble)"));
  m_waitingLayer->setBrush(QBrush(chartcolors::spanColor(SpanKind::Comm), Qt::FDiagPattern));
  m_waitingLayer->setPen(QPen(chartcolors::faint(chartcolors::spanColor(SpanKind::Comm)), 1));
  m_waitingLayer->keepThin = false;
  // cp's ring lane: a block in flight, green under the rank's compute, red where not. Listed
  // in the legend only while a ring is drawn.
  m_ringHiddenLayer = new RectLayer(xAxis, yAxis);
  m_ringHiddenLayer->setBrush(chartcolors::kGreen);
  m_ringHiddenLayer->setPen(Qt::NoPen);
  m_ringExposedLayer = new RectLayer(xAxis, yAxis);
  m_ringExposedLayer->setName(tr("cp ring in flight, exposed (nothing computed)"));
  m_ringExposedLayer->setBrush(chartcolors::kRed);
  m_ringExposedLayer->setPen(Qt::NoPen);
  m_ringHiddenLayer->removeFromLegend();
  m_ringExposedLayer->removeFromLegend();
  // Spans the lines left out (an opened run's): listed in the legend only while there are.
  m_droppedLayer = new RectLayer(xAxis, yAxis);
  m_droppedLayer->setBrush(Qt::NoBrush);
  m_droppedLayer->setPen(QPen(chartcolors::kReference, 1, Qt::DashLine));
  m_droppedLayer->removeFromLegend();
  // The planned grid: a kind's colour, pale, outlined. One line in the legend while drawn.
  for (int k = 0; k < 3; ++k) {
    const QColor color = k == 0   ? chartcolors::spanColor(SpanKind::Forward)
                         : k == 1 ? chartcolors::spanColor(SpanKind::Backward)
                                  : chartcolors::kPurple;
    auto* layer = new RectLayer(xAxis, yAxis);
    layer->setName(tr("planned grid (pale: F, B, W)"));
    layer->setBrush(chartcolors::faint(color));
    layer->setPen(QPen(color.darker(130), 1));
    layer->removeFromLegend();
    m_planLayers[size_t(k)] = layer;
  }
  setLegendColumns(3);
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  axisRect()->setRangeDrag(Qt::Horizontal);
  axisRect()->setRangeZoom(Qt::Horizontal);
  connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
    if (!m_settingRange) m_follow = false;  // the user zoomed or panned: hold still
  });
  setPlaceholderText(tr("No spans yet: press Start (F5) to train"));
  // Room above rank 0 for the step labels: a line of text, in pixels, whatever the number of
  // ranks (a fixed share of a rank row is too little at 8 ranks: the labels sat on the bars).
  connect(this, &QCustomPlot::afterLayout, this, [this] {
    if (m_rankRows == 0) return;
    const double text = QFontMetrics(font()).height() + 2;
    const double plot = std::max(2 * text, double(axisRect()->height()));
    yAxis->setRange(-m_rankRows * text / (plot - text), m_rankRows);
    fitRowLabels();
    fitStepLabels();
  });
  clear();
}

bool TimelineChart::isRingTransfer(const Bar& b) {
  return paralab::isRingTransfer(b.kind, b.op.toStdString());
}

void TimelineChart::clear() {
  for (RectLayer* l : m_layers) l->rects.clear();
  for (RectLayer* l : {m_ringHiddenLayer, m_ringExposedLayer}) {
    l->rects.clear();
    l->removeFromLegend();
  }
  m_ringParts.clear();
  m_ringHidden = -1;
  m_dropped = 0;
  m_droppedLayer->removeFromLegend();
  m_waitingLayer->rects.clear();
  m_waiting.clear();
  for (RectLayer* l : m_planLayers) {
    l->rects.clear();
    l->removeFromLegend();
  }
  for (QCPAbstractItem* item : m_marks) removeItem(item);
  m_marks.clear();
  m_bars.clear();
  m_spans.clear();
  m_pending.clear();
  m_follow = true;
  m_settingRange = true;
  xAxis->setRange(0, 1);
  m_settingRange = false;
  m_rankRows = 0;
  yAxis->setRange(-0.1, 1);
  yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

QString TimelineChart::droppedText() const {
  if (m_dropped <= 0) return {};
  const QString cap = QString::number(qulonglong(kMaxLineSpans));
  if (m_dropped == 1) return tr("1 span not recorded (over %1 a rank a step)").arg(cap);
  return tr("%1 spans not recorded (over %2 a rank a step)").arg(m_dropped).arg(cap);
}

void TimelineChart::setSpansDropped(int64_t count) {
  m_dropped = std::max<int64_t>(0, count);
  if (m_dropped > 0) {
    m_droppedLayer->setName(droppedText());
    m_droppedLayer->addToLegend();
  } else {
    m_droppedLayer->removeFromLegend();
  }
  fitLegend();
  replot(rpQueuedReplot);
}

void TimelineChart::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void TimelineChart::showSnapshot(const Snapshot& s) {
  bool any = false;
  for (const auto& rank : s.spans) any = any || !rank.empty();
  if (!any) return;
  m_emulated = s.steps.empty() ? m_emulated : QString::fromStdString(s.steps.back().emulated);
  // The last kSteps steps any rank recorded.
  int64_t last = 0;
  for (const auto& rank : s.spans)
    for (const Span& sp : rank) last = std::max(last, sp.step);
  std::vector<std::vector<Span>> kept(s.spans.size());
  for (size_t r = 0; r < s.spans.size(); ++r)
    for (const Span& sp : s.spans[r])
      if (sp.step > last - kSteps) kept[r].push_back(sp);
  int64_t dropped = 0;  // what the lines of those steps left out (a job's, an opened run's)
  for (const SpansLeftOut& d : s.spansLeftOut)
    if (d.step > last - kSteps) dropped += d.count;
  if (!m_follow) {
    m_pending = std::move(kept);
    m_pendingDropped = dropped;
    return;
  }
  m_dropped = dropped;
  draw(kept);
}

void TimelineChart::draw(std::vector<std::vector<Span>> spans) {
  const bool follow = m_follow;
  const int64_t dropped = m_dropped;
  clear();
  m_follow = follow;
  m_dropped = dropped;
  if (m_dropped > 0) {
    m_droppedLayer->setName(droppedText());
    m_droppedLayer->addToLegend();
  }
  m_spans = spans;
  int64_t origin = std::numeric_limits<int64_t>::max();
  std::map<int64_t, std::pair<int64_t, int64_t>> steps;  // step -> [first start, last end]
  for (const auto& rank : spans)
    for (const Span& sp : rank) {
      origin = std::min(origin, sp.startNs);
      auto [it, fresh] = steps.try_emplace(sp.step, sp.startNs, sp.endNs);
      it->second.first = std::min(it->second.first, sp.startNs);
      it->second.second = std::max(it->second.second, sp.endNs);
    }
  auto ms = [origin](int64_t ns) { return double(ns - origin) * 1e-6; };
  auto length = [](const std::vector<Interval>& v) {
    int64_t ns = 0;
    for (const auto& [a, b] : v) ns += b - a;
    return ns;
  };
  int64_t ringNs = 0, ringHiddenNs = 0;

  for (size_t r = 0; r < spans.size(); ++r) {
    const int rank = int(r);
    for (const Span& sp : spans[r])
      m_bars.push_back({rank, sp.kind, ms(sp.startNs), ms(sp.endNs), sp.bytes,
                        QString::fromUtf8(sp.op ? sp.op : ""), sp.step});
    // Inside each step's window: idle, the time no span of this rank covers; waiting, the time
    // in a transfer (comm spans) and in no compute span. The ring's time in flight, and the
    // part of it under compute (as ringOverlap in ring_attention.h measures it).
    for (const auto& [step, window] : steps) {
      std::vector<Interval> comm, compute, ring, calls;
      for (const Span& sp : spans[r]) {
        if (sp.step != step) continue;
        (sp.kind == SpanKind::Comm ? comm : compute).push_back({sp.startNs, sp.endNs});
        if (sp.kind == SpanKind::Comm)
          (paralab::isRingTransfer(sp) ? ring : calls).push_back({sp.startNs, sp.endNs});
      }
      std::vector<Interval> any = comm;
      any.insert(any.end(), compute.begin(), compute.end());
      for (const auto& [a, b] : minus({window}, merged(any)))
        m_bars.push_back({rank, SpanKind::Idle, ms(a), ms(b), 0, {}, step});
      for (const auto& [a, b] : minus(merged(comm), merged(compute)))
        m_waiting.push_back({rank, SpanKind::Comm, ms(a), ms(b), 0, "waiting", step});
      if (ring.empty()) continue;
      // Hidden: in flight while the rank computed; exposed: while it sat in a call. (The
      // microseconds from one call to the next are neither, as in ringOverlap.)
      const std::vector<Interval> inFlight = merged(ring);
      const std::vector<Interval> hidden = minus(inFlight, minus(inFlight, merged(compute))),
                                  exposed = minus(inFlight, minus(inFlight, merged(calls)));
      ringNs += length(inFlight);
      ringHiddenNs += length(hidden);
      for (const auto& [a, b] : hidden)
        m_ringParts.push_back({rank, SpanKind::Comm, ms(a), ms(b), 0, "hidden", step});
      for (const auto& [a, b] : exposed)
        m_ringParts.push_back({rank, SpanKind::Comm, ms(a), ms(b), 0, "exposed", step});
    }
  }
  if (ringNs > 0) m_ringHidden = double(ringHiddenNs) / double(ringNs);
  for (const Bar& b : m_waiting)
    m_waitingLayer->rects.push_back(
        {b.startMs, b.endMs, computeRow(b.rank).lower, computeRow(b.rank).upper});
  for (const Bar& b : m_bars)
    if (!isRingTransfer(b)) {
      const QCPRange row = b.kind == SpanKind::Comm ? commRow(b.rank) : computeRow(b.rank);
      m_layers[size_t(b.kind)]->rects.push_back({b.startMs, b.endMs, row.lower, row.upper});
    }
  for (const Bar& b : m_ringParts)
    (b.op == "hidden" ? m_ringHiddenLayer : m_ringExposedLayer)
        ->rects.push_back({b.startMs, b.endMs, ringRow(b.rank).lower, ringRow(b.rank).upper});
  // The ring's legend entries, the hidden one with its share of the time in flight.
  if (m_ringHidden >= 0) {
    m_ringHiddenLayer->setName(tr("cp ring in flight, hidden behind compute: %1% of it")
                                   .arg(qRound(100 * m_ringHidden)));
    m_ringHiddenLayer->addToLegend();
    m_ringExposedLayer->addToLegend();
  }
  fitLegend();

  // Step boundaries: where the first rank began the step.
  for (const auto& [step, window] : steps) {
    auto* line = new QCPItemStraightLine(this);
    line->point1->setCoords(ms(window.first), 0);
    line->point2->setCoords(ms(window.first), 1);
    line->setPen(QPen(chartcolors::kReference, 1, Qt::DashLine));
    auto* label = new QCPItemText(this);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(ms(window.first), 0);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setText(tr("step %1").arg(step));
    label->setColor(chartcolors::kReference);
    label->setClipToAxisRect(true);
    m_marks << line << label;
  }
  double end = 0;
  for (const Bar& b : m_bars) end = std::max(end, b.endMs);
  if (!m_plan.empty() && !steps.empty()) {
    const auto& [a, b] = steps.rbegin()->second;
    const double from = end * 1.04;
    drawPlan(from, ms(b) - ms(a));
    end = from + (ms(b) - ms(a));
  }
  m_settingRange = true;
  xAxis->setRange(0, end > 0 ? end * 1.02 : 1);
  m_settingRange = false;
  m_rankRows = int(std::max<size_t>(spans.size(), 1));  // the range follows at the next layout
  yAxis->setRange(-0.22, m_rankRows);
  m_rowLabels = {};
  fitRowLabels();  // for the plot as it is now; the next layout fits them to its height
  setPlaceholderVisible(m_bars.empty());
  replot(rpQueuedReplot);
}

void TimelineChart::setPlan(const ScheduleGrid& plan) {
  m_plan = plan;
  if (!m_spans.empty() && m_follow) draw(m_spans);  // a copy: draw() starts by clearing
}

void TimelineChart::drawPlan(double fromMs, double stepMs) {
  size_t columns = 1;
  for (const auto& row : m_plan) columns = std::max(columns, row.size());
  const double w = stepMs / double(columns);
  for (size_t r = 0; r < m_plan.size() && r < m_spans.size(); ++r)
    for (size_t j = 0; j < m_plan[r].size(); ++j) {
      const char kind = m_plan[r][j].kind;
      if (!kind) continue;
      const QCPRange row = computeRow(int(r));
      m_planLayers[kind == 'F' ? 0 : kind == 'W' ? 2 : 1]->rects.push_back(
          {fromMs + double(j) * w, fromMs + double(j + 1) * w, row.lower, row.upper});
    }
  m_planLayers[0]->addToLegend();  // one line for the grid: its colours are the spans'
  auto* label = new QCPItemText(this);
  label->position->setTypeX(QCPItemPosition::ptPlotCoords);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  label->position->setCoords(fromMs, 0);
  label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  label->setPadding(QMargins(4, 0, 0, 0));
  label->setText(tr("planned"));
  label->setColor(chartcolors::kReference);
  label->setClipToAxisRect(true);
  m_marks << label;
  fitLegend();
}

// The rows' labels as their height allows: "rank N" and "comm" on each row where a line of
// text fits each, "rank N" alone where one fits a rank, every k-th rank where not even that.
// A new labelling needs the next layout's ticks: one more replot, only when it changes.
void TimelineChart::fitRowLabels() {
  const double rankPx = std::abs(yAxis->coordToPixel(1) - yAxis->coordToPixel(0));
  const double line = QFontMetrics(yAxis->tickLabelFont()).height() + 1;
  const bool comm = rankPx * (commRow(0).center() - computeRow(0).center()) >= line;
  const RowLabels want{comm,
                       comm && m_ringHidden >= 0 &&
                           rankPx * (ringRow(0).center() - commRow(0).center()) >= line,
                       std::max(1, int(std::ceil(line / std::max(1.0, rankPx))))};
  if (want.comm == m_rowLabels.comm && want.ring == m_rowLabels.ring &&
      want.every == m_rowLabels.every)
    return;
  m_rowLabels = want;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int r = 0; r < m_rankRows; r += want.every) {
    ticker->addTick(computeRow(r).center(), tr("rank %1").arg(r));
    if (want.comm) ticker->addTick(commRow(r).center(), tr("comm"));
    if (want.ring) ticker->addTick(ringRow(r).center(), tr("ring"));
  }
  yAxis->setTicker(ticker);
  replot(rpQueuedReplot);
}

// A step's label only where it clears the one before it and the plot's right edge (steps a
// few pixels apart would print over one another).
void TimelineChart::fitStepLabels() {
  const QFontMetrics fm(font());
  double free = -1e9;
  for (QCPAbstractItem* item : m_marks)
    if (auto* label = qobject_cast<QCPItemText*>(item)) {
      const double x = label->position->pixelPosition().x();
      const double right = x + label->padding().left() + fm.horizontalAdvance(label->text());
      const bool fits = x >= free && right <= axisRect()->right();
      label->setVisible(fits);
      if (fits) free = right + fm.horizontalAdvance(' ');
    }
}

QString TimelineChart::describeAt(double t, double row) const {
  // The bar under the pointer, or the nearest within 3 px: a bar too short to hit still shows.
  const double slack = 3 * (xAxis->range().size() / std::max(1, axisRect()->width()));
  const Bar* best = nullptr;
  double bestDistance = slack;
  for (const Bar& b : m_bars) {
    const QCPRange rows = isRingTransfer(b)            ? ringRow(b.rank)
                          : b.kind == SpanKind::Comm ? commRow(b.rank)
                                                     : computeRow(b.rank);
    if (!rows.contains(row)) continue;
    const double distance = t < b.startMs ? b.startMs - t : t > b.endMs ? t - b.endMs : 0;
    if (distance <= bestDistance) best = &b, bestDistance = distance;
    if (distance == 0) break;
  }
  // In the compute row with no span right there: inside a transfer, perhaps (before any
  // nearby bar).
  if (!best || bestDistance > 0)
    for (const Bar& w : m_waiting)
      if (computeRow(w.rank).contains(row) && t >= w.startMs && t <= w.endMs)
        return tr("rank %1 · step %2\nwaiting on a transfer, nothing to compute (in a pipeline: "
                  "the bubble)\n%3 ms (%4 → %5 ms)")
            .arg(w.rank)
            .arg(w.step)
            .arg(w.endMs - w.startMs, 0, 'f', 3)
            .arg(w.startMs, 0, 'f', 3)
            .arg(w.endMs, 0, 'f', 3);
  if (!best) return {};
  const Bar& b = *best;
  QString what = QString::fromUtf8(spanKindName(b.kind).data());
  if (!b.op.isEmpty()) what += " · " + b.op;
  if (b.bytes > 0) what += " · " + formatBytes(double(b.bytes));
  return tr("rank %1 · step %2\n%3\n%4 ms (%5 → %6 ms)")
      .arg(b.rank)
      .arg(b.step)
      .arg(what)
      .arg(b.endMs - b.startMs, 0, 'f', 3)
      .arg(b.startMs, 0, 'f', 3)
      .arg(b.endMs, 0, 'f', 3);
}

bool TimelineChart::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    QString text =
        describeAt(xAxis->pixelToCoord(help->pos().x()), yAxis->pixelToCoord(help->pos().y()));
    if (text.isEmpty())
      text = tr("Measured spans of the last %1 steps. Communication runs in the thin row under "
                "each rank, so where it sits under backward it overlapped. Hatched orange: waiting "
                "in a transfer with nothing to compute, as in a pipeline bubble; hatched grey: "
                "idle, no span at all. Context parallelism: the ring lane under the comm row is "
                "the time a K/V block the rank sent was in flight, from its send until the next "
                "rank has it: green where the rank computed meanwhile (hidden), red where not "
                "(exposed).\nDrag or wheel: pan and zoom time · double-click: follow "
                "the run again")
                 .arg(kSteps);
    QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return Chart::event(e);
}

void TimelineChart::mouseDoubleClickEvent(QMouseEvent* event) {
  m_follow = true;
  if (!m_pending.empty()) m_dropped = m_pendingDropped;
  draw(m_pending.empty() ? m_spans : m_pending);  // a copy: draw() starts by clearing both
  Chart::mouseDoubleClickEvent(event);
}

int TimelineChart::pointCount() const { return int(m_bars.size()); }

void TimelineChart::writeCsv(QTextStream& out) const {
  out << "rank,row,kind,op,step,start_ms,end_ms,duration_ms,bytes\n";
  for (const Bar& b : m_bars)
    out << b.rank << ',' << (b.kind == SpanKind::Comm ? "comm" : "compute") << ','
        << spanKindName(b.kind).data() << ',' << QString(b.op).replace(',', ';') << ',' << b.step
        << ',' << QString::number(b.startMs, 'f', 6) << ',' << QString::number(b.endMs, 'f', 6)
        << ',' << QString::number(b.endMs - b.startMs, 'f', 6) << ',' << b.bytes << '\n';
}

QString TimelineChart::writeChromeTrace(const QString& path) const {
  return paralab::writeChromeTrace(path, m_spans, m_emulated);
}

}  // namespace paralab
