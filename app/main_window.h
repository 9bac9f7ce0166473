// MainWindow: the lab's window. Toolbar Start / Pause / Step / Reset drive the engine's
// Session; a ≤ 30 Hz timer on the GUI thread copies new steps out of Session::snapshot() into
// the charts and the status bar, so the window never waits on training (DESIGN.md §1).
// See tests/app/tst_app.cpp, or run `paralab`.
#pragma once
#include <QList>
#include <QMainWindow>
#include <QTimer>

#include "metric_history.h"
#include "session.h"

class QAction;
class QLabel;
class QMenu;

namespace paralab {

class Chart;
class ConfigPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigPanel* configPanel() const { return m_configPanel; }
  QList<Chart*> charts() const { return m_charts; }
  Chart* currentChart() const { return m_currentChart; }
  const MetricHistory& history() const { return m_history; }
  RunState runState() const { return m_state; }

  QAction* startAction() const { return m_start; }
  QAction* pauseAction() const { return m_pause; }
  QAction* stepAction() const { return m_step; }
  QAction* resetAction() const { return m_reset; }

  // Later panels (timeline, memory, traffic, lessons) dock here and appear in View.
  void addPanel(QDockWidget* dock, Qt::DockWidgetArea area);
  // Window geometry and dock layout from the last session (interactive use only).
  void restoreSettings();

 public slots:
  void start();  // a new run, or resume a paused one
  void pause();
  void step();   // one step (starting a paused run when none is going)
  void reset();  // stop the run and clear the charts
  void exportCurrentChart();
  void exportAllCharts();

 signals:
  // The run shown reached its end: finished (ok) or failed / refused to start (error set).
  void runEnded(bool ok, const QString& error);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void createActions();
  void createMenus();
  void createDocks();
  void createStatusBar();
  bool startNewRun(bool paused);
  void poll();
  void updateActions();
  void updateStatus();
  void updateConfigNote();
  void exportChartDialog(Chart* chart);
  void openConfig();
  void saveConfig();
  void showError(const QString& message);

  Session m_session;
  QTimer m_pollTimer{this};  // a child, so tests can find it by name
  MetricHistory m_history;
  bool m_showingRun = false;  // false after Reset: the stopped run's data is not shown
  int64_t m_runId = -1;       // the run the charts show (-1: adopt the next one)
  int64_t m_seen = 0;         // steps of that run already copied
  RunState m_state = RunState::Idle;
  RunConfig m_runConfig;  // the configuration of the run shown
  QString m_runError;
  bool m_persistWindow = false;  // save geometry on close: only after restoreSettings()

  ConfigPanel* m_configPanel = nullptr;
  QList<Chart*> m_charts;
  Chart* m_currentChart = nullptr;
  QMenu* m_viewMenu = nullptr;
  QAction *m_start, *m_pause, *m_step, *m_reset;
  QAction *m_exportChart, *m_exportAll;
  QLabel *m_stateLabel, *m_stepLabel, *m_rateLabel, *m_stepTimeLabel;
};

}  // namespace paralab
