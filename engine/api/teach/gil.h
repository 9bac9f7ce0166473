// The GIL, measured: one CPU-bound pure-Python loop (resources/bench/gil_loop.py, run by Debian's
// /usr/bin/python3) split over 1, 2, 4, ... threads and over as many processes, the same total
// work each time. CPython's global interpreter lock lets one thread run bytecode at a time, so
// the threads' speedup stays near 1 while processes, each with its own interpreter, scale with
// the cores — and no further: this machine's core count bounds what the processes can show.
// A lesson's ```bench {"kind": "gil"} step draws it. See tests/engine/tst_teach_gil.cpp.
#pragma once
#include <string>
#include <vector>

#include "teach/gemm_ladder.h"  // BenchProgress

namespace paralab::teach {

struct GilOptions {
  int maxWorkers = 4;          // 1..16: worker counts 1, 2, 4, ... up to this
  long iterations = 1'000'000; // of the loop, in all (split evenly over the workers)
  int repeats = 3;             // runs per point; the median is kept
};

struct GilPoint {
  int workers = 0;
  double threadsSeconds = 0, processesSeconds = 0;  // median wall time, first start to last end
  double threadsSpeedup = 0, processesSpeedup = 0;  // the 1-worker time over this one
};

struct GilResult {
  std::vector<GilPoint> points;  // 1 worker first
  long iterations = 0;
  int cores = 0;               // CPUs this process may run on: processes cannot speed up past it
  std::string python;          // the interpreter that ran it ("/usr/bin/python3")
  std::string notRun;          // why nothing ran ("" it ran): no python3, the script failed
  bool cancelled = false;
};

// The interpreter the benchmark runs: Debian's, at a fixed path, never one found on PATH.
const char* gilPython();
// Throws std::invalid_argument naming a bad option.
GilResult runGil(const GilOptions& options, const BenchProgress& progress = {});

}  // namespace paralab::teach
