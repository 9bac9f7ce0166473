// MainWindow's construction: its actions, menus, docks (the settings, lessons, sweep and export
// panels on the left, the charts beside them) and status bar. The rest of the window is in
// main_window.cpp. See tests/app/tst_app.cpp and tst_window.cpp.
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QStatusBar>
#include <QToolBar>

#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "charts/holdings_map.h"
#include "charts/latency_chart.h"
#include "charts/link_heatmap.h"
#include "charts/loss_chart.h"
#include "charts/memory_chart.h"
#include "charts/speedup_chart.h"
#include "charts/throughput_chart.h"
#include "charts/timeline_chart.h"
#include "charts/traffic_chart.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "panels/lesson_dock.h"
#include "panels/projection_panel.h"
#include "panels/sweep_panel.h"
#include "theme.h"

namespace paralab {

// [SECTION] Construction

void MainWindow::createActions() {
  // The desktop's icon theme when it has one; else ours, coloured to read on light and dark.
  auto make = [this](const char* name, const char* themeName, const QString& text,
                     const QKeySequence& key, const QString& tip, void (MainWindow::*slot)()) {
    const QIcon icon = QIcon::fromTheme(themeName, QIcon(QString(":/icons/%1.svg").arg(name)));
    auto* a = new QAction(icon, text, this);
    a->setShortcut(key);
    a->setToolTip(QString("%1 (%2)").arg(tip, key.toString(QKeySequence::NativeText)));
    a->setStatusTip(tip);
    a->setObjectName(QString(name) + "Action");
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  m_start = make("start", "media-playback-start", tr("&Start"), Qt::Key_F5,
                 tr("Start a new run with the settings on the left, or resume a paused one"),
                 &MainWindow::start);
  m_pause = make("pause", "media-playback-pause", tr("&Pause"), Qt::Key_F6,
                 tr("Pause after the step in flight"), &MainWindow::pause);
  m_step = make("step", "media-skip-forward", tr("S&tep"), Qt::Key_F10,
                tr("Run exactly one step, then pause"), &MainWindow::step);
  m_reset = make("reset", "view-refresh", tr("&Reset"), QKeySequence(Qt::SHIFT | Qt::Key_F5),
                 tr("Stop the run and clear the charts; the next Start uses the current settings"),
                 &MainWindow::reset);
  m_sweepAction = make("sweep", "office-chart-line", tr("Run Scaling S&weep"),
                       QKeySequence(Qt::CTRL | Qt::Key_R),
                       tr("Measure these settings at 1, 2, 4, 8 ranks in the background and draw "
                          "the speedup chart"),
                       &MainWindow::runSweep);

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
  toolbar->addActions({m_start, m_pause, m_step, m_reset});
  toolbar->addSeparator();
  toolbar->addAction(m_sweepAction);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open Settings…"), QKeySequence::Open, this, &MainWindow::openConfig)
      ->setStatusTip(
          tr("Load run settings from a JSON file (the same file as paralab-run --config)"));
  file->addAction(tr("&Save Settings…"), QKeySequence::Save, this, &MainWindow::saveConfig)
      ->setStatusTip(
          tr("Save the run settings as JSON for paralab-run --config or paralab --config"));
  file->addAction(tr("Open &Run…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this,
                  &MainWindow::openRun)
      ->setStatusTip(tr("Show a recorded run in the charts: an export's run.jsonl, or the "
                        "lines paralab-run --json prints"));
  file->addSeparator();
  file->addAction(m_exportChart);
  file->addAction(m_exportAll);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addActions({m_start, m_pause, m_step, m_reset});
  run->addSeparator();
  run->addAction(m_sweepAction);
  QAction* project = run->addAction(tr("&Project to a Cluster…"), this, [this] {
    ProjectionPanel* panel = openProjectionPanel(this, [this] { return m_configPanel->config(); });
    // The run shown once it has steps; before that, the settings it would start with.
    panel->setMeasuredRun([this] {
      const bool measured = m_history.stepsSeen() > 0;
      return ProjectionPanel::MeasuredRun{measured ? m_runConfig : m_configPanel->config(),
                                          m_history.stepsSeen(), m_history.recentStepMs(),
                                          m_state == RunState::Running};
    });
  });
  project->setObjectName("projectAction");
  project->setStatusTip(tr("These settings, or a published model, projected to a cluster of real "
                           "GPUs: memory, step time, MFU (projected, not measured)"));

  m_viewMenu = menuBar()->addMenu(tr("&View"));
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
  m_movablePanels = m_viewMenu->addAction(tr("&Movable Panels"));
  m_movablePanels->setCheckable(true);
  m_movablePanels->setStatusTip(
      tr("Show the panels' title bars, to drag, float or close them; "
         "tabs can be dragged either way"));
  connect(m_movablePanels, &QAction::toggled, this, &MainWindow::setPanelsMovable);
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
                           .arg(QApplication::applicationVersion()));
  });
}

