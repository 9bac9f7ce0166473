// The window's run (see run_controller.h): its commands, the snapshot poll, live
// reconfiguration, its actions and its labels in the status bar.
// See tests/app/tst_window.cpp, tst_window_jobs.cpp and tst_app.cpp.
#include "window/run_controller.h"

#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QMainWindow>
#include <QProgressBar>
#include <QStatusBar>
#include <limits>

#include "charts/chart_hub.h"
#include "charts/flight_recorder_chart.h"
#include "charts/holdings_map.h"
#include "charts/loss_chart.h"
#include "charts/straggler_mark.h"
#include "charts/timeline_chart.h"
#include "job_runner.h"
#include "panels/config_panel.h"
#include "window/run_text.h"

namespace paralab {

namespace {

// ≤ 30 Hz: smooth to the eye, and the GUI thread stays mostly idle for the training threads.
constexpr int kPollMs = 34;  // 29.4 Hz

}  // namespace

// The one place that says which implementation trains where.
std::unique_ptr<RunControl> makeRunControl(RunPlace place, std::function<QString()> hosts) {
  if (place == RunPlace::Threads) return std::make_unique<Session>();
  return std::make_unique<JobRunner>(std::move(hosts));
}

// The desktop's icon theme when it has one; else ours, coloured to read on light and dark.
QAction* makeToolAction(QObject* parent, const char* name, const char* themeName,
                        const QString& text, const QKeySequence& key, const QString& tip) {
  const QIcon icon = QIcon::fromTheme(themeName, QIcon(QString(":/icons/%1.svg").arg(name)));
  auto* a = new QAction(icon, text, parent);
  a->setShortcut(key);
  a->setToolTip(QString("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
  a->setStatusTip(tip);
  a->setObjectName(QString(name) + "Action");
  return a;
}

RunController::RunController(QMainWindow* window, ChartHub* hub, ConfigPanel* panel,
                             std::function<QString()> measuring)
    : QObject(window), m_window(window), m_hub(hub), m_panel(panel),
      m_measuring(std::move(measuring)) {
  createActions();
  createStatusBar();
  m_pollTimer.setObjectName("pollTimer");
  m_pollTimer.setInterval(kPollMs);
  connect(&m_pollTimer, &QTimer::timeout, this, &RunController::poll);
  m_applyTimer.setObjectName("applyTimer");
  m_applyTimer.setSingleShot(true);
  m_applyTimer.setInterval(kApplyDelayMs);
  connect(&m_applyTimer, &QTimer::timeout, this, &RunController::applyLiveChanges);
}

RunController::~RunController() = default;

void RunController::createActions() {
  auto make = [this](const char* name, const char* themeName, const QString& text,
                     const QKeySequence& key, const QString& tip, void (RunController::*slot)()) {
    QAction* a = makeToolAction(m_window, name, themeName, text, key, tip);
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  m_start = make("start", "media-playback-start", tr("&Start"), Qt::Key_F5,
                 tr("Start a new run with the settings on the left, or resume a paused one"),
                 &RunController::start);
  m_pause = make("pause", "media-playback-pause", tr("&Pause"), Qt::Key_F6,
                 tr("Pause after the step in flight"), &RunController::pause);
  m_step = make("step", "media-skip-forward", tr("S&tep"), Qt::Key_F10,
                tr("Run exactly one step, then pause"), &RunController::step);
  m_reset = make("reset", "view-refresh", tr("&Reset"), QKeySequence(Qt::SHIFT | Qt::Key_F5),
                 tr("Stop the run and clear the charts; the next Start uses the current settings"),
                 &RunController::reset);
}

void RunController::createStatusBar() {
  QStatusBar* bar = m_window->statusBar();
  auto label = [bar](const char* name, const QString& tip) {
    auto* l = new QLabel;
    l->setObjectName(name);
    l->setToolTip(tip);
    l->setContentsMargins(8, 0, 8, 0);
    bar->addPermanentWidget(l);
    return l;
  };
  m_stateLabel = label("stateLabel", tr("State of the run"));
  m_loadBar = new QProgressBar;
  m_loadBar->setObjectName("loadProgress");
  m_loadBar->setMaximumWidth(160);
  m_loadBar->setTextVisible(false);
  m_loadBar->hide();
  bar->addPermanentWidget(m_loadBar);
  m_stepLabel = label("stepLabel", tr("Steps done / steps of the run"));
  m_rateLabel =
      label("rateLabel", tr("Throughput: samples trained per second of wall time over the last %1 "
                            "steps (global batch × steps / their summed step time); measured. "
                            "Metrics reference: samples_per_s")
                             .arg(MetricHistory::kMeanWindow));
  m_stepTimeLabel =
      label("stepTimeLabel", tr("Step time: wall time of one whole step (data, forward, backward, "
                                "optimizer), mean of the last %1 steps; measured. "
                                "Metrics reference: step_ms")
                                 .arg(MetricHistory::kMeanWindow));
}

// [SECTION] Where the run trains: one RunControl, whatever the place.

std::string RunController::startRun(const RunConfig& config, bool paused) {
  // An opened file without spans or holdings said so in these charts (openRunFile); a run has them.
  if (auto* t = m_hub->find<TimelineChart>())
    t->setPlaceholderText(tr("No spans yet: press Start (F5) to train"));
  if (auto* h = m_hub->find<HoldingsMap>())
    h->setPlaceholderText(tr("No holdings yet: they come with the first step"));
  // Runs that train in one place follow one another on one run control (a Session's next run
  // waits for the last one's step off this thread; a job's earlier launch winds down on its
  // own); the one replaced stays until the next replacement, so it too ends in its own time.
  if (!m_run || m_run->place() != runPlace(config)) {
    if (m_run) m_run->stop();
    m_retired = std::move(m_run);
    m_run = makeRunControl(runPlace(config), [this] { return m_panel->hosts(); });
  }
  return m_run->start(config, paused);
}

JobRunner* RunController::jobRunner() const { return dynamic_cast<JobRunner*>(m_run.get()); }

// [SECTION] Run commands: each returns at once; poll() shows what they did.

void RunController::start() {
  if (!m_measuring().isEmpty()) return;  // updateActions says why
  if (m_shown.showing && m_shown.state == RunState::Paused) {
    m_run->resume();
    poll();
    return;
  }
  if (m_shown.active()) return;
  startNew(false);
}

void RunController::pause() {
  if (!m_shown.showing || !m_run) return;
  m_run->pause();
  poll();
}

bool RunController::pauseForMeasuring() {
  if (!m_shown.showing ||
      !(m_shown.state == RunState::Running || m_shown.state == RunState::Loading))
    return false;
  pause();
  return true;
}

void RunController::step() {
  if (!m_measuring().isEmpty()) return;
  if (m_shown.active()) {
    m_run->stepOnce();
    poll();
    return;
  }
  startNew(true);
}

void RunController::reset() {
  if (m_run) m_run->discard();
  m_pollTimer.stop();
  m_applyTimer.stop();
  m_shown.showing = false;
  m_shown.state = RunState::Idle;
  m_shown.forgetSteps();
  m_hub->setSubtitle(QString());
  m_hub->clear();  // a sweep is not a run: the speedup chart keeps it
  if (m_straggler) m_straggler->clear();
  updateActions();
  updateStatus();
  updateConfigNote();
}

QString RunController::atRisk() const {
  if (!m_shown.active()) return {};
  const int64_t steps = m_shown.history.stepsSeen();
  const QString where = m_shown.config.steps > 0
                            ? tr("at step %1 of %2").arg(steps).arg(m_shown.config.steps)
                            : tr("at step %1").arg(steps);
  return m_shown.state == RunState::Paused ? tr("The run shown (paused %1)").arg(where)
                                           : tr("The run shown (training %1)").arg(where);
}

void RunController::showRecorded(const QString& file, const RunConfig* config,
                                 const StepMetrics& last) {
  m_shown.history.flush();
  RunConfig shown;
  if (config) {
    shown = *config;
  } else {
    shown.ranks = last.ranks.empty() ? 1 : int(last.ranks.size());
  }
  m_shown.config = shown;
  m_shown.recordedFrom = file;
  m_shown.settingsUnknown = !config;
  m_shown.lastStep = last;
  Snapshot s;
  s.state = RunState::Finished;
  s.config = shown;
  s.stepsDone = m_shown.history.stepsSeen();
  s.steps = {last};
  const bool modelled = bytesModelled(last);
  const QString what =
      config ? runSubtitle(shown, modelled)
             : (shown.ranks == 1 ? tr("measured · 1 rank") : tr("measured · %1 ranks").arg(shown.ranks)) +
                   tr(", settings unknown (no summary line)") +
                   (modelled ? tr(" · bytes modelled") : QString());
  m_hub->setSubtitle(tr("recorded in %1 · %2").arg(file, what),
                     config ? runLabels(shown, modelled) : QStringList());
  // (Unknown settings name the series as an MLP's, rather than keep the last run's names.)
  if (auto* loss = m_hub->find<LossChart>()) loss->showRunOf(shown, config != nullptr);
  m_hub->show(m_shown.history, s);
  m_hub->refreshAll();
  updateStatus();
  updateActions();
}

bool RunController::startNew(bool paused) {
  const RunConfig config = m_panel->config();
  const std::string err = startRun(config, paused);
  if (!err.empty()) {
    showError(QString::fromStdString(err));
    emit runEnded(false, QString::fromStdString(err));
    return false;
  }
  if (paused) m_run->stepOnce();  // loads, does one step, then waits
  // What the last run ended with ("The run failed: training diverged …") is not this one's.
  m_window->statusBar()->clearMessage();
  // The run now drawn stays under the new one, faded, for comparison.
  if (auto* loss = m_hub->find<LossChart>(); loss && !m_shown.history.isEmpty())
    loss->keepAsOverlay(LossChart::runLabel(m_shown.config), m_shown.config);
  // Only the run id: asking from past the end copies no steps.
  m_shown.runId = m_run->snapshot(std::numeric_limits<int64_t>::max()).runId;
  ++m_shown.number;
  m_shown.seen = 0;
  m_shown.showing = true;
  m_shown.state = RunState::Loading;
  m_shown.config = config;
  m_shown.modelled = false;
  m_shown.forgetSteps();
  m_hub->clear();
  if (m_straggler) m_straggler->clear();
  setSubtitle(config);
  if (auto* loss = m_hub->find<LossChart>()) loss->showRunOf(config);
  m_hub->raiseRunCharts();  // a sweep drawn over the loss chart steps back for the new run
  m_pollTimer.start();
  poll();
  return true;
}

// A run's bytes may be moved unseen by the library (MPI's collectives): its steps say so, and
// the charts and CSVs say it as they do for the same run opened from its file.
void RunController::setSubtitle(const RunConfig& config) {
  m_hub->setSubtitle(runSubtitle(config, m_shown.modelled), runLabels(config, m_shown.modelled));
}

// [SECTION] Snapshot poll: copies only the steps not seen yet.

void RunController::poll() {
  if (!m_shown.showing || !m_run) return;
  // A job's snapshots carry the spans and holdings its lines brought (JobRunner), as a thread
  // run's carry the session's: the timeline and holdings map draw both alike.
  std::optional<Snapshot> taken = m_run->trySnapshot(m_shown.seen, TimelineChart::kSteps);
  if (!taken) return;  // the training holds its buffers this instant: the next tick takes them
  Snapshot s = std::move(*taken);
  MetricHistory& history = m_shown.history;
  if (s.runId != m_shown.runId) {  // someone started another run: show that one from its start
    m_shown.runId = s.runId;
    history.clear();
    m_shown.stepViews.clear();
    s = m_run->snapshot(0, TimelineChart::kSteps);
  }
  // The steps go to the history (and its run file); the run control need not keep them.
  if (!s.steps.empty() && s.steps.front().step > history.lastStep() + 1)
    showError(tr("Steps %1 to %2 were not recorded: the window fell behind the training")
                  .arg(history.lastStep() + 1)
                  .arg(s.steps.front().step - 1));
  for (const StepMetrics& m : s.steps) history.append(m);
  if (!s.steps.empty()) history.flush();
  // Each step's spans (the snapshot has those of the last steps) and the holdings, for the
  // run's lines that Export All writes.
  if (!s.steps.empty())
    m_shown.stepViews.add(s.spans, s.holdings, s.steps.front().step, s.steps.back().step,
                          s.spansLeftOut);
  m_shown.seen = s.stepsDone;
  m_run->release(m_shown.seen);
  m_shown.parameterCount = s.parameterCount;
  if (!s.steps.empty()) m_shown.lastStep = s.steps.back();
  if (!s.steps.empty() && bytesModelled(s.steps.back()) != m_shown.modelled) {
    m_shown.modelled = !m_shown.modelled;
    setSubtitle(s.config);
  }
  noteRunConfig(s);
  if (!s.steps.empty()) m_hub->show(history, s);
  if (!s.steps.empty() && !m_straggler) {
    m_straggler = new StragglerMark(m_window->statusBar(), m_hub->find<TimelineChart>());
    m_window->statusBar()->insertPermanentWidget(0, m_straggler->label());
  }
  if (m_straggler) m_straggler->feed(s.steps);  // the measured straggler, over the last K steps
  if (const QString err = history.runFileError(); !err.isEmpty() && err != m_shown.runFileError)
    showError(m_shown.runFileError = err);
  m_shown.loading = s.state == RunState::Loading ? s.loading : LoadProgress{};

  const RunState before = m_shown.state;
  m_shown.state = s.state;
  updateStatus();
  if (m_shown.state == before) return;
  updateActions();
  updateConfigNote();
  if (m_shown.state == RunState::Finished || m_shown.state == RunState::Failed) {
    m_pollTimer.stop();
    m_applyTimer.stop();
    m_shown.error = QString::fromStdString(s.error);
    if (m_shown.state == RunState::Failed) showError(tr("The run failed: %1").arg(m_shown.error));
    // A hung run: its recorders fill the "Flight recorder" table, brought to the front.
    if (auto* recorder = m_hub->find<FlightRecorderChart>(); recorder && s.flight) {
      recorder->showFlight(*s.flight);
      if (QDockWidget* dock = m_hub->dockOf(recorder)) dock->raise();
    }
    emit runEnded(m_shown.state == RunState::Finished, m_shown.error);
  }
}

// [SECTION] Live reconfiguration: the panel's settings go to the run in flight after a short
// pause; the engine re-shards between steps and the loss curve carries on from the same step.

void RunController::onConfigChanged() {
  updateActions();
  if (m_shown.active())
    m_applyTimer.start();  // restarts: applied kApplyDelayMs after the last change
  else
    updateConfigNote();
}

void RunController::applyLiveChanges() {
  if (!m_shown.active() || !m_run) return updateConfigNote();
  RunConfig wanted = m_panel->config();
  if (!m_panel->isValid()) return updateConfigNote();  // the panel says why, inline
  wanted.steps = m_shown.config.steps;  // the run's length is fixed when it starts
  // The model, its data and the like wait for the next Start; every other change still goes to
  // the run, so that one of them does not hold back a later batch or ZeRO change.
  std::vector<std::string> waiting;
  const RunConfig live = liveChanges(m_shown.config, wanted, &waiting);
  const bool changes = !describeChange(m_shown.config, live).isEmpty();
  if (!changes && waiting.empty()) {
    m_shown.liveNote.clear();
    return updateConfigNote();
  }
  const std::string err = changes ? m_run->reconfigure(live) : std::string();
  QStringList note, kept;
  if (changes)
    note << (err.empty() ? tr("Applying to the running training after the step in flight…")
                         : tr("Not applied to the running training: %1")
                               .arg(QString::fromStdString(err)));
  for (const std::string& key : waiting) kept << QString::fromStdString(key);
  if (!kept.isEmpty())
    note << tr("%1: changing it needs a new run (Reset, then Start); the running training keeps "
               "its own and takes your other changes.")
                .arg(kept.join(", "));
  m_shown.liveNote = note.join(' ');
  m_shown.liveNoteWarns = !err.empty() || !kept.isEmpty();
  // The note sits at the top of the settings panel, which may be scrolled out of view: a
  // warning goes to the status bar too.
  if (m_shown.liveNoteWarns) showError(m_shown.liveNote);
  updateConfigNote();
}

// The configuration in a snapshot changes when the engine has applied a reconfiguration.
void RunController::noteRunConfig(const Snapshot& s) {
  if (!s.notice.empty()) {
    m_shown.liveNote = QString::fromStdString(s.notice);
    m_shown.liveNoteWarns = true;
  }
  const QString change = describeChange(m_shown.config, s.config);
  if (!change.isEmpty()) {
    // The step the engine applied it after, whatever steps have been taken since.
    m_shown.changes << tr("after step %1: %2").arg(s.configStep).arg(change);
    m_shown.history.addChange(s.configStep, change);
    m_shown.liveNote = tr("Applied after step %1: %2").arg(s.configStep).arg(change);
    m_shown.liveNoteWarns = false;
    setSubtitle(s.config);
  }
  m_shown.config = s.config;
  if (!change.isEmpty() || !s.notice.empty()) updateConfigNote();
}

// [SECTION] What the actions, the status bar and the panel's note say

void RunController::updateActions() {
  const bool active = m_shown.active();
  const bool paused = m_shown.showing && m_shown.state == RunState::Paused;
  const bool valid = m_panel->isValid();
  // While a sweep or a benchmark measures, training would share its cores: nothing starts.
  const QString why = m_measuring();
  const bool measuring = !why.isEmpty();
  // A new run needs settings that validate; the reason is shown under the panel's title.
  m_start->setEnabled(!measuring && (paused || (!active && valid)));
  m_start->setText(paused ? tr("Re&sume") : tr("&Start"));
  m_pause->setEnabled(active && !paused);
  m_step->setEnabled(!measuring && (active || valid));
  for (QAction* a : {m_start, m_step}) {
    if (!a->property("baseToolTip").isValid()) a->setProperty("baseToolTip", a->toolTip());
    a->setToolTip(measuring ? why : a->property("baseToolTip").toString());
  }
  m_reset->setEnabled(m_shown.showing);
}

void RunController::updateStatus() {
  const RunState shown = m_shown.showing ? m_shown.state : RunState::Idle;
  const LoadProgress& load = m_shown.loading;
  // Loading a large run takes a while: what it is doing, and how far, in words and a bar.
  const bool loading = shown == RunState::Loading && !load.stage.empty();
  m_stateLabel->setText(loading ? tr("State: loading — %1 (%2 of %3)")
                                      .arg(QString::fromStdString(load.stage))
                                      .arg(load.done)
                                      .arg(load.total)
                        : !m_shown.recordedFrom.isEmpty()
                            ? tr("State: recorded (%1)").arg(m_shown.recordedFrom)
                            : tr("State: %1").arg(runStateName(shown)));
  // A stage without a count (a batch job waiting in the queue) is said alone.
  if (loading && load.total == 0)
    m_stateLabel->setText(tr("State: loading — %1").arg(QString::fromStdString(load.stage)));
  m_loadBar->setVisible(loading);
  if (loading) {
    m_loadBar->setRange(0, int(load.total));  // 0 of 0: busy, how far unknown
    m_loadBar->setValue(int(load.done));
  }
  m_stateLabel->setStyleSheet(shown == RunState::Failed ? "color: #e53935;" : QString());
  m_stateLabel->setToolTip(shown == RunState::Failed ? m_shown.error : tr("State of the run"));
  const MetricHistory& history = m_shown.history;
  const int64_t steps = history.stepsSeen();
  m_stepLabel->setText(m_shown.config.steps > 0 && m_shown.showing
                           ? tr("Step %1 / %2").arg(steps).arg(m_shown.config.steps)
                           : tr("Step %1").arg(steps));
  if (history.isEmpty()) {
    m_rateLabel->setText(tr("— samples/s"));
    m_stepTimeLabel->setText(tr("— ms/step"));
    return;
  }
  m_rateLabel->setText(samplesPerSText(history.recentSamplesPerS()));
  m_stepTimeLabel->setText(tr("%L1 ms/step").arg(history.recentStepMs(), 0, 'f', 2));
}

void RunController::updateConfigNote() {
  const bool active = m_shown.active();
  if (active && !m_shown.liveNote.isEmpty())
    return m_panel->setNote(m_shown.liveNote, m_shown.liveNoteWarns);
  m_panel->setNote(active ? tr("Changes apply to the running training %1 ms after the last "
                               "one (model, data, optimizer and seed need a new run).")
                                .arg(kApplyDelayMs)
                          : QString());
}

// Until the next message: a learner who looked away still reads what went wrong.
void RunController::showError(const QString& message) {
  m_window->statusBar()->showMessage(message);
}

}  // namespace paralab
