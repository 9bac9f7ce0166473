// MainWindow: the parts wired (see main_window.h), the sweep, the theme, and the window's own
// events; its actions, menus, docks and charts are made in main_window_build.cpp.
// See tests/app/tst_app.cpp, tests/app/tst_window.cpp, or run `paralab`.
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QCloseEvent>
#include <QDockWidget>
#include <QMenu>
#include <QResizeEvent>
#include <QWindow>

#include "bench_runner.h"
#include "charts/chart_hub.h"
#include "charts/speedup_chart.h"
#include "panels/config_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "theme.h"
#include "window/dock_layout.h"
#include "window/file_actions.h"
#include "window/lesson_router.h"
#include "window/run_text.h"

// Resources of a static library are registered by hand (outside any namespace).
static void initParalabResources() { Q_INIT_RESOURCE(paralab); }

namespace paralab {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initParalabResources();
  setObjectName("mainWindow");
  setWindowTitle(tr("ParaLab"));
  setWindowIcon(QIcon(":/icons/paralab.svg"));
  setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks | GroupedDragging);
  setTabPosition(Qt::AllDockWidgetAreas, QTabWidget::North);  // tabs read like a notebook's
  // The charts are the window: no central widget, so their docks share all the room.
  setCentralWidget(nullptr);

  // The parts first (each is given what it works on), then the menus and docks that show them.
  m_viewMenu = new QMenu(tr("&View"), this);
  m_hub = new ChartHub(this, m_viewMenu);
  m_configPanel = new ConfigPanel;
  m_sweepPanel = new SweepPanel([this] { return m_configPanel->config(); });
  m_layout = new DockLayout(this, m_viewMenu);
  m_runs = new RunController(this, m_hub, m_configPanel, [this] { return measuringNow(); });
  m_files = new FileActions(this, m_runs, m_hub, m_configPanel);
  connect(m_runs, &RunController::runEnded, this, &MainWindow::runEnded);

  createActions();
  createMenus();
  createDocks();  // the settings first: the left column
  createCharts();
  // Laying the docks out took the window's least size from a half-made arrangement (docks not
  // yet tabbed, summed one under another): taken again from the docks as they now stand, so a
  // size set before the first show (sizeToScreen, a test's 1280×720) is not held taller.
  layout()->invalidate();
  layout()->activate();

  connect(m_configPanel, &ConfigPanel::configChanged, m_runs, &RunController::onConfigChanged);
  m_runs->updateActions();
  m_runs->updateStatus();
  m_layout->sizeToScreen();
}

MainWindow::~MainWindow() = default;  // ~RunController stops the run (joins, or ends the job)

LessonDock* MainWindow::lessonDock() const { return m_lessons->dock(); }
BenchRunner* MainWindow::benchRunner() const { return m_lessons->benchRunner(); }
WelcomePage* MainWindow::welcomePage() const { return m_lessons->welcome(); }
QList<Chart*> MainWindow::charts() const { return m_hub->charts(); }
void MainWindow::showWelcome() { m_lessons->showWelcome(); }
void MainWindow::addPanel(QDockWidget* dock, Qt::DockWidgetArea area) {
  m_layout->addPanel(dock, area);
}
void MainWindow::setPanelsMovable(bool movable) { m_layout->setPanelsMovable(movable); }

QString MainWindow::exportAllTo(const QString& dir, QStringList* written, QSize size) {
  return m_files->exportAllTo(dir, written, size);
}
RunReport MainWindow::report() const { return m_files->report(); }
QString MainWindow::openRunFile(const QString& path, QString* notice) {
  return m_files->openRunFile(path, notice);
}
void MainWindow::exportCurrentChart() { m_files->exportChart(m_currentChart); }
void MainWindow::exportAllCharts() { m_files->exportAll(); }

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  m_layout->windowResized();
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  m_hub->syncPixelRatio();
  if (QWindow* handle = windowHandle())
    connect(handle, &QWindow::screenChanged, m_hub, &ChartHub::syncPixelRatio,
            Qt::UniqueConnection);
  m_layout->windowShown(m_configPanel->sizeHint().width() + 24);
}

QString MainWindow::measuringNow() const {
  if (m_sweepPanel->isRunning())
    return tr("A scaling sweep is measuring: training beside it would share its cores "
              "(wait for it, or Cancel it in the Scaling sweep panel)");
  return m_lessons ? m_lessons->measuring() : QString();
}

// [SECTION] Scaling sweep

void MainWindow::runSweep() {
  m_sweepDock->show();
  m_sweepDock->raise();
  const QString err = m_sweepPanel->run();
  if (!err.isEmpty()) m_runs->showError(tr("Cannot sweep: %1").arg(err));
}

void MainWindow::showSweep(const SweepResult& result) {
  m_files->setSweep(result, m_sweepPanel->sweptConfig());
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
  m_layout->restore();
  setTheme(Settings::theme());
  if (!keepConfig)
    if (auto c = Settings::lastConfig()) m_configPanel->setConfig(*c);
  m_persist = true;
  m_lessons->setRemember(true);
  // The way in chosen last time, or the welcome page until there is one.
  if (const QString choice = Settings::startChoice(); choice.isEmpty())
    showWelcome();
  else
    m_lessons->startAs(choice);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Ctrl+Q, the window's close button, the desktop's: a run in progress is not dropped unasked.
  QStringList losses;
  if (m_runs->shown().active())
    losses << tr("%1 ends: runs are not kept when the window closes.").arg(m_runs->atRisk());
  if (m_sweepPanel->isRunning()) losses << tr("The scaling sweep measuring now is cancelled.");
  if (!askBeforeLoss(this, tr("Quit ParaLab?"), losses, tr("Quit"))) return event->ignore();
  if (m_persist) {
    m_layout->save();
    Settings::setLastConfig(m_configPanel->config());
  }
  QMainWindow::closeEvent(event);
}

}  // namespace paralab
