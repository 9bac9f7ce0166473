// MainWindow: actions, docks, charts and the snapshot poll (see main_window.h).
// See tests/app/tst_app.cpp, or run `paralab` (make run).
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QToolBar>
#include <limits>
#include <nlohmann/json.hpp>

#include "chart_export.h"
#include "config_panel.h"
#include "loss_chart.h"
#include "throughput_chart.h"

// Resources of a static library are registered by hand (outside any namespace).
static void initParalabResources() { Q_INIT_RESOURCE(paralab); }

namespace paralab {

namespace {

// ≤ 30 Hz: smooth to the eye, and the GUI thread stays mostly idle for the training threads.
constexpr int kPollMs = 34;  // 29.4 Hz

// The chart subtitle: what was run, and (DESIGN.md §5) whether any of it was emulated.
QString describe(const RunConfig& c) {
  QString text = QObject::tr("measured · MLP H=%1, L=%2 · %3 · batch %4 · %5, lr %6 · seed %7")
                     .arg(c.hidden)
                     .arg(c.layers)
                     .arg(QString::fromStdString(c.dataset))
                     .arg(c.globalBatch())
                     .arg(QString::fromStdString(c.optimizer))
                     .arg(c.lr)
                     .arg(c.seed);
  if (c.ranks > 1)
    text += QObject::tr(" · %1 ranks, %2").arg(c.ranks).arg(QString::fromStdString(c.strategy));
  if (c.link != "none")
    text += QObject::tr(" · link %1 (emulated)").arg(QString::fromStdString(c.link));
  return text;
}

bool isActive(RunState s) {
  return s == RunState::Loading || s == RunState::Running || s == RunState::Paused;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initParalabResources();
  setObjectName("mainWindow");
  setWindowTitle(tr("ParaLab"));
  setWindowIcon(QIcon(":/icons/paralab.svg"));
  setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks);

  auto* loss = new LossChart;
  auto* throughput = new ThroughputChart;
  m_charts = {loss, throughput};
  m_currentChart = loss;
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->setObjectName("chartSplitter");
  splitter->setChildrenCollapsible(false);
  for (Chart* c : m_charts) {
    splitter->addWidget(c);
    connect(c, &Chart::activated, this, [this](Chart* chart) {
      m_currentChart = chart;
      m_exportChart->setText(tr("&Export “%1” Chart…").arg(chart->title()));
    });
    connect(c, &Chart::exportRequested, this, &MainWindow::exportChartDialog);
  }
  setCentralWidget(splitter);

  createActions();
  createMenus();
  createDocks();
  createStatusBar();

  m_pollTimer.setObjectName("pollTimer");
  m_pollTimer.setInterval(kPollMs);
  connect(&m_pollTimer, &QTimer::timeout, this, &MainWindow::poll);
  connect(m_configPanel, &ConfigPanel::configChanged, this, &MainWindow::updateConfigNote);
  updateActions();
  updateStatus();
  resize(1280, 820);
}

MainWindow::~MainWindow() = default;  // ~Session stops the run and joins its thread

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
  m_start->setObjectName("startAction");
  m_pause->setObjectName("pauseAction");
  m_step->setObjectName("stepAction");
  m_reset->setObjectName("resetAction");

  m_exportChart = new QAction(tr("&Export “%1” Chart…").arg(m_currentChart->title()), this);
  m_exportChart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  m_exportChart->setStatusTip(
      tr("Save the chart last clicked as PNG, PDF, SVG or its data as CSV"));
  connect(m_exportChart, &QAction::triggered, this, &MainWindow::exportCurrentChart);
  m_exportAll = new QAction(tr("Export &All Charts to Folder…"), this);
  m_exportAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  m_exportAll->setStatusTip(tr("Save every chart as PNG, PDF, SVG and CSV into one folder"));
  connect(m_exportAll, &QAction::triggered, this, &MainWindow::exportAllCharts);

