// ChartHub: chart docks and who gets redrawn when (see chart_hub.h).
// See tests/app/tst_window.cpp (startDrawsEveryChart).
#include "charts/chart_hub.h"

#include <QDockWidget>
#include <QMainWindow>
#include <QMenu>
#include <QTabBar>
#include <limits>

namespace paralab {

ChartHub::ChartHub(QMainWindow* window, QMenu* viewMenu)
    : QObject(window), m_window(window), m_viewMenu(viewMenu) {
  m_catchUp.setObjectName("chartCatchUpTimer");
  m_catchUp.setSingleShot(true);
  m_catchUp.setInterval(kStepChartMs / 2);
  connect(&m_catchUp, &QTimer::timeout, this, &ChartHub::feedOneDue);
}

void ChartHub::addEntry(Entry e, int cell) {
  // The tab says the chart's short name (View lists it by its full title).
  auto* dock = new QDockWidget(e.chart->tabTitle(), m_window);
  dock->setObjectName(e.chart->stem() + "Dock");  // saveState() keys the layout on it
  dock->setWidget(e.chart);
  dock->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                    QDockWidget::DockWidgetFloatable);
  m_window->addDockWidget(Qt::RightDockWidgetArea, dock);
  // Lines drawn as one polyline rather than segment by segment: with antialiasing, a replot
  // of 2000 steps takes a few ms instead of tens (measured with --bench-frames). Vector
  // exports are drawn segment by segment whatever this says.
  e.chart->setPlottingHint(QCP::phFastPolylines, true);
  QAction* toggle = dock->toggleViewAction();
  toggle->setStatusTip(tr("Show or hide the “%1” chart").arg(e.chart->title()));
  m_viewMenu->addAction(toggle);
  e.dock = dock;
  e.cell = std::clamp(cell, 0, 3);
  Chart* chart = e.chart;
  // A chart whose text changed is redrawn in its turn, one chart a poll, like new data; a window
  // not shown has no frames to spare and redraws at once.
  chart->setRedrawRequest([this, chart] {
    if (!m_window->isVisible()) return chart->replot(QCustomPlot::rpQueuedReplot);
    for (Entry& x : m_entries)
      if (x.chart == chart) x.stale = true;
    m_catchUp.start();
  });
  // A chart in a background tab or a closed dock is not redrawn on every poll: it catches up
  // when it comes into view.
  connect(dock, &QDockWidget::visibilityChanged, this, [this, chart](bool visible) {
    if (!visible) return;
    for (Entry& x : m_entries)
      if (x.chart == chart && x.stale) feed(x);
  });
  m_entries.push_back(std::move(e));
}

void ChartHub::arrange() {
  QDockWidget* anchor[4] = {};
  for (const Entry& e : m_entries)
    if (!anchor[e.cell]) anchor[e.cell] = e.dock;
  // Missing cells borrow a neighbour, so a partial set still fills the area.
  for (int c = 0; c < 4; ++c)
    if (!anchor[c]) anchor[c] = anchor[c ^ 1] ? anchor[c ^ 1] : anchor[c ^ 2];
  if (!anchor[0]) return;
  if (anchor[1] != anchor[0]) m_window->splitDockWidget(anchor[0], anchor[1], Qt::Horizontal);
  if (anchor[2] != anchor[0]) m_window->splitDockWidget(anchor[0], anchor[2], Qt::Vertical);
  if (anchor[3] != anchor[1] && anchor[3] != anchor[2])
    m_window->splitDockWidget(anchor[1], anchor[3], Qt::Vertical);
  for (const Entry& e : m_entries)
    if (e.dock != anchor[e.cell]) m_window->tabifyDockWidget(anchor[e.cell], e.dock);
  for (QDockWidget* a : anchor) a->raise();  // the first chart of each cell in front
  keepTabRowsWhole();
}

// A cell is never narrower than its row of tabs, each title whole: on a 1280×720 screen, or
// with the left column dragged wide, Qt would otherwise elide them ("Spee…", "Loss sc…"). The
// row is measured by a tab bar of the window's own style and font, as the dock area's are.
void ChartHub::keepTabRowsWhole() {
  QTabBar row(m_window);
  row.hide();
  for (int cell = 0; cell < 4; ++cell) {
    while (row.count() > 0) row.removeTab(0);
    for (const Entry& e : m_entries)
      if (e.cell == cell) row.addTab(e.dock->windowTitle());
    const int width = row.count() > 1 ? row.sizeHint().width() : 0;
    for (const Entry& e : m_entries)
      if (e.cell == cell) e.dock->setMinimumWidth(width);
  }
}

