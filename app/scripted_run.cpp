// Scripted run (see scripted_run.h): the same window, session and export code as interactive
// use, so what coursework automation writes is what the window shows.
// See tests/app/tst_app.cpp (scriptedExport).
#include "scripted_run.h"

#include <QApplication>
#include <QDir>
#include <QSaveFile>
#include <QTimer>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chart_export.h"
#include "command_line.h"
#include "config_panel.h"
#include "main_window.h"

namespace paralab {

namespace {

void printLine(FILE* stream, const QString& text) {
  std::fprintf(stream, "paralab: %s\n", text.toLocal8Bit().constData());
  std::fflush(stream);
}

// The settings beside the charts, so a figure can be reproduced with --config.
QString writeRunConfig(const QString& dir, const RunConfig& config) {
  const QString path = QDir(dir).filePath("run-config.json");
  QSaveFile file(path);
  const std::string text = config.toJson().dump(2) + "\n";
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
      !file.commit())
    return QObject::tr("cannot write '%1': %2").arg(path, file.errorString());
  return {};
}

}  // namespace

int runScripted(MainWindow& window, const CommandLine& commandLine) {
  const QString dir = commandLine.exportDir;  // made by parseCommandLine
  const RunConfig config = commandLine.config;
  QObject::connect(&window, &MainWindow::runEnded, &window, [&](bool ok, const QString& error) {
    if (!ok) {
      printLine(stderr, QObject::tr("run failed: %1").arg(error));
      QApplication::exit(window.history().isEmpty() && window.runState() != RunState::Failed ? 2
                                                                                             : 1);
      return;
    }
    QStringList written;
    QString err = exportAllCharts(window.charts(), dir, &written);
    if (err.isEmpty()) err = writeRunConfig(dir, config);
    if (!err.isEmpty()) {
      printLine(stderr, err);
      QApplication::exit(1);
      return;
    }
    const auto& h = window.history();
    printLine(stdout,
              QObject::tr("%1 steps, final loss %2 nats, %3 samples/s; wrote %4 files to %5")
                  .arg(h.stepsSeen())
                  .arg(h.rows().isEmpty() ? 0.0 : h.rows().back().loss, 0, 'f', 4)
                  .arg(h.recentSamplesPerS(), 0, 'f', 0)
                  .arg(written.size() + 1)
                  .arg(dir));
    QApplication::exit(0);
  });
  window.configPanel()->setConfig(config);
  QTimer::singleShot(0, &window, &MainWindow::start);
  return QApplication::exec();
}

}  // namespace paralab
