// MainWindow, the learner's side: the welcome page and its ways in, the lessons dock wired to
// the run (a step's experiment to the settings and the run, its measurement back to the step),
// and the questions asked before a lesson or Quit would lose a run or the learner's settings.
// See tests/app/tst_window_trust.cpp (welcomeOffersAWayIn, lessonAsksBeforeReplacing,
// quitAsksWhileARunIsOpen).
#include <QDockWidget>
#include <QEvent>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QToolBar>
#include <nlohmann/json.hpp>

#include "bench_runner.h"
#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "engine_bridge.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "panels/welcome_page.h"

namespace paralab {

// [SECTION] Welcome: the ways in, remembered.

void MainWindow::showWelcome() {
  if (!m_welcome) {
    m_welcome = new WelcomePage(this);
    m_welcome->addChoice(
        "lesson", tr("Start lesson 1"),
        tr("Thirteen short lessons, each a prediction you lock in, then an experiment that "
           "checks it. Begins with one rank against several."));
    m_welcome->addChoice("free", tr("Free play"),
                         tr("The run settings and every chart, no lesson: pick a strategy and "
                            "ranks, press Start (F5) and watch."));
    m_welcome->addChoice("open", tr("Open a run"),
                         tr("A run recorded before — an export's run.jsonl, or the lines "
                            "paralab-run --json prints — back in every chart."));
    connect(m_welcome, &WelcomePage::chosen, this, &MainWindow::startAs);
    // The page covers the charts wherever the docks' edges are moved.
    if (QDockWidget* charts = m_hub->dockOf(m_hub->charts().first()))
      charts->installEventFilter(this);
  }
  m_lessonDock->raise();  // what the page points at
  m_welcome->show();
  coverCharts();
}

void MainWindow::startAs(const QString& choice) {
  if (m_welcome) m_welcome->hide();
  if (choice == "lesson") {
    m_lessonDock->raise();
    m_lessonDock->openLesson(0);
  } else {
    findChild<QDockWidget*>("configDock")->raise();
    if (choice == "open") openRun();
  }
  // Opening a run lands in free play, and that is where the next start comes back to (not to
  // a file dialog).
  if (!choice.isEmpty() && m_persist) Settings::setStartChoice(choice == "open" ? "free" : choice);
}

// Over the chart docks, which sit right of the left column: the union of those in front (a
// dock in a background tab keeps a stale geometry).
void MainWindow::coverCharts() {
  if (!m_welcome || m_welcome->isHidden()) return;
  QRect area;
  for (Chart* c : m_hub->charts())
    if (ChartHub::isInView(c)) area |= m_hub->dockOf(c)->geometry();
  if (area.isEmpty()) area = rect();
  // Up to the toolbar: the charts' tabs are part of what it covers.
  if (auto* bar = findChild<QToolBar*>("runToolBar")) area.setTop(bar->geometry().bottom() + 1);
  m_welcome->cover(area);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Resize || event->type() == QEvent::Move) {
    coverCharts();
    // The left column resized while the window kept its width: the learner dragged its edge,
    // and that is the width it keeps from now on (resizeEvent).
    if (watched == leftColumn() && width() == m_windowWidth && m_columnWidth > 0)
      m_columnWidth = leftColumn()->width();
  }
  return QMainWindow::eventFilter(watched, event);
}

// [SECTION] Asking before something the learner would lose

QString MainWindow::runAtRisk() const {
  if (!runInProgress()) return {};
  const QString where =
      m_runConfig.steps > 0
          ? tr("at step %1 of %2").arg(m_history.stepsSeen()).arg(m_runConfig.steps)
          : tr("at step %1").arg(m_history.stepsSeen());
  return m_state == RunState::Paused ? tr("The run shown (paused %1)").arg(where)
                                     : tr("The run shown (training %1)").arg(where);
}

// The settings are the learner's own unless they are the defaults or what a lesson put there.
bool MainWindow::settingsAreTheLearners(const RunConfig& replacement) const {
  const auto shown = m_configPanel->config().toJson();
  if (shown == replacement.toJson() || shown == ConfigPanel::defaults().toJson()) return false;
  return !m_lessonConfig || shown != m_lessonConfig->toJson();
}

bool MainWindow::confirm(const QString& question, const QStringList& losses, const QString& yes) {
  if (losses.isEmpty()) return true;
  QMessageBox box(QMessageBox::Question, tr("ParaLab"), question, QMessageBox::NoButton, this);
  box.setObjectName("confirmBox");
  box.setInformativeText("• " + losses.join("\n• "));
  QPushButton* go = box.addButton(yes, QMessageBox::AcceptRole);
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(QMessageBox::Cancel);  // Enter by habit loses nothing
  box.exec();
  return box.clickedButton() == go;
}

