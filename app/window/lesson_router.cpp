// The learner's way through the window (see lesson_router.h): the welcome, the lessons dock
// wired to the run, sweep and benchmark, and asking before a loss.
// See tests/app/tst_window_trust.cpp and tests/app/tst_window.cpp.
#include "window/lesson_router.h"

#include <QDockWidget>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QToolBar>
#include <nlohmann/json.hpp>

#include "bench_runner.h"
#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "charts/speedup_chart.h"
#include "engine_bridge.h"
#include "panels/config_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "panels/welcome_page.h"
#include "settings.h"
#include "window/dock_layout.h"
#include "window/run_controller.h"

namespace paralab {

bool askBeforeLoss(QWidget* parent, const QString& question, const QStringList& losses,
                   const QString& yes) {
  QStringList lines = losses;
  lines.removeAll(QString());  // an empty line is no loss, and an empty bullet says nothing
  if (lines.isEmpty()) return true;
  QMessageBox box(QMessageBox::Question, QObject::tr("ParaLab"), question, QMessageBox::NoButton,
                  parent);
  box.setObjectName("confirmBox");
  box.setInformativeText("• " + lines.join("\n• "));
  QPushButton* go = box.addButton(yes, QMessageBox::AcceptRole);
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(QMessageBox::Cancel);  // Enter by habit loses nothing
  box.exec();
  return box.clickedButton() == go;
}

LessonRouter::LessonRouter(QMainWindow* window, RunController* runs, ChartHub* hub,
                           ConfigPanel* panel, SweepPanel* sweep, DockLayout* layout)
    : QObject(window), m_window(window), m_runs(runs), m_hub(hub), m_panel(panel),
      m_sweep(sweep), m_layout(layout) {
  QStringList caps = lessons::engineCapabilities();
  // A GPU is present is not the engine can train on it: no RunConfig field picks the device
  // yet, so a GPU lesson stays "coming" (the Device control says the same).
  caps.removeAll("device:cuda");
  m_dock = new LessonDock(caps, window);
  m_layout->addPanel(m_dock, Qt::LeftDockWidgetArea);
  connectDock();
  connectBench();
  // The page covers the charts wherever the docks' edges are moved.
  connect(m_layout, &DockLayout::moved, this, &LessonRouter::coverCharts);
}

// [SECTION] Welcome: the ways in, remembered.

void LessonRouter::showWelcome() {
  if (!m_welcome) {
    m_welcome = new WelcomePage(m_window);
    m_welcome->addChoice(
        "lesson", tr("Start lesson 1"),
        (m_dock->lessons().size() == 1 ? tr("One short lesson")
                                        : tr("%1 short lessons").arg(m_dock->lessons().size())) +
            tr(", each a prediction you lock in, then an experiment that checks it. Begins "
               "with one rank against several."));
    m_welcome->addChoice("free", tr("Free play"),
                         tr("The run settings and every chart, no lesson: pick a strategy and "
                            "ranks, press Start (F5) and watch."));
    m_welcome->addChoice("open", tr("Open a run"),
                         tr("A run recorded before — an export's run.jsonl, or the lines "
                            "paralab-run --json prints — back in every chart."));
    connect(m_welcome, &WelcomePage::chosen, this, &LessonRouter::startAs);
    if (QDockWidget* charts = m_hub->dockOf(m_hub->charts().first())) m_layout->watch(charts);
  }
  m_dock->raise();  // what the page points at
  m_welcome->show();
  coverCharts();
}

void LessonRouter::startAs(const QString& choice) {
  if (m_welcome) m_welcome->hide();
  if (choice == "lesson") {
    m_dock->raise();
    m_dock->openLesson(0);
  } else {
    m_window->findChild<QDockWidget*>("configDock")->raise();
    if (choice == "open") emit openRunChosen();
  }
  // Opening a run lands in free play, and that is where the next start comes back to (not to
  // a file dialog).
  if (!choice.isEmpty() && m_remember)
    Settings::setStartChoice(choice == "open" ? "free" : choice);
}

// Over the charts: the window right of the left column (whose Lessons tab the page points
// at), from under the toolbar (the charts' tabs are part of what it covers) to the status bar.
// Not the union of the charts in view: the page itself hides them, and what it covered last
// would decide what it covers next.
void LessonRouter::coverCharts() {
  if (!m_welcome || m_welcome->isHidden()) return;
  QRect area = m_window->rect();
  if (auto* bar = m_window->findChild<QToolBar*>("runToolBar"))
    area.setTop(bar->geometry().bottom() + 1);
  if (QStatusBar* status = m_window->statusBar(); status->isVisible())
    area.setBottom(status->geometry().top() - 1);
  if (m_dock->isVisible() && !m_dock->isFloating() &&
      m_window->dockWidgetArea(m_dock) == Qt::LeftDockWidgetArea)
    area.setLeft(m_dock->geometry().right() + 1);
  m_welcome->cover(area);
}

// [SECTION] Asking before something the learner would lose

bool LessonRouter::settingsAreTheLearners(const RunConfig& replacement) const {
  const auto shown = m_panel->config().toJson();
  if (shown == replacement.toJson() || shown == ConfigPanel::defaults().toJson()) return false;
  return !m_lessonConfig || shown != m_lessonConfig->toJson();
}

bool LessonRouter::mayReplaceWith(const RunConfig& lesson, bool newRun) {
  QStringList losses;
  if (newRun && m_runs->shown().active())
    losses << tr("%1 stops; its charts start over.").arg(m_runs->atRisk());
  if (settingsAreTheLearners(lesson))
    losses << tr(
        "Your settings in Run settings are replaced by the lesson's (File ▸ Save "
        "Settings… keeps them).");
  return askBeforeLoss(m_window,
                       newRun ? tr("Run the lesson's experiment?") : tr("Use the lesson's settings?"),
                       losses, newRun ? tr("Run the lesson") : tr("Use the lesson's settings"));
}

void LessonRouter::useLessonSettings(const RunConfig& c) {
  m_panel->setConfig(c);
  m_lessonConfig = m_panel->config();
}

QString LessonRouter::measuring() const {
  if (m_bench && m_bench->isRunning())
    return tr("A lesson's benchmark is measuring: training beside it would share its cores "
              "(wait for it, or Cancel it in the lesson)");
  return {};
}

// [SECTION] The lessons dock and the run

// A step's experiment goes to the settings panel (and the run or sweep it asks for), and the
// measured result comes back to its comparison.
void LessonRouter::connectDock() {
  connect(m_dock, &LessonDock::applyExperiment, this, [this](const RunConfig& c) {
    if (!mayReplaceWith(c, false)) return;
    useLessonSettings(c);
    m_window->statusBar()->showMessage(
        tr("The lesson's settings are in Run settings: press Start (F5)"), 8000);
  });
  connect(m_dock, &LessonDock::runExperiment, this, [this](const RunConfig& c) {
    if (m_sweep->isRunning())
      return m_runs->showError(
          tr("A scaling sweep is measuring: run the lesson's experiment once it is "
             "done (or Cancel it)"));
    if (!mayReplaceWith(c, true)) return;
    useLessonSettings(c);
    if (m_runs->shown().active()) m_runs->reset();
    if (m_runs->startNew(false)) m_experimentRun = m_runs->shown().number;
  });
  connect(m_dock, &LessonDock::runSweep, this,
          [this](const RunConfig& base, const QList<int>& ranks, int steps, int warmup) {
            // A sweep pauses the run rather than stopping it: only the settings are at stake.
            if (!mayReplaceWith(base, false)) return;
            useLessonSettings(base);
            QStringList list;
            for (int n : ranks) list << QString::number(n);
            m_sweep->setRanks(list.join(", "));
            m_sweep->setSteps(steps, warmup);
            m_experimentSweepBase = base;
            emit sweepAsked();
            if (!m_sweep->isRunning()) m_experimentSweepBase.reset();
          });
  connect(m_dock, &LessonDock::sweepToPredict, this, [this] {
    if (m_sweep->isRunning()) return;
    if (auto* speedup = m_hub->find<SpeedupChart>()) speedup->clear();
    m_sweep->clearResult(tr("This step asks for your prediction first: lock it in, then Run "
                            "sweep measures again."));
  });
  connect(m_sweep, &SweepPanel::sweepFinished, this, [this](const SweepResult& result) {
    if (!m_experimentSweepBase) return;
    m_dock->showSweepResult(lessons::sweepJson(result, *m_experimentSweepBase));
    m_experimentSweepBase.reset();
  });
  connect(m_runs, &RunController::runEnded, this, [this](bool ok) {
    if (!ok || m_experimentRun != m_runs->shown().number) return;
    m_experimentRun = -1;
    // Every step of the run, as paralab-run --json prints them: read back from its run file.
    QList<QJsonObject> steps;
    const QString err = m_runs->shown().history.steps().forEach(
        [&](const MetricHistory::Row&, const StepMetrics& m) { steps << lessons::stepJson(m); });
    if (!err.isEmpty()) m_runs->showError(err);
    m_dock->showRunResult(steps);
  });
}

// A step's benchmark: measured off the GUI thread with the cores to itself (a training run is
// paused first), drawn in the Benchmark chart, which comes to the front.
void LessonRouter::connectBench() {
  m_bench = new BenchRunner(this);
  connect(m_dock, &LessonDock::runBench, this, [this](const lessons::Bench& bench) {
    if (m_sweep->isRunning())
      return m_runs->showError(
          tr("A scaling sweep is measuring: run the benchmark once it is done (or "
             "Cancel it)"));
    if (m_runs->pauseForMeasuring())
      m_window->statusBar()->showMessage(tr("The training run was paused so the benchmark has "
                                            "the cores to itself; Resume (F5) to go on training."),
                                         8000);
    if (!m_bench->start(bench, m_panel->config())) return;
    m_dock->showBenchProgress(0, 1);
    m_runs->updateActions();
  });
  connect(m_dock, &LessonDock::cancelBench, m_bench, &BenchRunner::cancel);
  connect(m_bench, &BenchRunner::progress, m_dock, &LessonDock::showBenchProgress);
  connect(m_bench, &BenchRunner::finished, this,
          [this](const BenchResult& result, const QString& error) {
            m_runs->updateActions();
            if (!error.isEmpty()) {
              m_dock->showBenchFinished(tr("Not measured: %1").arg(error));
              return m_runs->showError(error);
            }
            auto* chart = m_hub->find<BenchChart>();
            chart->showResult(result);
            m_hub->dockOf(chart)->raise();
            if (!result.cancelled()) m_dock->showBenchResult(benchJson(result));
            m_dock->showBenchFinished(
                result.cancelled() ? tr("Cancelled: the chart shows what was measured before")
                                   : tr("Measured: see the Benchmark chart"));
          });
}

}  // namespace paralab
