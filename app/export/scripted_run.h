// Scripted runs of the window. `paralab --steps N --export DIR [--config FILE]` trains N steps
// in the window (not shown) and writes what File > Export All writes — every chart as PNG, PDF,
// SVG and CSV, run-config.json, trace.json and summary.md/.html — into DIR, returning the exit
// code (0 done, 1 the run or a write failed, 2 bad input). `paralab --bench-frames S` times the
// GUI thread's frames while the ranks train. See tests/app/tst_app.cpp (scriptedExport) and
// tests/app/tst_window.cpp (benchFramesPrintsFigures).
#pragma once

namespace paralab {

class MainWindow;
struct CommandLine;

int runScripted(MainWindow& window, const CommandLine& commandLine);

// `paralab --open RUN.jsonl`: the window showing that recorded run (returns when it closes);
// with --export DIR, its charts written into DIR instead (0 done, 1 a write failed). A file
// that is not a recorded run, or of a schema this build does not read: one line naming the
// line, exit 2. A file cut short: the steps it has, one line on stderr saying so, exit 0.
int openRecorded(MainWindow& window, const CommandLine& commandLine);

// Shows the window, starts the run and, every poll interval for `seconds`, times one frame:
// the poll (snapshot copy, history, chart data) plus the repaint of every visible chart,
// processed as the event loop would. Prints median, 95th percentile and worst; returns 0.
int runFrameBench(MainWindow& window, const CommandLine& commandLine);

}  // namespace paralab