  auto* toolbar = addToolBar(tr("Run"));
  toolbar->setObjectName("runToolBar");
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar->setMovable(false);
  toolbar->addActions({m_start, m_pause, m_step, m_reset});
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open Settings…"), QKeySequence::Open, this, &MainWindow::openConfig)
      ->setStatusTip(
          tr("Load run settings from a JSON file (the same file as paralab-run --config)"));
  file->addAction(tr("&Save Settings…"), QKeySequence::Save, this, &MainWindow::saveConfig)
      ->setStatusTip(
          tr("Save the run settings as JSON for paralab-run --config or paralab --config"));
  file->addSeparator();
  file->addAction(m_exportChart);
  file->addAction(m_exportAll);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addActions({m_start, m_pause, m_step, m_reset});

  m_viewMenu = menuBar()->addMenu(tr("&View"));
  m_viewMenu->addAction(findChild<QToolBar*>("runToolBar")->toggleViewAction());
  m_viewMenu->addSeparator();

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About ParaLab"), this, [this] {
    QMessageBox::about(this, tr("About ParaLab"),
                       tr("<b>ParaLab</b> %1<br>A lab for learning how neural-network training "
                          "is made parallel. Every number shown is measured from the real run.")
                           .arg(QApplication::applicationVersion()));
  });
}

void MainWindow::createDocks() {
  m_configPanel = new ConfigPanel;
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_configPanel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* dock = new QDockWidget(tr("Run settings"));
  dock->setObjectName("configDock");
  dock->setWidget(scroll);
  dock->setMinimumWidth(m_configPanel->sizeHint().width() + 24);
  addPanel(dock, Qt::LeftDockWidgetArea);
}