void ChartHub::showEveryChart(int columns) {
  QList<QDockWidget*> docks;
  for (const Entry& e : m_entries) {
    e.dock->setFloating(false);
    e.dock->show();
    docks << e.dock;
  }
  if (docks.isEmpty()) return;
  for (QDockWidget* d : docks) d->setMinimumWidth(0);  // no tabs: each chart its own width
  columns = std::clamp(columns, 1, int(docks.size()));
  // The first row side by side, then each column's charts under its first one.
  for (int c = 1; c < columns; ++c)
    m_window->splitDockWidget(docks[c - 1], docks[c], Qt::Horizontal);
  for (int i = columns; i < docks.size(); ++i)
    m_window->splitDockWidget(docks[i - columns], docks[i], Qt::Vertical);
}

QList<Chart*> ChartHub::charts() const {
  QList<Chart*> out;
  for (const Entry& e : m_entries) out.push_back(e.chart);
  return out;
}

QDockWidget* ChartHub::dockOf(const Chart* chart) const {
  for (const Entry& e : m_entries)
    if (e.chart == chart) return e.dock;
  return nullptr;
}

// A dock in a background tab is not hidden, only covered: what counts is whether any of the
// chart can be seen.
bool ChartHub::isInView(const Chart* chart) {
  return chart->isVisible() && !chart->visibleRegion().isEmpty();
}

void ChartHub::syncPixelRatio() {
  for (const Entry& e : m_entries) {
    const double ratio = e.chart->devicePixelRatioF();
    if (e.chart->bufferDevicePixelRatio() != ratio) {
      e.chart->setBufferDevicePixelRatio(ratio);
      e.chart->replot(QCustomPlot::rpQueuedReplot);
    }
  }
}

void ChartHub::feed(Entry& e) {
  static const MetricHistory empty;
  e.fed.start();
  e.chart->showHistory(m_history ? *m_history : empty);
  if (m_hasSnapshot && e.showSnapshot) e.showSnapshot(m_snapshot);
  e.stale = false;
}

void ChartHub::show(const MetricHistory& history, const Snapshot& snapshot) {
  m_history = &history;
  if (!snapshot.steps.empty()) {
    // Everything the snapshot carries, but of its steps only the newest (what the per-rank
    // charts draw); spans come with the snapshots that asked for them.
    const bool keepSpans = snapshot.spans.empty();
    auto spans = keepSpans ? std::move(m_snapshot.spans) : snapshot.spans;
    auto leftOut = keepSpans ? std::move(m_snapshot.spansLeftOut) : snapshot.spansLeftOut;
    m_snapshot = snapshot;
    m_snapshot.steps.erase(m_snapshot.steps.begin(), m_snapshot.steps.end() - 1);
    m_snapshot.spans = std::move(spans);
    m_snapshot.spansLeftOut = std::move(leftOut);
    m_hasSnapshot = true;
  }
  for (Entry& e : m_entries) e.stale |= e.chart->followsRun();  // a new step to draw
  // A window not shown (scripted runs, tests) keeps every chart current: nothing is painted,
  // and what is exported is what was fed.
  if (!m_window->isVisible()) {
    for (Entry& e : m_entries) feed(e);
    return;
  }
  feedOneDue();
}

void ChartHub::feedOneDue() {
  Entry* next = nullptr;
  qint64 longest = -1;
  bool more = false;
  for (Entry& e : m_entries) {
    if (!e.stale || !isInView(e.chart)) continue;
    const qint64 waited = e.fed.isValid() ? e.fed.elapsed() : std::numeric_limits<qint64>::max();
    more = true;
    if (waited >= (e.showSnapshot ? kSnapshotChartMs : kStepChartMs) && waited > longest)
      next = &e, longest = waited;
  }
  if (next) feed(*next);
  // Drawn a moment later if no poll comes to do it (paused, finished).
  if (more) m_catchUp.start();
}

void ChartHub::refreshAll() {
  for (Entry& e : m_entries) feed(e);
}

void ChartHub::clear() {
  m_history = nullptr;
  m_snapshot = Snapshot();
  m_hasSnapshot = false;
  for (Entry& e : m_entries) {
    if (!e.chart->followsRun()) continue;  // a sweep is not the run: it stays as it is
    if (e.clear) e.clear();
    feed(e);  // an empty history: every chart shows its placeholder
  }
}

void ChartHub::raiseRunCharts() {
  for (const Entry& covering : m_entries) {
    if (covering.chart->followsRun() || !isInView(covering.chart)) continue;
    for (const Entry& e : m_entries)
      if (e.cell == covering.cell && e.chart->followsRun()) {
        e.dock->raise();
        break;
      }
  }
}

void ChartHub::setSubtitle(const QString& text, const QStringList& labels) {
  for (const Entry& e : m_entries)
    if (e.chart->followsRun()) e.chart->setSubtitle(text), e.chart->setLabels(labels);
}

}  // namespace paralab
