// MainWindow: the lab's window. Run settings on the left, the charts in docks (ChartHub), a
// scaling-sweep dock; toolbar Start / Pause / Step / Reset drive the engine's Session and a
// ≤ 30 Hz timer copies new steps out of Session::snapshot() into the charts, so the window
// never waits on training (DESIGN.md §1). Settings changed while training are applied to the
// run after a short pause in typing (Session::reconfigure). A first start shows a welcome page
// (main_window_lessons.cpp). See tests/app/tst_app.cpp, tests/app/tst_window.cpp,
// tests/app/tst_window_trust.cpp, or run `paralab`.
#pragma once
#include <QList>
#include <QMainWindow>
#include <QTimer>
#include <optional>

#include "charts/metric_history.h"
#include "export/summary_export.h"
#include "metrics/step_views.h"
#include "session.h"
#include "settings.h"
#include "train/sweep.h"

class QAction;
class QActionGroup;
class QLabel;
class QMenu;
class QProgressBar;

namespace paralab {

class Chart;
class ChartHub;
class ConfigPanel;
class LessonDock;
class SweepPanel;
class BenchRunner;
class JobRunner;
class WelcomePage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // Settings changed during a run are applied this long after the last change, so typing
  // "16" into Ranks does not re-shard to 1 first.
  static constexpr int kApplyDelayMs = 600;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigPanel* configPanel() const { return m_configPanel; }
  SweepPanel* sweepPanel() const { return m_sweepPanel; }
  LessonDock* lessonDock() const { return m_lessonDock; }
  BenchRunner* benchRunner() const { return m_benchRunner; }
  // Runs whose ranks are processes (Execution: MPI processes or NCCL) are mpirun jobs.
  JobRunner* jobRunner() const { return m_job; }
  ChartHub* chartHub() const { return m_hub; }
  QList<Chart*> charts() const;
  Chart* currentChart() const { return m_currentChart; }
  const MetricHistory& history() const { return m_history; }
  RunState runState() const { return m_state; }
  const RunConfig& runConfig() const { return m_runConfig; }  // of the run shown
  QStringList liveChanges() const { return m_changes; }       // reconfigurations applied

  QAction* startAction() const { return m_start; }
  QAction* pauseAction() const { return m_pause; }
  QAction* stepAction() const { return m_step; }
  QAction* resetAction() const { return m_reset; }
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
  WelcomePage* welcomePage() const { return m_welcome; }

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
  QString recordedFrom() const { return m_recordedFrom; }  // its file's name ("" live)

 public slots:
  void start();  // a new run, or resume a paused one
  void pause();
  void step();   // one step (starting a paused run when none is going)
  void reset();  // stop the run and clear the charts
  void runSweep();
  void exportCurrentChart();
  void exportAllCharts();
  // Copies new steps from the session into the charts (the poll timer calls it).
  void poll();
  // Applies the panel's settings to the run in flight now (the debounce timer calls it).
  void applyLiveChanges();

 signals:
  // The run shown reached its end: finished (ok) or failed / refused to start (error set).
  void runEnded(bool ok, const QString& error);

 protected:
  void closeEvent(QCloseEvent* event) override;  // asks first while a run or sweep is open
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void createActions();
  void createMenus();
  void createCharts();
  void createDocks();
  void createStatusBar();
  void createLessonDock();
  QDockWidget* leftColumn() const;
  // [SECTION] main_window_lessons.cpp: the welcome, the lessons' runs, asking before a loss.
  void startAs(const QString& choice);  // "lesson" or "free": that tab in front, remembered
  void coverCharts();
  bool runInProgress() const;  // a run shown that is loading, training or paused
  QString runAtRisk() const;   // "The run shown (paused at step 40 of 100)" ("" none)
  bool settingsAreTheLearners(const RunConfig& replacement) const;
  // A question with what would be lost, one line each; true at once when nothing would be.
  bool confirm(const QString& question, const QStringList& losses, const QString& yes);
  bool mayReplaceWith(const RunConfig& lesson, bool newRun);
  void useLessonSettings(const RunConfig& config);
  bool startNewRun(bool paused);
  void onConfigChanged();
  void noteRunConfig(const Snapshot& s);
  void updateActions();
  void updateStatus();
  void updateConfigNote();
  void showSweep(const SweepResult& result);
  // A sweep or a lesson's benchmark is timing something: training beside it would share its
  // cores, so nothing starts or resumes ("" when none is).
  QString measuringNow() const;
  void openConfig();
  void openRun();  // asks for the file, and before the run shown is lost
  // `config` null: the file had no summary line, so the settings are not known.
  void showRecordedRun(const QString& file, const RunConfig* config, const StepMetrics& last);
  void saveConfig();
  void showError(const QString& message);
  // [SECTION] main_window_jobs.cpp: where the run shown trains, the session (thread ranks) or
  // an mpirun job (MPI processes, NCCL), behind one set of commands.
  std::string startRun(const RunConfig& config, bool paused);  // "" or why it cannot start
  void pauseRun();
  void resumeRun();
  void stepRun();
  void stopRun();
  std::string reconfigureRun(const RunConfig& config);
  Snapshot runSnapshot(int64_t fromStep);
  // As runSnapshot, but nothing when the training holds what it must copy (Session::trySnapshot):
  // the poll asks again at its next tick rather than wait on a lower-priority thread.
  std::optional<Snapshot> tryRunSnapshot(int64_t fromStep);
  void releaseRun(int64_t step);

