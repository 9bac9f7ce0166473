// Scripted run: `paralab --steps N --export DIR [--config FILE]` trains N steps in the window
// (not shown), writes every chart as PNG, PDF, SVG and CSV plus run-config.json into DIR and
// returns the exit code (0 done, 1 the run or a write failed, 2 bad input).
// See tests/app/tst_app.cpp (scriptedExport).
#pragma once

namespace paralab {

class MainWindow;
struct CommandLine;

int runScripted(MainWindow& window, const CommandLine& commandLine);

}  // namespace paralab
