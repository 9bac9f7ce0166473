// MainWindow: the run commands, the snapshot poll, live reconfiguration, the sweep and the
// window's state (see main_window.h); its construction is in main_window_build.cpp, its files
// in main_window_files.cpp and its lessons in main_window_lessons.cpp.
// See tests/app/tst_app.cpp, tests/app/tst_window.cpp, or run `paralab`.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QResizeEvent>
#include <QStatusBar>
#include <QWindow>
#include <limits>
#include <nlohmann/json.hpp>

#include "bench_runner.h"
#include "charts/chart_hub.h"
#include "charts/loss_chart.h"
#include "charts/speedup_chart.h"
#include "charts/timeline_chart.h"
#include "describe.h"
#include "engine_bridge.h"
#include "panels/config_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "theme.h"

// Resources of a static library are registered by hand (outside any namespace).
static void initParalabResources() { Q_INIT_RESOURCE(paralab); }

namespace paralab {

namespace {

// ≤ 30 Hz: smooth to the eye, and the GUI thread stays mostly idle for the training threads.
constexpr int kPollMs = 34;  // 29.4 Hz

// The model and data of a run: "MLP H=128 L=2 · fashion-mnist · B=256"; the GPT adds its heads
// and context ("GPT H=128 L=2 4 heads T=64").
QString describeModel(const RunConfig& c) {
  const RunDescription d = describeRun(c);
  return QString::fromStdString(d.model + " · " + d.data);
}

// The chart subtitle: what was run, short enough for a chart a third of the window wide, and
// (DESIGN.md §5) whether any of it was emulated (runLabel says so). The seed and the rest are
// in run-config.json beside every export.
QString describe(const RunConfig& c) {
  return QObject::tr("measured · %1 · %2").arg(describeModel(c), LossChart::runLabel(c));
}

// What a run's data is besides measured, for the CSV exports (Chart::setLabels): an emulated
// link, straggler or serial section, bytes modelled rather than counted
// (lessons/reference/metrics.md).
QStringList runLabels(const RunConfig& c, bool modelledBytes) {
  QStringList labels;
  for (const EmulatedPart& p : describeRun(c).emulated)
    labels << QObject::tr("emulated: %1").arg(QString::fromStdString(p.detail));
  if (modelledBytes)
    labels << QObject::tr(
                  "bytes modelled: the library's collectives (--backend %1) move them "
                  "unseen; these are the algorithm's counts")
                  .arg(QString::fromStdString(c.backend));
  return labels;
}

// The speedup chart's subtitle: the settings the sweep measured, at the rank counts it ran
// (not the ranks of whatever run is shown beside it).
QString describeSweep(const RunConfig& c, const SweepResult& r) {
  QStringList ranks;
  for (const SweepPoint& p : r.points) ranks << QString::number(p.ranks);
  return QObject::tr("measured sweep · %1 scaling at ranks %2 · %3 · %4")
      .arg(QString::fromStdString(r.scaling), ranks.join(", "), describeModel(c),
           LossChart::runLabel(c, false));
}

bool isActive(RunState s) {
  return s == RunState::Loading || s == RunState::Running || s == RunState::Paused;
}

// "ranks 1 → 2, strategy sync → gossip": the settings that differ, by their flag names.
QString describeChange(const RunConfig& from, const RunConfig& to) {
  const nlohmann::json a = from.toJson(), b = to.toJson();
  QStringList parts;
  for (const auto& [key, value] : b.items())
    if (key != "steps" && (!a.contains(key) || a[key] != value))
      parts << QString("%1 %2 → %3")
                   .arg(QString::fromStdString(key),
                        QString::fromStdString(a.contains(key) ? a[key].dump() : "—"),
                        QString::fromStdString(value.dump()))
                   .remove('"');
  return parts.join(", ");
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initParalabResources();
  setObjectName("mainWindow");
  setWindowTitle(tr("ParaLab"));
  setWindowIcon(QIcon(":/icons/paralab.svg"));
  setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks | GroupedDragging);
  setTabPosition(Qt::AllDockWidgetAreas, QTabWidget::North);  // tabs read like a notebook's
  // The charts are the window: no central widget, so their docks share all the room.
  setCentralWidget(nullptr);

