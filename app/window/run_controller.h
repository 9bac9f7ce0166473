// RunController: the window's run. Start / Pause / Step / Reset drive one RunControl
// (run_control.h), picked for each new run by where it trains (makeRunControl: thread ranks in a
// Session, or an mpirun job of paralab-run in a JobRunner) and never asked which it is; a ≤ 30 Hz
// timer copies new steps out of its snapshots into the shown run and the charts, so the window
// never waits on training (docs/architecture.md §2); settings changed while training are applied
// after a short pause in typing. See tests/app/tst_window.cpp and tst_window_jobs.cpp.
#pragma once
#include <QObject>
#include <QTimer>
#include <functional>
#include <memory>

#include "window/shown_run.h"

class QAction;
class QKeySequence;
class QLabel;
class QMainWindow;
class QProgressBar;

namespace paralab {

class ChartHub;
class ConfigPanel;
class JobRunner;
class StragglerMark;

// The run control for runs that train at `place`; a job reads its hosts from `hosts` at every
// launch.
std::unique_ptr<RunControl> makeRunControl(RunPlace place, std::function<QString()> hosts);

// A toolbar action: the desktop's icon theme's `themeName` when it has one, else ours
// (:/icons/`name`.svg); its tooltip names `key`; its object name is `name` + "Action".
QAction* makeToolAction(QObject* parent, const char* name, const char* themeName,
                        const QString& text, const QKeySequence& key, const QString& tip);

class RunController : public QObject {
  Q_OBJECT
 public:
  // Settings changed during a run are applied this long after the last change, so typing
  // "16" into Ranks does not re-shard to 1 first.
  static constexpr int kApplyDelayMs = 600;

  // Its actions (parented to `window`) and its labels in the window's status bar are made here.
  // `measuring` says why nothing may start or resume now ("" when it may): a sweep or a
  // benchmark timing something would share its cores.
  RunController(QMainWindow* window, ChartHub* hub, ConfigPanel* panel,
                std::function<QString()> measuring);
  ~RunController() override;  // ~RunControl stops the run (joins, or ends the job)

  ShownRun& shown() { return m_shown; }
  const ShownRun& shown() const { return m_shown; }
  JobRunner* jobRunner() const;  // the run's job, if it is one (nullptr otherwise)
  QAction* startAction() const { return m_start; }
  QAction* pauseAction() const { return m_pause; }
  QAction* stepAction() const { return m_step; }
  QAction* resetAction() const { return m_reset; }

  // "The run shown (paused at step 40 of 100)" ("" when none is in progress).
  QString atRisk() const;
  // A new run with the panel's settings: false (the status bar and runEnded say why) when it
  // cannot start. `paused`: it loads, takes one step, then waits.
  bool startNew(bool paused);
  // Pauses a run that is training or loading, so a measurement has the cores: true if it did.
  bool pauseForMeasuring();
  // A recorded run's steps are in the history (FileActions::openRunFile): the charts draw them
  // under the subtitle of its settings, saying where they came from. `config` null: the file
  // had no summary line, so the settings are not known.
  void showRecorded(const QString& file, const RunConfig* config, const StepMetrics& last);
  void showError(const QString& message);  // in the status bar, until the next message
  void updateActions();
  void updateStatus();

 public slots:
  void start();  // a new run, or resume a paused one
  void pause();
  void step();   // one step (starting a paused run when none is going)
  void reset();  // stop the run and clear the charts
  // Copies new steps from the run into the charts (the poll timer calls it).
  void poll();
  // Applies the panel's settings to the run in flight now (the debounce timer calls it).
  void applyLiveChanges();
  void onConfigChanged();

 signals:
  // The run shown reached its end: finished (ok) or failed / refused to start (error set).
  void runEnded(bool ok, const QString& error);

 private:
  void createActions();
  void createStatusBar();
  std::string startRun(const RunConfig& config, bool paused);  // "" or why it cannot start
  void noteRunConfig(const Snapshot& s);
  void updateConfigNote();
  void setSubtitle(const RunConfig& config);

  QMainWindow* m_window;
  ChartHub* m_hub;
  ConfigPanel* m_panel;
  std::function<QString()> m_measuring;
  std::unique_ptr<RunControl> m_run;      // where the run shown trains
  std::unique_ptr<RunControl> m_retired;  // the one it replaced, ending in its own time
  QTimer m_pollTimer{this};               // a child, so tests can find it by name
  QTimer m_applyTimer{this};              // debounces live reconfiguration
  ShownRun m_shown;
  QAction *m_start = nullptr, *m_pause = nullptr, *m_step = nullptr, *m_reset = nullptr;
  QLabel *m_stateLabel = nullptr, *m_stepLabel = nullptr, *m_rateLabel = nullptr,
         *m_stepTimeLabel = nullptr;
  QProgressBar* m_loadBar = nullptr;
  StragglerMark* m_straggler = nullptr;  // made at the first step shown (the charts exist then)
};

}  // namespace paralab