void MainWindow::createCharts() {
  m_hub = new ChartHub(this, m_viewMenu);
  // Top left: how training goes; top right: how fast; bottom: what each rank does and holds.
  auto* loss = m_hub->add(new LossChart, 0);
  m_hub->add(new ThroughputChart, 1);
  m_hub->add(new LatencyChart, 1);
  m_hub->add(new BenchChart, 1);
  m_hub->add(new SpeedupChart, 0);
  m_hub->add(new TimelineChart, 2);
  m_hub->add(new HoldingsMap, 2);
  m_hub->add(new MemoryChart, 3);
  m_hub->add(new TrafficChart, 3);
  m_hub->add(new LinkHeatmap, 3);
  m_hub->arrange();
  setPanelsMovable(false);
  m_currentChart = loss;
  for (Chart* c : m_hub->charts()) {
    // The tab says the chart's short name; View lists it by its full title.
    QDockWidget* dock = m_hub->dockOf(c);
    dock->setWindowTitle(c->tabTitle());
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
}

void MainWindow::createDocks() {
  m_configPanel = new ConfigPanel;
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_configPanel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* dock = new QDockWidget(tr("Run settings"));
  m_configDock = dock;
  dock->setObjectName("configDock");
  dock->setWidget(scroll);
  dock->setMinimumWidth(m_configPanel->sizeHint().width() + 24);
  m_configPanel->setLiveHint(
      tr("Settings changed while a run trains are applied to it %1 ms after the last change "
         "(so typing 16 does not first re-shard to 1): the parameters and optimizer state are "
         "re-sharded and training continues from the same step, the loss curve unbroken. "
         "Model, data, optimizer and seed need a new run (Reset, then Start).")
          .arg(kApplyDelayMs));

  m_sweepPanel = new SweepPanel([this] { return m_configPanel->config(); });
  m_sweepDock = new QDockWidget(tr("Scaling sweep"));
  m_sweepDock->setObjectName("sweepDock");
  m_sweepDock->setWidget(m_sweepPanel);
  connect(m_sweepPanel, &SweepPanel::sweepFinished, this, &MainWindow::showSweep);
  // The left column's tabs: Lessons first (where a learner begins), then the settings and the
  // sweep; the lessons in front until the learner chooses otherwise (startAs).
  createLessonDock();
  addPanel(dock, Qt::LeftDockWidgetArea);
  addPanel(m_sweepDock, Qt::LeftDockWidgetArea);
  tabifyDockWidget(m_lessonDock, dock);
  tabifyDockWidget(dock, m_sweepDock);
  m_lessonDock->raise();
  for (QDockWidget* d : {static_cast<QDockWidget*>(m_lessonDock), dock, m_sweepDock})
    d->installEventFilter(this);  // the learner dragging the column's edge (eventFilter)
  // A sweep times steps: a training run beside it would share the cores and every point would
  // measure the contention. The run is paused first, and nothing starts while a sweep measures.
  m_sweepPanel->setBeforeRun([this] {
    if (!m_showingRun || !(m_state == RunState::Running || m_state == RunState::Loading))
      return QString();
    pause();
    return tr("The training run was paused so the sweep has the cores to itself; Resume (F5) "
              "to go on training.");
  });
  connect(m_sweepPanel, &SweepPanel::runningChanged, this, [this](bool running) {
    m_sweepAction->setEnabled(!running);
    updateActions();
  });
}

void MainWindow::addPanel(QDockWidget* dock, Qt::DockWidgetArea area) {
  addDockWidget(area, dock);
  m_viewMenu->addAction(dock->toggleViewAction());
  if (m_movablePanels && !m_movablePanels->isChecked() && !dock->titleBarWidget())
    dock->setTitleBarWidget(new QWidget(dock));
}

// A dock's title bar repeats its tab and its chart's title; it is shown only while the
// learner wants to rearrange the panels.
void MainWindow::setPanelsMovable(bool movable) {
  for (QDockWidget* dock : findChildren<QDockWidget*>()) {
    QWidget* old = dock->titleBarWidget();
    dock->setTitleBarWidget(movable || dock->isFloating() ? nullptr : new QWidget(dock));
    delete old;
  }
  if (m_movablePanels->isChecked() != movable) m_movablePanels->setChecked(movable);
}

void MainWindow::createStatusBar() {
  auto label = [this](const char* name, const QString& tip) {
    auto* l = new QLabel;
    l->setObjectName(name);
    l->setToolTip(tip);
    l->setContentsMargins(8, 0, 8, 0);
    statusBar()->addPermanentWidget(l);
    return l;
  };
  m_stateLabel = label("stateLabel", tr("State of the run"));
  m_loadBar = new QProgressBar;
  m_loadBar->setObjectName("loadProgress");
  m_loadBar->setMaximumWidth(160);
  m_loadBar->setTextVisible(false);
  m_loadBar->hide();
  statusBar()->addPermanentWidget(m_loadBar);
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

}  // namespace paralab