  createActions();
  createMenus();
  createDocks();  // the settings first: the left column
  createCharts();
  createStatusBar();

  m_pollTimer.setObjectName("pollTimer");
  m_pollTimer.setInterval(kPollMs);
  connect(&m_pollTimer, &QTimer::timeout, this, &MainWindow::poll);
  m_applyTimer.setObjectName("applyTimer");
  m_applyTimer.setSingleShot(true);
  m_applyTimer.setInterval(kApplyDelayMs);
  connect(&m_applyTimer, &QTimer::timeout, this, &MainWindow::applyLiveChanges);
  connect(m_configPanel, &ConfigPanel::configChanged, this, &MainWindow::onConfigChanged);
  updateActions();
  updateStatus();
  resize(1440, 900);
}

// Qt gives the left column its share of what the window gains: made small and grown back, the
// window would keep the column wide and the charts narrow. The column keeps the width it was
// given (or dragged to); the docks are laid out to the new size after this event, so the
// column is set right after.
void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  QTimer::singleShot(0, this, [this] {
    if (QDockWidget* column = leftColumn();
        column && m_columnWidth > 0 && column->width() > m_columnWidth) {
      // The chart columns take what the left column gives back, in their present proportion.
      QList<QDockWidget*> docks{column};
      QList<int> widths{m_columnWidth};
      const int spare = column->width() - m_columnWidth;
      int charts = 0;
      for (const char* stem : {"loss", "throughput"})
        if (QDockWidget* d = findChild<QDockWidget*>(QString(stem) + "Dock")) charts += d->width();
      for (const char* stem : {"loss", "throughput"})
        if (QDockWidget* d = findChild<QDockWidget*>(QString(stem) + "Dock"); d && charts > 0) {
          docks << d;
          widths << d->width() + spare * d->width() / charts;
        }
      resizeDocks(docks, widths, Qt::Horizontal);
    }
    m_windowWidth = width();  // from now on a column resize at this width is a drag
    coverCharts();
  });
}

// The dock in front in the left column (lessons, settings or sweep).
QDockWidget* MainWindow::leftColumn() const {
  for (QDockWidget* d : {static_cast<QDockWidget*>(m_lessonDock), m_configDock, m_sweepDock})
    if (d && d->isVisible() && !d->visibleRegion().isEmpty() &&
        dockWidgetArea(d) == Qt::LeftDockWidgetArea && !d->isFloating())
      return d;
  return nullptr;
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  m_hub->syncPixelRatio();
  if (QWindow* handle = windowHandle())
    connect(handle, &QWindow::screenChanged, m_hub, &ChartHub::syncPixelRatio,
            Qt::UniqueConnection);
  if (m_restoredLayout && !m_sized) {  // the column keeps the width the last session left
    m_sized = true;
    QTimer::singleShot(0, this, [this] {
      if (QDockWidget* column = leftColumn()) m_columnWidth = column->width();
      m_windowWidth = width();
    });
  }
  if (m_sized) return;
  m_sized = true;
  // The settings column as narrow as its controls; the two chart columns share the rest.
  auto* config = findChild<QDockWidget*>("configDock");
  const int settingsWidth = m_configPanel->sizeHint().width() + 24;
  const int chartWidth = std::max(300, (width() - settingsWidth) / 2);
  QList<QDockWidget*> docks = {config};
  QList<int> widths = {settingsWidth};
  for (const char* stem : {"loss", "throughput"})
    if (QDockWidget* d = findChild<QDockWidget*>(QString(stem) + "Dock")) {
      docks << d;
      widths << chartWidth;
    }
  resizeDocks(docks, widths, Qt::Horizontal);
  m_columnWidth = settingsWidth;
  m_windowWidth = width();
}

