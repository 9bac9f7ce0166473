// MainWindow: the lab's window. Run settings on the left, the charts in docks (ChartHub), a
// scaling-sweep dock; it wires four parts, each with one job: the run (RunController: Start /
// Pause / Step / Reset, the poll, live changes, one RunControl wherever the ranks train), the
// learner's way through (LessonRouter: welcome, lessons, asking before a loss), the files
// (FileActions: export, open a recorded run, settings) and the docks (DockLayout). What tests
// and the scripted forms reach is forwarded here. See tests/app/tst_app.cpp,
// tests/app/tst_window.cpp, tests/app/tst_window_trust.cpp, or run `paralab`.
#pragma once
#include <QList>
#include <QMainWindow>

#include "charts/metric_history.h"
#include "export/summary_export.h"
#include "settings.h"
#include "train/sweep.h"
#include "window/run_controller.h"

class QAction;
class QActionGroup;
class QMenu;

namespace paralab {

class Chart;
class ChartHub;
class ConfigPanel;
class DockLayout;
class FileActions;
class LessonDock;
class LessonRouter;
class SweepPanel;
class BenchRunner;
class JobRunner;
class WelcomePage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // Settings changed during a run are applied this long after the last change.
  static constexpr int kApplyDelayMs = RunController::kApplyDelayMs;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigPanel* configPanel() const { return m_configPanel; }
  SweepPanel* sweepPanel() const { return m_sweepPanel; }
  LessonDock* lessonDock() const;
  BenchRunner* benchRunner() const;
  // Runs whose ranks are processes (Execution: MPI processes or NCCL) are mpirun jobs: the run
  // shown's, if it is one (nullptr otherwise).
  JobRunner* jobRunner() const { return m_runs->jobRunner(); }
  ChartHub* chartHub() const { return m_hub; }
  QList<Chart*> charts() const;
  Chart* currentChart() const { return m_currentChart; }
  const MetricHistory& history() const { return m_runs->shown().history; }
  RunState runState() const { return m_runs->shown().state; }
  const RunConfig& runConfig() const { return m_runs->shown().config; }  // of the run shown
  QStringList liveChanges() const { return m_runs->shown().changes; }   // reconfigurations applied

  QAction* startAction() const { return m_runs->startAction(); }
  QAction* pauseAction() const { return m_runs->pauseAction(); }
  QAction* stepAction() const { return m_runs->stepAction(); }
  QAction* resetAction() const { return m_runs->resetAction(); }
  QAction* sweepAction() const { return m_sweepAction; }
  QAction* exportAllAction() const { return m_exportAll; }

  // Later panels (lessons) dock here and appear in View.
  void addPanel(QDockWidget* dock, Qt::DockWidgetArea area);
  // Window layout, theme and (unless `keepConfig`) the last run settings from the last
  // session; from then on they are saved on close. Interactive use only: tests never call it.
  void restoreSettings(bool keepConfig = false);
  void setTheme(Theme theme);
  // Title bars on the docks (to drag, float, close them) or not (the tidy default).
  void setPanelsMovable(bool movable);
  // The welcome page over the charts: restoreSettings() shows it until the learner has chosen
  // a way in (remembered), Help > Welcome brings it back. Not modal.
  void showWelcome();
  WelcomePage* welcomePage() const;

  // Everything for coursework into `dir`: every chart as PNG, PDF, SVG and CSV, the run's
  // settings (run-config.json), its every step (run.jsonl, as paralab-run --json prints them),
  // the timeline as a Chrome trace (trace.json), and the summary (summary.md, summary.html).
  // "" or the first failure; `written` receives the paths.
  QString exportAllTo(const QString& dir, QStringList* written = nullptr,
                      QSize size = QSize(1200, 750));
  RunReport report() const;  // what the summary says about the run shown
  // Shows a recorded run (the lines of paralab-run --json, or an export's run.jsonl) in the
  // charts, in place of the run shown, which is stopped. "" or one line saying what is wrong
  // with the file; a file refused leaves the run shown as it was. A file cut short (its last
  // line incomplete, or no summary line) shows the steps it has, their settings unknown, and
  // `*notice` says so in one line. The timeline and holdings map draw the spans and holdings
  // its lines carry (metrics/step_views.h); a file without them says so in those two charts.
  QString openRunFile(const QString& path, QString* notice = nullptr);
  QString recordedFrom() const { return m_runs->shown().recordedFrom; }  // its file ("" live)

 public slots:
  void start() { m_runs->start(); }  // a new run, or resume a paused one
  void pause() { m_runs->pause(); }
  void step() { m_runs->step(); }  // one step (starting a paused run when none is going)
  void reset() { m_runs->reset(); }  // stop the run and clear the charts
  void runSweep();
  void exportCurrentChart();
  void exportAllCharts();
  // Copies new steps from the run into the charts (the poll timer calls it).
  void poll() { m_runs->poll(); }
  // Applies the panel's settings to the run in flight now (the debounce timer calls it).
  void applyLiveChanges() { m_runs->applyLiveChanges(); }

 signals:
  // The run shown reached its end: finished (ok) or failed / refused to start (error set).
  void runEnded(bool ok, const QString& error);

 protected:
  void closeEvent(QCloseEvent* event) override;  // asks first while a run or sweep is open
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void createActions();
  void createMenus();
  void createCharts();
  void createDocks();
  void showSweep(const SweepResult& result);
  // A sweep or a lesson's benchmark is timing something: training beside it would share its
  // cores, so nothing starts or resumes ("" when none is).
  QString measuringNow() const;

  ChartHub* m_hub = nullptr;
  QMenu* m_viewMenu = nullptr;
  ConfigPanel* m_configPanel = nullptr;
  SweepPanel* m_sweepPanel = nullptr;
  DockLayout* m_layout = nullptr;
  RunController* m_runs = nullptr;
  FileActions* m_files = nullptr;
  LessonRouter* m_lessons = nullptr;
  QDockWidget* m_sweepDock = nullptr;
  Chart* m_currentChart = nullptr;
  QActionGroup* m_themeGroup = nullptr;
  QAction *m_sweepAction = nullptr, *m_exportChart = nullptr, *m_exportAll = nullptr;
  bool m_persist = false;  // save layout and settings on close: only after restoreSettings()
};

}  // namespace paralab
