// The window's command line: `paralab [--config FILE] [run flags] [--steps N --export DIR]`,
// or `paralab --open RUN.jsonl [--export DIR]` for a recorded run, or `paralab --report LESSON
// --export DIR` for a lesson's lab report (export/lab_report.h).
// --config takes paralab-run's JSON; flags win over it. With --export, the window runs N steps
// without showing itself, writes every chart into DIR and exits (see scripted_run.h);
// --bench-frames S and --measure-startup measure the window itself.
// See tests/app/tst_app.cpp (scriptedExport, badConfigExits2).
#pragma once
#include <QString>
#include <optional>

#include "config.h"

namespace paralab {

struct CommandLine {
  RunConfig config;
  bool configGiven = false;     // --config or any run flag: the values were asked for
  QString exportDir;            // set: scripted run
  QString settingsFile;         // --settings FILE: remember the window's state there
  QString openFile;             // --open FILE: a recorded run to show (with --export: to write)
  QString reportLesson;         // --report LESSON: its lab report, written into exportDir
  int benchFramesS = 0;         // --bench-frames S: time the GUI thread's frames for S seconds
  int reconfigureEveryS = 0;    // --reconfigure-every S: with it, a live change every S seconds
  bool measureStartup = false;  // --measure-startup: print the time to the first paint, exit
  bool scripted() const { return !exportDir.isEmpty(); }
};

// Before QApplication exists: a scripted run or --help needs no display, so unless the user
// chose a platform they get Qt's offscreen one (works over ssh and in CI).
void preferOffscreenPlatform(int argc, char** argv);

// Qt's own options are single-dash words (-platform, -style); QApplication takes them out.
bool hasQtOptions(int argc, char** argv);

// Parses argv (what QApplication left of it, when it has Qt options) over `base`. Returns an exit
// code when the program should end now (0 after --help, 2 after one line on stderr naming bad
// input), else nothing.
std::optional<int> parseCommandLine(int argc, char** argv, const RunConfig& base, CommandLine& out);

}  // namespace paralab