MainWindow::~MainWindow() = default;  // ~Session stops the run and joins its thread

QList<Chart*> MainWindow::charts() const { return m_hub->charts(); }

// [SECTION] Run commands: each returns at once; poll() shows what they did.

bool MainWindow::runInProgress() const { return m_showingRun && isActive(m_state); }

QString MainWindow::measuringNow() const {
  if (m_sweepPanel->isRunning())
    return tr("A scaling sweep is measuring: training beside it would share its cores "
              "(wait for it, or Cancel it in the Scaling sweep panel)");
  if (m_benchRunner && m_benchRunner->isRunning())
    return tr("A lesson's benchmark is measuring: training beside it would share its cores "
              "(wait for it, or Cancel it in the lesson)");
  return {};
}

void MainWindow::start() {
  if (!measuringNow().isEmpty()) return;  // updateActions says why
  if (m_showingRun && m_state == RunState::Paused) {
    resumeRun();
    poll();
    return;
  }
  if (m_showingRun && isActive(m_state)) return;
  startNewRun(false);
}

void MainWindow::pause() {
  if (!m_showingRun) return;
  pauseRun();
  poll();
}

void MainWindow::step() {
  if (!measuringNow().isEmpty()) return;
  if (m_showingRun && isActive(m_state)) {
    stepRun();
    poll();
    return;
  }
  startNewRun(true);
}

void MainWindow::reset() {
  stopRun();
  m_pollTimer.stop();
  m_applyTimer.stop();
  m_showingRun = false;
  m_state = RunState::Idle;
  m_runError.clear();
  m_liveNote.clear();
  m_changes.clear();
  m_lastStep.reset();
  m_recordedFrom.clear();
  m_settingsUnknown = false;
  m_history.clear();
  m_stepViews.clear();
  m_hub->setSubtitle(QString());
  m_hub->clear();  // a sweep is not a run: the speedup chart keeps it
  updateActions();
  updateStatus();
  updateConfigNote();
}

// A recorded run's steps are in the history (openRunFile): the charts draw them under the
// subtitle of its settings, saying where they came from. Without its settings (a file cut
// short) only the ranks are known, from the steps; the subtitle says the rest is not.
void MainWindow::showRecordedRun(const QString& file, const RunConfig* config,
                                 const StepMetrics& last) {
  m_history.flush();
  RunConfig shown;
  if (config) {
    shown = *config;
  } else {
    shown.ranks = last.ranks.empty() ? 1 : int(last.ranks.size());
  }
  m_runConfig = shown;
  m_recordedFrom = file;
  m_settingsUnknown = !config;
  m_lastStep = last;
  Snapshot s;
  s.state = RunState::Finished;
  s.config = shown;
  s.stepsDone = m_history.stepsSeen();
  s.steps = {last};
  const bool modelled = bytesModelled(last);
  const QString what =
      config ? describe(shown)
             : (shown.ranks == 1 ? tr("measured · 1 rank") : tr("measured · %1 ranks").arg(shown.ranks)) +
                   tr(", settings unknown (no summary line)");
  m_hub->setSubtitle(
      tr("recorded in %1 · %2%3").arg(file, what, modelled ? tr(" · bytes modelled") : ""),
      config ? runLabels(shown, modelled) : QStringList());
  // (Unknown settings name the series as an MLP's, rather than keep the last run's names.)
  if (auto* loss = m_hub->find<LossChart>()) loss->describeAccuracy(shown);
  m_hub->show(m_history, s);
  m_hub->refreshAll();
  updateStatus();
  updateActions();
}