  Session m_session;
  JobRunner* m_job = nullptr;  // the run shown is its job when m_onJob (main_window_jobs.cpp)
  bool m_onJob = false;
  bool m_jobModelled = false;  // its steps' bytes are modelled (MPI's own collectives)
  QTimer m_pollTimer{this};   // a child, so tests can find it by name
  QTimer m_applyTimer{this};  // debounces live reconfiguration
  MetricHistory m_history;
  // The spans and holdings of its last steps, for run.jsonl (Export All): bounded, see there.
  StepViewsLog m_stepViews;
  bool m_showingRun = false;  // false after Reset: the stopped run's data is not shown
  int64_t m_runId = -1;       // the run the charts show (-1: adopt the next one)
  int64_t m_seen = 0;         // steps of that run already copied
  RunState m_state = RunState::Idle;
  RunConfig m_runConfig;  // the configuration of the run shown
  QString m_runError;
  QString m_liveNote;  // what the last live change did ("" none)
  bool m_liveNoteWarns = false;
  QStringList m_changes;   // live reconfigurations of the run shown, for the summary
  QString m_recordedFrom;  // the file of the recorded run shown ("" a live run or none)
  bool m_settingsUnknown = false;  // that file had no summary: m_runConfig is not the run's
  QString m_runFileError;  // said once in the status bar
  LoadProgress m_loading;  // what the run does before its first step
  int64_t m_parameterCount = 0;
  std::optional<StepMetrics> m_lastStep;  // with its per-rank metrics, for the summary
  std::optional<SweepResult> m_sweep;
  bool m_sized = false, m_restoredLayout = false;  // the first show lays the columns out
  bool m_persist = false;  // save layout and settings on close: only after restoreSettings()
  int m_columnWidth = 0;   // of the left column, kept when the window grows (resizeEvent)
  int m_windowWidth = 0;   // at the last resize: a column resize at the same width is a drag

  ChartHub* m_hub = nullptr;
  ConfigPanel* m_configPanel = nullptr;
  SweepPanel* m_sweepPanel = nullptr;
  QDockWidget* m_sweepDock = nullptr;
  QDockWidget* m_configDock = nullptr;
  LessonDock* m_lessonDock = nullptr;
  BenchRunner* m_benchRunner = nullptr;  // a lesson step's teaching benchmark
  int64_t m_experimentRunId = -1;                  // a lesson step's run: its result goes back
  std::optional<RunConfig> m_experimentSweepBase;  // a lesson step's sweep: likewise
  std::optional<RunConfig> m_lessonConfig;         // the settings a lesson last put on the panel
  WelcomePage* m_welcome = nullptr;
  Chart* m_currentChart = nullptr;
  QMenu* m_viewMenu = nullptr;
  QActionGroup* m_themeGroup = nullptr;
  QAction* m_movablePanels = nullptr;
  QAction *m_start, *m_pause, *m_step, *m_reset, *m_sweepAction;
  QAction *m_exportChart, *m_exportAll;
  QLabel *m_stateLabel, *m_stepLabel, *m_rateLabel, *m_stepTimeLabel;
  QProgressBar* m_loadBar;
};

}  // namespace paralab
