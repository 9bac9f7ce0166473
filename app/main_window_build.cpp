// MainWindow's construction: its actions, menus, docks (the settings, lessons, sweep and export
// panels on the left, the charts beside them). The rest of the window is in main_window.cpp
// and its parts in window/. See tests/app/tst_app.cpp and tests/app/tst_window.cpp.
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDockWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QStatusBar>
#include <QToolBar>

#include "capabilities.h"
#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "charts/flight_recorder_chart.h"
#include "charts/goodput_chart.h"
#include "charts/holdings_map.h"
#include "charts/latency_chart.h"
#include "charts/link_heatmap.h"
#include "charts/loss_chart.h"
#include "charts/loss_scale_chart.h"
#include "charts/memory_chart.h"
#include "charts/overlap_chart.h"
#include "charts/speedup_chart.h"
#include "charts/throughput_chart.h"
#include "charts/timeline_chart.h"
#include "charts/traffic_chart.h"
#include "export/lab_report.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "panels/lesson_dock.h"
#include "panels/projection_panel.h"
#include "panels/schedule_editor.h"
#include "panels/sweep_panel.h"
#include "theme.h"
#include "window/dock_layout.h"
#include "window/file_actions.h"
#include "window/lesson_router.h"
#include "window/run_controller.h"
#include "window/run_text.h"