bool MainWindow::startNewRun(bool paused) {
  const RunConfig config = m_configPanel->config();
  const std::string err = startRun(config, paused);
  if (!err.empty()) {
    showError(QString::fromStdString(err));
    emit runEnded(false, QString::fromStdString(err));
    return false;
  }
  if (paused) stepRun();  // loads, does one step, then waits
  // The run now drawn stays under the new one, faded, for comparison.
  if (auto* loss = m_hub->find<LossChart>(); loss && !m_history.isEmpty())
    loss->keepAsOverlay(LossChart::runLabel(m_runConfig));
  // Only the run id: asking from past the end copies no steps.
  m_runId = runSnapshot(std::numeric_limits<int64_t>::max()).runId;
  m_seen = 0;
  m_showingRun = true;
  m_state = RunState::Loading;
  m_runConfig = config;
  m_jobModelled = false;
  m_runError.clear();
  m_liveNote.clear();
  m_changes.clear();
  m_lastStep.reset();
  m_recordedFrom.clear();
  m_settingsUnknown = false;
  m_history.clear();
  m_stepViews.clear();
  m_hub->clear();
  m_hub->setSubtitle(describe(config), runLabels(config, false));
  if (auto* loss = m_hub->find<LossChart>()) loss->describeAccuracy(config);
  m_hub->raiseRunCharts();  // a sweep drawn over the loss chart steps back for the new run
  m_pollTimer.start();
  poll();
  return true;
}

// [SECTION] Snapshot poll: copies only the steps not seen yet.

void MainWindow::poll() {
  if (!m_showingRun) return;
  std::optional<Snapshot> taken = tryRunSnapshot(m_seen);
  if (!taken) return;  // the training holds its buffers this instant: the next tick takes them
  Snapshot s = std::move(*taken);
  if (s.runId != m_runId) {  // someone started another run: show that one from its start
    m_runId = s.runId;
    m_history.clear();
    m_stepViews.clear();
    s = runSnapshot(0);
  }
  // The steps go to the history (and its run file); the session need not keep them.
  if (!s.steps.empty() && s.steps.front().step > m_history.lastStep() + 1)
    showError(tr("Steps %1 to %2 were not recorded: the window fell behind the training")
                  .arg(m_history.lastStep() + 1)
                  .arg(s.steps.front().step - 1));
  for (const StepMetrics& m : s.steps) m_history.append(m);
  if (!s.steps.empty()) m_history.flush();
  // Each step's spans (the snapshot has those of the last steps) and the holdings, for the
  // run's lines that Export All writes.
  if (!s.steps.empty())
    m_stepViews.add(s.spans, s.holdings, s.steps.front().step, s.steps.back().step, s.spansLeftOut);
  m_seen = s.stepsDone;
  releaseRun(m_seen);
  m_parameterCount = s.parameterCount;
  if (!s.steps.empty()) m_lastStep = s.steps.back();
  // A job's bytes may be moved unseen by the library (MPI's collectives): its steps say so, and
  // the charts and CSVs say it as they do for the same run opened from its file.
  if (m_onJob && !s.steps.empty() && bytesModelled(s.steps.back()) != m_jobModelled) {
    m_jobModelled = !m_jobModelled;
    m_hub->setSubtitle(describe(s.config) + (m_jobModelled ? tr(" · bytes modelled") : QString()),
                       runLabels(s.config, m_jobModelled));
  }
  noteRunConfig(s);
  if (!s.steps.empty()) m_hub->show(m_history, s);
  if (const QString err = m_history.runFileError(); !err.isEmpty() && err != m_runFileError)
    showError(m_runFileError = err);
  m_loading = s.state == RunState::Loading ? s.loading : LoadProgress{};

  const RunState before = m_state;
  m_state = s.state;
  updateStatus();
  if (m_state == before) return;
  updateActions();
  updateConfigNote();
  if (m_state == RunState::Finished || m_state == RunState::Failed) {
    m_pollTimer.stop();
    m_applyTimer.stop();
    m_runError = QString::fromStdString(s.error);
    if (m_state == RunState::Failed) showError(tr("The run failed: %1").arg(m_runError));
    emit runEnded(m_state == RunState::Finished, m_runError);
  }
}

// [SECTION] Live reconfiguration: the panel's settings go to the run in flight after a short
// pause; the engine re-shards between steps and the loss curve carries on from the same step.

