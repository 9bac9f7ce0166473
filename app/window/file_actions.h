// FileActions: the window's files. A chart or every chart exported (PNG, PDF, SVG, CSV, the
// run's settings, steps, trace and summary), a recorded run opened into the charts, settings
// opened from and saved to JSON. See tests/app/tst_window_export.cpp (exportAllWritesEverything)
// and tests/app/tst_window_trust.cpp (openRunShowsTheRecordedRun).
#pragma once
#include <QObject>
#include <QSize>
#include <QStringList>
#include <optional>

#include "export/summary_export.h"
#include "train/sweep.h"

class QMainWindow;

namespace paralab {

class Chart;
class ChartHub;
class ConfigPanel;
class RunController;

class FileActions : public QObject {
  Q_OBJECT
 public:
  FileActions(QMainWindow* window, RunController* runs, ChartHub* hub, ConfigPanel* panel);

  // The last scaling sweep, for the summary.
  // The last sweep and the settings it measured, for the summary.
  void setSweep(const SweepResult& sweep, const RunConfig& swept) {
    m_sweep = sweep;
    m_sweptConfig = swept;
  }
  // Everything for coursework into `dir` (MainWindow::exportAllTo): "" or the first failure.
  QString exportAllTo(const QString& dir, QStringList* written = nullptr,
                      QSize size = QSize(1200, 750));
  RunReport report() const;  // what the summary says about the run shown
  // A recorded run in the charts (MainWindow::openRunFile): "" or what is wrong with the file.
  QString openRunFile(const QString& path, QString* notice = nullptr);

  // The dialogs: each asks, then does it, and says what it did in the status bar.
  void exportChart(Chart* chart);
  void exportAll();
  void openRun();  // asks for the file, and before the run shown is lost
  void openConfig();
  void saveConfig();

 private:
  void say(const QString& message, int timeoutMs = 0);

  QMainWindow* m_window;
  RunController* m_runs;
  ChartHub* m_hub;
  ConfigPanel* m_panel;
  std::optional<SweepResult> m_sweep;
  std::optional<RunConfig> m_sweptConfig;
};

}  // namespace paralab