namespace paralab {

// [SECTION] Construction

void MainWindow::createActions() {
  m_sweepAction = makeToolAction(this, "sweep", "office-chart-line", tr("Run Scaling S&weep"),
                                 QKeySequence(Qt::CTRL | Qt::Key_R),
                                 tr("Measure these settings at 1, 2, 4, 8 ranks in the background "
                                    "and draw the speedup chart"));
  connect(m_sweepAction, &QAction::triggered, this, &MainWindow::runSweep);

  m_exportChart = new QAction(tr("&Export Chart…"), this);
  m_exportChart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  m_exportChart->setStatusTip(
      tr("Save the chart last clicked as PNG (size and dpi), PDF, SVG or its data as CSV"));
  connect(m_exportChart, &QAction::triggered, this, &MainWindow::exportCurrentChart);
  m_exportAll = new QAction(tr("Export &All to Folder…"), this);
  m_exportAll->setObjectName("exportAllAction");
  m_exportAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  m_exportAll->setStatusTip(
      tr("Save every chart (PNG, PDF, SVG, CSV), the settings, the "
         "timeline trace and a summary of the run into one folder"));
  connect(m_exportAll, &QAction::triggered, this, &MainWindow::exportAllCharts);

  auto* toolbar = addToolBar(tr("Run"));
  toolbar->setObjectName("runToolBar");
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar->setMovable(false);
  toolbar->addActions({startAction(), pauseAction(), stepAction(), resetAction()});
  toolbar->addSeparator();
  toolbar->addAction(m_sweepAction);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open Settings…"), QKeySequence::Open, m_files, &FileActions::openConfig)
      ->setStatusTip(
          tr("Load run settings from a JSON file (the same file as paralab-run --config)"));
  file->addAction(tr("&Save Settings…"), QKeySequence::Save, m_files, &FileActions::saveConfig)
      ->setStatusTip(
          tr("Save the run settings as JSON for paralab-run --config or paralab --config"));
  file->addAction(tr("Open &Run…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), m_files,
                  &FileActions::openRun)
      ->setStatusTip(tr("Show a recorded run in the charts: an export's run.jsonl, or the "
                        "lines paralab-run --json prints"));
  file->addSeparator();
  file->addAction(m_exportChart);
  file->addAction(m_exportAll);
  QAction* labReport = file->addAction(tr("Export Lab &Report…"), this, [this] {
    // The report's runs measure: a training run is paused so that they have the cores.
    if (m_runs->pauseForMeasuring())
      statusBar()->showMessage(tr("The training run was paused so the lab report's runs "
                                  "have the cores; Resume (F5) to go on training."),
                               8000);
    exportLabReportDialog(this, lessonDock()->lessons(), lessonDock()->currentLesson());
  });
  labReport->setObjectName("exportLabReportAction");
  labReport->setStatusTip(
      tr("Write a lesson's lab report to hand in, PDF and Markdown: each step's prediction, "
         "measurement, comparison and chart, with the date and this machine"));
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addActions({startAction(), pauseAction(), stepAction(), resetAction()});
  run->addSeparator();
  run->addAction(m_sweepAction);
  QAction* project = run->addAction(tr("&Project to a Cluster…"), this, [this] {
    ProjectionPanel* panel = openProjectionPanel(this, [this] { return m_configPanel->config(); });
    // The run shown once it has steps; before that, the settings it would start with.
    panel->setMeasuredRun([this] {
      const ShownRun& run = m_runs->shown();
      const bool measured = run.history.stepsSeen() > 0;
      return ProjectionPanel::MeasuredRun{measured ? run.config : m_configPanel->config(),
                                          run.history.stepsSeen(), run.history.recentStepMs(),
                                          run.state == RunState::Running};
    });
  });
  project->setObjectName("projectAction");
  project->setStatusTip(tr("These settings, or a published model, projected to a cluster of real "
                           "GPUs: memory, step time, MFU (projected, not measured)"));

  menuBar()->addMenu(m_viewMenu);
  QMenu* theme = m_viewMenu->addMenu(tr("&Theme"));
  m_themeGroup = new QActionGroup(this);
  const std::pair<QString, Theme> themes[] = {
      {tr("&System"), Theme::System}, {tr("&Light"), Theme::Light}, {tr("&Dark"), Theme::Dark}};
  for (const auto& [text, t] : themes) {
    QAction* a = theme->addAction(text);
    a->setCheckable(true);
    a->setData(int(t));
    a->setChecked(t == Theme::System);
    a->setStatusTip(t == Theme::System ? tr("Follow the desktop's light or dark palette")
                                       : tr("Use this palette whatever the desktop's"));
    m_themeGroup->addAction(a);
    connect(a, &QAction::triggered, this, [this, t = t] { setTheme(t); });
  }
  m_layout->createMovableAction();
  m_viewMenu
      ->addAction(tr("Clear &Loss Overlays"), this,
                  [this] {
                    if (auto* loss = m_hub->find<LossChart>()) loss->clearOverlays();
                  })
      ->setStatusTip(tr("Remove the earlier runs drawn faded under the loss curve"));
  m_viewMenu->addSeparator();

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Welcome"), this, &MainWindow::showWelcome)
      ->setStatusTip(tr("The first page again: start lesson 1, or play freely"));
  help->addAction(tr("&About ParaLab"), this, [this] {
    QMessageBox::about(this, tr("About ParaLab"),
                       tr("<b>ParaLab</b> %1<br>A lab for learning how neural-network training "
                          "is made parallel. Every number shown is measured from the real run; "
                          "formulas are drawn beside them as references, and emulated links are "
                          "marked as such.")
                               .arg(QApplication::applicationVersion()) +
                           "<br><br>" + QString::fromStdString(paralab::simdLevelSummary()));
  });
}

void MainWindow::createCharts() {
  // Top left: how training goes; top right: how fast; bottom: what each rank does and holds.
  auto* loss = m_hub->add(new LossChart, 0);
  m_hub->add(new ThroughputChart, 1);
  m_hub->add(new LatencyChart, 1);
  m_hub->add(new BenchChart, 1);
  m_hub->add(new SpeedupChart, 0);
  m_hub->add(new GoodputChart, 0);
  m_hub->add(new LossScaleChart, 0);  // --precision fp16's scale and skipped steps
  m_hub->add(new TimelineChart, 2);
  m_hub->add(new HoldingsMap, 2);
  m_hub->add(new OverlapChart, 2);
  m_hub->add(new FlightRecorderChart, 2);
  m_hub->add(new MemoryChart, 3);
  m_hub->add(new TrafficChart, 3);
  m_hub->add(new LinkHeatmap, 3);
  m_hub->arrange();
  setPanelsMovable(false);
  m_currentChart = loss;
  for (Chart* c : m_hub->charts()) {
    // The tab says the chart's short name (ChartHub); View lists it by its full title.
    QDockWidget* dock = m_hub->dockOf(c);
    dock->toggleViewAction()->setText(c->title());
    connect(c, &Chart::activated, this, [this](Chart* chart) {
      m_currentChart = chart;
      m_exportChart->setText(tr("&Export “%1” Chart…").arg(chart->title()));
    });
    connect(c, &Chart::exportRequested, this, [this](Chart* chart) {
      m_currentChart = chart;
      exportCurrentChart();
    });
  }
  m_exportChart->setText(tr("&Export “%1” Chart…").arg(loss->title()));
  // The learner's own schedule (Schedule: "Custom (grid)"): its grid beside the measured steps.
  auto* editor = ScheduleEditor::attach(m_configPanel);
  if (auto* timeline = m_hub->find<TimelineChart>())
    connect(editor, &ScheduleEditor::planChanged, timeline, &TimelineChart::setPlan);
}

void MainWindow::createDocks() {
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_configPanel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* dock = new QDockWidget(tr("Run settings"));
  dock->setObjectName("configDock");
  dock->setWidget(scroll);
  dock->setMinimumWidth(m_configPanel->sizeHint().width() + 24);
  m_configPanel->setLiveHint(
      tr("Settings changed while a run trains are applied to it %1 ms after the last change "
         "(so typing 16 does not first re-shard to 1): the parameters and optimizer state are "
         "re-sharded and training continues from the same step, the loss curve unbroken. "
         "Model, data, optimizer and seed need a new run (Reset, then Start).")
          .arg(kApplyDelayMs));

  m_sweepDock = new QDockWidget(tr("Scaling sweep"));
  m_sweepDock->setObjectName("sweepDock");
  m_sweepDock->setWidget(m_sweepPanel);
  connect(m_sweepPanel, &SweepPanel::sweepFinished, this, &MainWindow::showSweep);
  // A goodput sweep (over the checkpoint interval) goes to the goodput chart, brought forward.
  connect(m_sweepPanel, &SweepPanel::goodputSweepFinished, this,
          [this](const GoodputSweepResult& result) {
            auto* chart = m_hub->find<GoodputChart>();
            if (!chart) return;
            chart->showSweep(result, runSubtitle(m_sweepPanel->sweptConfig()));
            chart->setLabels(runLabels(m_sweepPanel->sweptConfig(), false));
            if (QDockWidget* d = m_hub->dockOf(chart)) d->raise();
          });
  // The left column's tabs: Lessons first (where a learner begins), then the settings and the
  // sweep; the lessons in front until the learner chooses otherwise (LessonRouter::startAs).
  m_lessons = new LessonRouter(this, m_runs, m_hub, m_configPanel, m_sweepPanel, m_layout);
  connect(m_lessons, &LessonRouter::openRunChosen, m_files, &FileActions::openRun);
  connect(m_lessons, &LessonRouter::sweepAsked, this, &MainWindow::runSweep);
  addPanel(dock, Qt::LeftDockWidgetArea);
  addPanel(m_sweepDock, Qt::LeftDockWidgetArea);
  m_layout->setLeftColumn({m_lessons->dock(), dock, m_sweepDock});
  m_lessons->dock()->raise();
  // A sweep times steps: a training run beside it would share the cores and every point would
  // measure the contention. The run is paused first, and nothing starts while a sweep measures.
  m_sweepPanel->setBeforeRun([this] {
    if (!m_runs->pauseForMeasuring()) return QString();
    return tr("The training run was paused so the sweep has the cores to itself; Resume (F5) "
              "to go on training.");
  });
  connect(m_sweepPanel, &SweepPanel::runningChanged, this, [this](bool running) {
    m_sweepAction->setEnabled(!running);
    m_runs->updateActions();
  });
}

}  // namespace paralab