void MainWindow::onConfigChanged() {
  updateActions();
  if (m_showingRun && isActive(m_state))
    m_applyTimer.start();  // restarts: applied kApplyDelayMs after the last change
  else
    updateConfigNote();
}

void MainWindow::applyLiveChanges() {
  if (!m_showingRun || !isActive(m_state)) return updateConfigNote();
  RunConfig wanted = m_configPanel->config();
  if (!m_configPanel->isValid()) return updateConfigNote();  // the panel says why, inline
  wanted.steps = m_runConfig.steps;  // the run's length is fixed when it starts
  if (describeChange(m_runConfig, wanted).isEmpty()) {
    m_liveNote.clear();
    return updateConfigNote();
  }
  const std::string err = reconfigureRun(wanted);
  m_liveNote = err.empty()
                   ? tr("Applying to the running training after the step in flight…")
                   : tr("Not applied to the running training: %1").arg(QString::fromStdString(err));
  m_liveNoteWarns = !err.empty();
  updateConfigNote();
}

// The configuration in a snapshot changes when the engine has applied a reconfiguration.
void MainWindow::noteRunConfig(const Snapshot& s) {
  if (!s.notice.empty()) {
    m_liveNote = QString::fromStdString(s.notice);
    m_liveNoteWarns = true;
  }
  const QString change = describeChange(m_runConfig, s.config);
  if (!change.isEmpty()) {
    // The step the engine applied it after, whatever steps have been taken since.
    m_changes << tr("after step %1: %2").arg(s.configStep).arg(change);
    m_history.addChange(s.configStep, change);
    m_liveNote = tr("Applied after step %1: %2").arg(s.configStep).arg(change);
    m_liveNoteWarns = false;
    m_hub->setSubtitle(describe(s.config) + (m_jobModelled ? tr(" · bytes modelled") : QString()),
                       runLabels(s.config, m_onJob && m_jobModelled));
  }
  m_runConfig = s.config;
  if (!change.isEmpty() || !s.notice.empty()) updateConfigNote();
}

void MainWindow::updateActions() {
  const bool active = m_showingRun && isActive(m_state);
  const bool paused = m_showingRun && m_state == RunState::Paused;
  const bool valid = m_configPanel->isValid();
  // While a sweep or a benchmark measures, training would share its cores: nothing starts.
  const QString why = measuringNow();
  const bool sweeping = !why.isEmpty();
  // A new run needs settings that validate; the reason is shown under the panel's title.
  m_start->setEnabled(!sweeping && (paused || (!active && valid)));
  m_start->setText(paused ? tr("Re&sume") : tr("&Start"));
  m_pause->setEnabled(active && !paused);
  m_step->setEnabled(!sweeping && (active || valid));
  for (QAction* a : {m_start, m_step}) {
    if (!a->property("baseToolTip").isValid()) a->setProperty("baseToolTip", a->toolTip());
    a->setToolTip(sweeping ? why : a->property("baseToolTip").toString());
  }
  m_reset->setEnabled(m_showingRun);
}

void MainWindow::updateStatus() {
  const RunState shown = m_showingRun ? m_state : RunState::Idle;
  // Loading a large run takes a while: what it is doing, and how far, in words and a bar.
  const bool loading = shown == RunState::Loading && !m_loading.stage.empty();
  m_stateLabel->setText(loading ? tr("State: loading — %1 (%2 of %3)")
                                      .arg(QString::fromStdString(m_loading.stage))
                                      .arg(m_loading.done)
                                      .arg(m_loading.total)
                        : !m_recordedFrom.isEmpty() ? tr("State: recorded (%1)").arg(m_recordedFrom)
                                                    : tr("State: %1").arg(runStateName(shown)));
  m_loadBar->setVisible(loading);
  if (loading) {
    m_loadBar->setRange(0, int(m_loading.total));  // 0 of 0: busy, how far unknown
    m_loadBar->setValue(int(m_loading.done));
  }
  m_stateLabel->setStyleSheet(shown == RunState::Failed ? "color: #e53935;" : QString());
  m_stateLabel->setToolTip(shown == RunState::Failed ? m_runError : tr("State of the run"));
  const int64_t steps = m_history.stepsSeen();
  m_stepLabel->setText(m_runConfig.steps > 0 && m_showingRun
                           ? tr("Step %1 / %2").arg(steps).arg(m_runConfig.steps)
                           : tr("Step %1").arg(steps));
  if (m_history.isEmpty()) {
    m_rateLabel->setText(tr("— samples/s"));
    m_stepTimeLabel->setText(tr("— ms/step"));
    return;
  }
  m_rateLabel->setText(tr("%L1 samples/s").arg(m_history.recentSamplesPerS(), 0, 'f', 0));
  m_stepTimeLabel->setText(tr("%L1 ms/step").arg(m_history.recentStepMs(), 0, 'f', 2));
}

