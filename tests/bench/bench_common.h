// What the benchmark programs share: timing and medians (the FMA peak of a core is the
// engine's: teach/gemm_ladder.h).
#pragma once
#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace paralab::bench {

double median(std::vector<double> v);
// Median seconds of `repeats` calls of `f` after `warmup` unmeasured calls.
double timeMedian(const std::function<void()>& f, int repeats, int warmup = 1);
// `steps` calls of `step` (each returns its step's own ms) with OpenBLAS's sgemm timed
// (kernels::vendor_sgemm_timing): the ms a step, and the ms a step inside sgemm.
struct TimedSteps {
  double stepMs = 0, sgemmMs = 0;
};
TimedSteps timeSteps(int steps, const std::function<double()>& step);
// The line under a step's table: ParaLab's ms a step inside OpenBLAS's sgemm (measured with
// kernels::vendor_sgemm_seconds) and its share of the step, and, when PyTorch ran (torchMs > 0),
// PyTorch's step over that time: the most ParaLab / PyTorch could reach with its GEMMs as they
// are and every other kernel of its own taking no time. `indent` starts the line.
void printSgemmCeiling(const std::string& indent, double sgemmMs, double stepMs, double torchMs);
// The ratio to PyTorch that the FMA peak itself allows: the peak over PyTorch's model
// arithmetic per second. No engine doing the same arithmetic on these cores can go faster.
// 0 when PyTorch did not run (torchGflops 0).
double peakCeiling(double torchGflops, double peakGflops);
// The line after it: PyTorch's share of the peak and that ceiling; nothing when PyTorch did not
// run.
void printPeakCeiling(const std::string& indent, double torchGflops, double peakGflops);
// True when --json is among the arguments.
bool wantsJson(int argc, char** argv);

// A reference script's run (the PyTorch ones print their result as the last JSON object of
// their output): its exit code, its output (stdout and stderr), and that object, or null when
// there is none or the command could not start (rc -1).
struct ScriptRun {
  int rc = -1;
  std::string out;
  nlohmann::json last;
};
ScriptRun runScript(const std::string& command);

// "/usr/bin/python3 'PATH'": the command that starts the PyTorch reference script NAME
// ("torch_gpt.py"), read from resources/bench: the source tree's in a build, and
// share/paralab/resources/bench where the package installed it (platform.h, dataDir).
std::string torchCommand(const std::string& name);

}  // namespace paralab::bench
