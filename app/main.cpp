// paralab: the window. `paralab` opens it (make run); `paralab --steps N --export DIR
// [--config FILE]` trains without showing it, writes every chart into DIR and exits;
// `--report LESSON --export DIR` writes a lesson's lab report;
// `--measure-startup` and `--bench-frames S` time the window itself.
// See tests/app/tst_app.cpp, tests/app/tst_window.cpp and `paralab --help`.
#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>
#include <cstdio>

#include "command_line.h"
#include "export/lab_report.h"
#include "export/scripted_run.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "platform.h"
#include "settings.h"
#include "theme.h"

namespace {

// Reports the first paint of the window: the moment a learner sees it, which is what
// "start-up time" means here.
class FirstPaint : public QObject {
 public:
  explicit FirstPaint(const QElapsedTimer& sinceMain) : m_sinceMain(sinceMain) {}
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Paint && !m_seen) {
      m_seen = true;
      // After this paint event is handled (the frame is drawn), report and quit.
      QTimer::singleShot(0, [this] {
        std::printf("paralab: first paint %.0f ms after process start (%.0f ms after main)\n",
                    paralab::msSinceProcessStart(), m_sinceMain.nsecsElapsed() / 1e6);
        std::fflush(stdout);
        QApplication::exit(0);
      });
    }
    return QObject::eventFilter(watched, event);
  }

 private:
  const QElapsedTimer& m_sinceMain;
  bool m_seen = false;
};

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer sinceMain;
  sinceMain.start();
  paralab::useFastBlasKernels(argc, argv);
  paralab::preferOffscreenPlatform(argc, argv);
  // Parsed before QApplication exists when it can be, so bad input costs one line and no
  // start-up of the GUI (which may print its own warnings); with Qt's own options
  // (-platform, -style), after QApplication has taken them out of argv.
  paralab::CommandLine commandLine;
  const bool qtOptions = paralab::hasQtOptions(argc, argv);
  const auto parse = [&]() {
    return paralab::parseCommandLine(argc, argv, paralab::ConfigPanel::defaults(), commandLine);
  };
  if (!qtOptions)
    if (auto code = parse()) return *code;
  QApplication app(argc, argv);
  QApplication::setApplicationName("ParaLab");
  QApplication::setOrganizationName("ParaLab");
  QApplication::setApplicationVersion(paralab::version());
  QApplication::setDesktopFileName("paralab");
  if (qtOptions)
    if (auto code = parse()) return *code;
  paralab::captureDesktopPalette();
  if (!commandLine.settingsFile.isEmpty()) paralab::Settings::useFile(commandLine.settingsFile);

  if (!commandLine.reportLesson.isEmpty())
    return paralab::runLabReportCommand(commandLine.reportLesson, commandLine.exportDir);
  paralab::MainWindow window;
  if (!commandLine.openFile.isEmpty()) return paralab::openRecorded(window, commandLine);
  if (commandLine.scripted()) return paralab::runScripted(window, commandLine);
  if (commandLine.benchFramesS > 0) return paralab::runFrameBench(window, commandLine);
  FirstPaint firstPaint(sinceMain);
  if (commandLine.measureStartup) app.installEventFilter(&firstPaint);
  // The last session's settings, unless the command line asked for others.
  window.restoreSettings(commandLine.configGiven);
  if (commandLine.configGiven) window.configPanel()->setConfig(commandLine.config);
  window.show();
  return QApplication::exec();
}