void MainWindow::updateConfigNote() {
  const bool active = m_showingRun && isActive(m_state);
  if (active && !m_liveNote.isEmpty()) return m_configPanel->setNote(m_liveNote, m_liveNoteWarns);
  m_configPanel->setNote(active ? tr("Changes apply to the running training %1 ms after the last "
                                     "one (model, data, optimizer and seed need a new run).")
                                      .arg(kApplyDelayMs)
                                : QString());
}

// Until the next message: a learner who looked away still reads what went wrong.
void MainWindow::showError(const QString& message) { statusBar()->showMessage(message); }

// [SECTION] Scaling sweep

void MainWindow::runSweep() {
  m_sweepDock->show();
  m_sweepDock->raise();
  const QString err = m_sweepPanel->run();
  if (!err.isEmpty()) showError(tr("Cannot sweep: %1").arg(err));
}

void MainWindow::showSweep(const SweepResult& result) {
  m_sweep = result;
  if (m_experimentSweepBase && sender() == m_sweepPanel) {
    m_lessonDock->showSweepResult(lessons::sweepJson(result, *m_experimentSweepBase));
    m_experimentSweepBase.reset();
  }
  if (auto* speedup = m_hub->find<SpeedupChart>()) {
    speedup->showSweep(result, describeSweep(m_sweepPanel->sweptConfig(), result));
    speedup->setLabels(runLabels(m_sweepPanel->sweptConfig(), false));
    if (QDockWidget* d = m_hub->dockOf(speedup)) d->raise();  // a new result: bring it forward
  }
}

// [SECTION] Window state and theme

void MainWindow::setTheme(Theme theme) {
  applyTheme(theme);
  for (QAction* a : m_themeGroup->actions()) a->setChecked(Theme(a->data().toInt()) == theme);
  if (m_persist) Settings::setTheme(theme);
}

void MainWindow::restoreSettings(bool keepConfig) {
  restoreGeometry(Settings::windowGeometry());
  m_restoredLayout = restoreState(Settings::windowState());
  setPanelsMovable(m_movablePanels->isChecked());  // a dock restored floating keeps its bar
  setTheme(Settings::theme());
  if (!keepConfig)
    if (auto c = Settings::lastConfig()) m_configPanel->setConfig(*c);
  m_persist = true;
  // The way in chosen last time, or the welcome page until there is one.
  if (const QString choice = Settings::startChoice(); choice.isEmpty())
    showWelcome();
  else
    startAs(choice);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Ctrl+Q, the window's close button, the desktop's: a run in progress is not dropped unasked.
  QStringList losses;
  if (runInProgress())
    losses << tr("%1 ends: runs are not kept when the window closes.").arg(runAtRisk());
  if (m_sweepPanel->isRunning()) losses << tr("The scaling sweep measuring now is cancelled.");
  if (!confirm(tr("Quit ParaLab?"), losses, tr("Quit"))) return event->ignore();
  if (m_persist) {
    Settings::setWindow(saveGeometry(), saveState());
    Settings::setLastConfig(m_configPanel->config());
  }
  QMainWindow::closeEvent(event);
}

}  // namespace paralab