void MainWindow::addPanel(QDockWidget* dock, Qt::DockWidgetArea area) {
  addDockWidget(area, dock);
  m_viewMenu->addAction(dock->toggleViewAction());
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

// [SECTION] Run commands: each returns at once; poll() shows what they did.

void MainWindow::start() {
  if (m_showingRun && m_state == RunState::Paused) {
    m_session.resume();
    poll();
    return;
  }
  if (m_showingRun && isActive(m_state)) return;
  startNewRun(false);
}

void MainWindow::pause() {
  if (!m_showingRun) return;
  m_session.pause();
  poll();
}

void MainWindow::step() {
  if (m_showingRun && isActive(m_state)) {
    m_session.stepOnce();
    poll();
    return;
  }
  startNewRun(true);
}

void MainWindow::reset() {
  m_session.stop();
  m_pollTimer.stop();
  m_showingRun = false;
  m_state = RunState::Idle;
  m_runError.clear();
  m_history.clear();
  for (Chart* c : m_charts) {
    c->setSubtitle(QString());
    c->showHistory(m_history);
  }
  updateActions();
  updateStatus();
  updateConfigNote();
}

bool MainWindow::startNewRun(bool paused) {
  const RunConfig config = m_configPanel->config();
  const std::string err = m_session.start(config);
  if (!err.empty()) {
    showError(QString::fromStdString(err));
    emit runEnded(false, QString::fromStdString(err));
    return false;
  }
  if (paused) m_session.stepOnce();  // loads, does one step, then waits
  // Only the run id: asking from past the end copies no steps.
  m_runId = m_session.snapshot(std::numeric_limits<int64_t>::max()).runId;
  m_seen = 0;
  m_showingRun = true;
  m_state = RunState::Loading;
  m_runConfig = config;
  m_runError.clear();
  m_history.clear();
  for (Chart* c : m_charts) {
    c->setSubtitle(describe(config));
    c->showHistory(m_history);
  }
  m_pollTimer.start();
  poll();
  return true;
}

// [SECTION] Snapshot poll: copies only the steps not seen yet.

void MainWindow::poll() {
  if (!m_showingRun) return;
  Snapshot s = m_session.snapshot(m_seen);
  if (s.runId != m_runId) {  // someone started another run: show that one from its start
    m_runId = s.runId;
    m_history.clear();
    s = m_session.snapshot(0);
  }
  for (const StepMetrics& m : s.steps) m_history.append(m);
  m_seen = s.stepsDone;
  if (!s.steps.empty())
    for (Chart* c : m_charts) c->showHistory(m_history);

  const RunState before = m_state;
  m_state = s.state;
  m_runConfig = s.config;
  updateStatus();
  if (m_state == before) return;
  updateActions();
  updateConfigNote();
  if (m_state == RunState::Finished || m_state == RunState::Failed) {
    m_pollTimer.stop();
    m_runError = QString::fromStdString(s.error);
    if (m_state == RunState::Failed) showError(tr("The run failed: %1").arg(m_runError));
    emit runEnded(m_state == RunState::Finished, m_runError);
  }
}

void MainWindow::updateActions() {
  const bool active = m_showingRun && isActive(m_state);
  const bool paused = m_showingRun && m_state == RunState::Paused;
  m_start->setEnabled(!active || paused);
  m_start->setText(paused ? tr("Re&sume") : tr("&Start"));
  m_pause->setEnabled(active && !paused);
  m_step->setEnabled(true);
  m_reset->setEnabled(m_showingRun);
}

void MainWindow::updateStatus() {
  const RunState shown = m_showingRun ? m_state : RunState::Idle;
  m_stateLabel->setText(tr("State: %1").arg(runStateName(shown)));
  m_stateLabel->setStyleSheet(shown == RunState::Failed ? "color: #c62828;" : QString());
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
  const bool differs =
      m_showingRun && isActive(m_state) && m_configPanel->config().toJson() != m_runConfig.toJson();
  m_configPanel->setNote(differs ? tr("These settings differ from the run in progress. They apply "
                                      "to the next run: Reset, then Start.")
                                 : QString());
}

void MainWindow::showError(const QString& message) { statusBar()->showMessage(message, 15000); }

// [SECTION] Files: export, settings

void MainWindow::exportCurrentChart() { exportChartDialog(m_currentChart); }

void MainWindow::exportChartDialog(Chart* chart) {
  static const QString pngFilter = tr("PNG image (*.png)"), pdfFilter = tr("PDF document (*.pdf)"),
                       svgFilter = tr("SVG vector image (*.svg)"),
                       csvFilter = tr("CSV data (*.csv)");
  QSettings settings;
  const QString dir =
      settings
          .value("export/dir", QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
          .toString();
  QString filter = pngFilter;
  QString path = QFileDialog::getSaveFileName(
      this, tr("Export “%1” Chart").arg(chart->title()), dir + '/' + chart->stem() + ".png",
      QStringList{pngFilter, pdfFilter, svgFilter, csvFilter}.join(";;"), &filter);
  if (path.isEmpty()) return;
  auto format = exportFormatFromSuffix(QFileInfo(path).suffix());
  if (!format) {  // no or unknown suffix: the filter chosen says which
    format = filter == pdfFilter   ? ExportFormat::Pdf
             : filter == svgFilter ? ExportFormat::Svg
             : filter == csvFilter ? ExportFormat::Csv
                                   : ExportFormat::Png;
    path += '.' + exportSuffix(*format);
  }
  settings.setValue("export/dir", QFileInfo(path).absolutePath());
  const QString err = exportChart(*chart, path, *format);
  statusBar()->showMessage(err.isEmpty() ? tr("Wrote %1").arg(path) : err, 10000);
}

void MainWindow::exportAllCharts() {
  QSettings settings;
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Export All Charts to Folder"),
      settings
          .value("export/dir", QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
          .toString());
  if (dir.isEmpty()) return;
  settings.setValue("export/dir", dir);
  QStringList written;
  const QString err = paralab::exportAllCharts(m_charts, dir, &written);
  statusBar()->showMessage(
      err.isEmpty() ? tr("Wrote %1 files to %2").arg(written.size()).arg(dir) : err, 10000);
}

void MainWindow::openConfig() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Run Settings"), QString(),
                                                    tr("JSON settings (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  RunConfig c = m_configPanel->config();
  try {
    applyJsonFile(c, path.toStdString());
  } catch (const ConfigError& e) {
    showError(QString::fromStdString(e.what()));
    return;
  }
  m_configPanel->setConfig(c);
  statusBar()->showMessage(tr("Loaded %1").arg(path), 5000);
}

void MainWindow::saveConfig() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save Run Settings"), "paralab-run.json", tr("JSON settings (*.json)"));
  if (path.isEmpty()) return;
  QSaveFile file(path);
  const std::string text = m_configPanel->config().toJson().dump(2) + "\n";
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
      !file.commit()) {
    showError(tr("cannot write '%1': %2").arg(path, file.errorString()));
    return;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

// [SECTION] Window state

void MainWindow::restoreSettings() {
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  m_persistWindow = true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_persistWindow) {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
  }
  QMainWindow::closeEvent(event);
}

}  // namespace paralab
