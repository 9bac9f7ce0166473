// paralab: the window. `paralab` opens it (make run); `paralab --steps N --export DIR
// [--config FILE]` trains without showing it, writes every chart into DIR and exits.
// See tests/app/tst_app.cpp and `paralab --help`.
#include <QApplication>

#include "command_line.h"
#include "config_panel.h"
#include "main_window.h"
#include "platform.h"
#include "scripted_run.h"

int main(int argc, char** argv) {
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
  QApplication::setApplicationVersion(PARALAB_VERSION);
  QApplication::setDesktopFileName("paralab");
  if (qtOptions)
    if (auto code = parse()) return *code;

  paralab::MainWindow window;
  if (commandLine.scripted()) return paralab::runScripted(window, commandLine);
  window.configPanel()->setConfig(commandLine.config);
  window.restoreSettings();
  window.show();
  return QApplication::exec();
}