// What a lesson's settings would replace (the run shown, the learner's settings), asked first.
bool MainWindow::mayReplaceWith(const RunConfig& lesson, bool newRun) {
  QStringList losses;
  if (newRun && runInProgress()) losses << tr("%1 stops; its charts start over.").arg(runAtRisk());
  if (settingsAreTheLearners(lesson))
    losses << tr(
        "Your settings in Run settings are replaced by the lesson's (File ▸ Save "
        "Settings… keeps them).");
  return confirm(newRun ? tr("Run the lesson's experiment?") : tr("Use the lesson's settings?"),
                 losses, newRun ? tr("Run the lesson") : tr("Use the lesson's settings"));
}

void MainWindow::useLessonSettings(const RunConfig& c) {
  m_configPanel->setConfig(c);
  m_lessonConfig = m_configPanel->config();
}

// [SECTION] The lessons dock and the run

// A step's experiment goes to the settings panel (and the run or sweep it asks for), and the
// measured result comes back to its comparison.
void MainWindow::createLessonDock() {
  QStringList caps = lessons::engineCapabilities();
  // A GPU is present is not the engine can train on it: no RunConfig field picks the device
  // yet, so a GPU lesson stays "coming" (the Device control says the same).
  caps.removeAll("device:cuda");
  m_lessonDock = new LessonDock(caps, this);
  addPanel(m_lessonDock, Qt::LeftDockWidgetArea);
  connect(m_lessonDock, &LessonDock::applyExperiment, this, [this](const RunConfig& c) {
    if (!mayReplaceWith(c, false)) return;
    useLessonSettings(c);
    statusBar()->showMessage(tr("The lesson's settings are in Run settings: press Start (F5)"),
                             8000);
  });
  connect(m_lessonDock, &LessonDock::runExperiment, this, [this](const RunConfig& c) {
    if (m_sweepPanel->isRunning())
      return showError(
          tr("A scaling sweep is measuring: run the lesson's experiment once it is "
             "done (or Cancel it)"));
    if (!mayReplaceWith(c, true)) return;
    useLessonSettings(c);
    if (runInProgress()) reset();
    if (startNewRun(false)) m_experimentRunId = m_runId;
  });
  connect(m_lessonDock, &LessonDock::runSweep, this,
          [this](const RunConfig& base, const QList<int>& ranks, int steps, int warmup) {
            // A sweep pauses the run rather than stopping it: only the settings are at stake.
            if (!mayReplaceWith(base, false)) return;
            useLessonSettings(base);
            QStringList list;
            for (int n : ranks) list << QString::number(n);
            m_sweepPanel->setRanks(list.join(", "));
            m_sweepPanel->setSteps(steps, warmup);
            m_experimentSweepBase = base;
            runSweep();
            if (!m_sweepPanel->isRunning()) m_experimentSweepBase.reset();
          });
  // A step's benchmark: measured off the GUI thread with the cores to itself (a training run is
  // paused first), drawn in the Benchmark chart, which comes to the front.
  m_benchRunner = new BenchRunner(this);
  connect(m_lessonDock, &LessonDock::runBench, this, [this](const lessons::Bench& bench) {
    if (m_sweepPanel->isRunning())
      return showError(tr("A scaling sweep is measuring: run the benchmark once it is done (or "
                          "Cancel it)"));
    if (m_showingRun && (m_state == RunState::Running || m_state == RunState::Loading)) {
      pause();
      statusBar()->showMessage(tr("The training run was paused so the benchmark has the cores "
                                  "to itself; Resume (F5) to go on training."),
                               8000);
    }
    if (!m_benchRunner->start(bench, m_configPanel->config())) return;
    m_lessonDock->showBenchProgress(0, 1);
    updateActions();
  });
  connect(m_lessonDock, &LessonDock::cancelBench, m_benchRunner, &BenchRunner::cancel);
  connect(m_benchRunner, &BenchRunner::progress, m_lessonDock, &LessonDock::showBenchProgress);
  connect(m_benchRunner, &BenchRunner::finished, this,
          [this](const BenchResult& result, const QString& error) {
            updateActions();
            if (!error.isEmpty()) {
              m_lessonDock->showBenchFinished(tr("Not measured: %1").arg(error));
              return showError(error);
            }
            auto* chart = m_hub->find<BenchChart>();
            chart->showResult(result);
            m_hub->dockOf(chart)->raise();
            if (!result.cancelled()) m_lessonDock->showBenchResult(benchJson(result));
            m_lessonDock->showBenchFinished(
                result.cancelled() ? tr("Cancelled: the chart shows what was measured before")
                                   : tr("Measured: see the Benchmark chart"));
          });
  connect(this, &MainWindow::runEnded, this, [this](bool ok) {
    if (!ok || m_experimentRunId != m_runId) return;
    m_experimentRunId = -1;
    // Every step of the run, as paralab-run --json prints them: read back from its run file.
    QList<QJsonObject> steps;
    const QString err = m_history.steps().forEach(
        [&](const MetricHistory::Row&, const StepMetrics& m) { steps << lessons::stepJson(m); });
    if (!err.isEmpty()) showError(err);
    m_lessonDock->showRunResult(steps);
  });
}

}  // namespace paralab
