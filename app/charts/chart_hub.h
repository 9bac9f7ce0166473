// ChartHub: the window's charts, each in a dock (tabbed in a 2 × 2 grid, movable, listed in
// View), fed from the run's history and snapshot. Only charts in view redraw, one per poll
// (the per-step ones at most 10 Hz, the last-step ones 5 Hz), so a frame costs one replot
// however many are in view; a hidden one catches up when it is shown, and all do before an
// export. See tests/app/tst_window.cpp (startDrawsEveryChart) and `paralab --bench-frames`.
#pragma once
#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QTimer>
#include <functional>

#include "charts/chart.h"
#include "charts/metric_history.h"
#include "session.h"

class QDockWidget;
class QMainWindow;
class QMenu;

namespace paralab {

// A chart drawing the ranks' holdings, once snapshots carry them (Snapshot::holdings): the
// check is made on substitution, so this compiles before and after the engine has the field.
template <class C, class S = Snapshot>
concept ShowsHoldings = requires(C* c, const S& s) {
  c->showHoldings(s.holdings);
};

class ChartHub : public QObject {
  Q_OBJECT
 public:
  // A chart over steps redraws at most this often (10 Hz), one of the last step 5 Hz.
  static constexpr int kStepChartMs = 100;
  static constexpr int kSnapshotChartMs = 200;

  ChartHub(QMainWindow* window, QMenu* viewMenu);

  // Adds `chart` in its own dock, tabbed into grid cell `cell` (0 top left, 1 top right,
  // 2 bottom left, 3 bottom right). Charts with showSnapshot(const Snapshot&) and clear()
  // get those calls too.
  template <class C>
  C* add(C* chart, int cell) {
    Entry e;
    e.chart = chart;
    if constexpr (requires(C * c, const Snapshot& s) { c->showSnapshot(s); })
      e.showSnapshot = [chart](const Snapshot& s) { chart->showSnapshot(s); };
    else if constexpr (ShowsHoldings<C>)
      e.showSnapshot = [chart]<class S = Snapshot>(const S& s) {
        if (!s.holdings.empty()) chart->showHoldings(s.holdings);
      };
    if constexpr (requires(C * c) { c->clear(); }) e.clear = [chart] { chart->clear(); };
    addEntry(std::move(e), cell);
    return chart;
  }
  // Lays the docks out as a 2 × 2 grid right of the dock area's other docks; call once
  // after every add().
  void arrange();
  // Every chart in view at once, none in a tab behind another: a grid `columns` wide (a big
  // screen; the frame benchmark's "every chart visible").
  void showEveryChart(int columns = 3);

  QList<Chart*> charts() const;
  QDockWidget* dockOf(const Chart* chart) const;
  template <class C>
  C* find() const {
    for (const Entry& e : m_entries)
      if (auto* c = qobject_cast<C*>(e.chart)) return c;
    return nullptr;
  }

  // New steps of the run (history) and its latest snapshot (the last step's per-rank
  // metrics, the spans of the last steps): visible charts redraw, hidden ones are marked.
  void show(const MetricHistory& history, const Snapshot& snapshot);
  // Every chart, visible or not, draws what it was last given (before an export).
  void refreshAll();
  void clear();  // no run shown (charts that do not follow the run keep what they show)
  // The run's description under every chart that follows the run (Chart::followsRun), and its
  // labels (Chart::setLabels).
  void setSubtitle(const QString& text, const QStringList& labels = {});
  // Where a chart that does not follow the run (the sweep) covers its cell, the cell's first
  // chart of the run comes to the front.
  void raiseRunCharts();
  // Charts draw into buffers of the screen's pixel ratio; after a move to a screen of another
  // ratio (a laptop and a 4K monitor) they redraw at the new one, staying crisp.
  void syncPixelRatio();
  // Whether `chart` can be seen now (not closed, not in a background tab).
  static bool isInView(const Chart* chart);
  // What the charts were last given.
  const Snapshot& lastSnapshot() const { return m_snapshot; }

 private:
  struct Entry {
    Chart* chart = nullptr;
    QDockWidget* dock = nullptr;
    int cell = 0;
    std::function<void(const Snapshot&)> showSnapshot;
    std::function<void()> clear;
    bool stale = false;
    QElapsedTimer fed;  // since it was last drawn
  };
  void addEntry(Entry e, int cell);
  void keepTabRowsWhole();  // each cell's docks at least as wide as their tabs' titles
  void feed(Entry& e);
  // Draws the chart in view that has waited longest for its new data, once its interval has
  // passed; the catch-up timer comes back for the others.
  void feedOneDue();

  QMainWindow* m_window;
  QMenu* m_viewMenu;
  QTimer m_catchUp{this};
  QList<Entry> m_entries;
  const MetricHistory* m_history = nullptr;
  Snapshot m_snapshot;  // the newest step (steps.back()) and spans seen so far
  bool m_hasSnapshot = false;
};

}  // namespace paralab
