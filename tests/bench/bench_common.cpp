// Timing helpers (see bench_common.h).
#include "bench_common.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "cpu/gemm.h"  // vendor_sgemm_timing
#include "platform.h"    // dataDir

namespace paralab::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double timeMedian(const std::function<void()>& f, int repeats, int warmup) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

TimedSteps timeSteps(int steps, const std::function<double()>& step) {
  double ms = 0;
  kernels::vendor_sgemm_timing(true);
  for (int s = 0; s < steps; ++s) ms += step();
  const TimedSteps t{ms / steps, kernels::vendor_sgemm_seconds() * 1e3 / steps};
  kernels::vendor_sgemm_timing(false);
  return t;
}

void printSgemmCeiling(const std::string& indent, double sgemmMs, double stepMs, double torchMs) {
  if (sgemmMs <= 0 || stepMs <= 0) return;
  std::printf("%sParaLab's step inside OpenBLAS's sgemm: %.1f of %.1f ms (%.0f%%)", indent.c_str(),
              sgemmMs, stepMs, 100 * sgemmMs / stepMs);
  if (torchMs > 0)
    std::printf(
        "; PyTorch's step / that: %.2fx, the most ParaLab / PyTorch could reach with its GEMMs "
        "as they are and every other kernel of its own taking no time",
        torchMs / sgemmMs);
  std::printf("\n");
}

double peakCeiling(double torchGflops, double peakGflops) {
  return torchGflops > 0 ? peakGflops / torchGflops : 0;
}

void printPeakCeiling(const std::string& indent, double torchGflops, double peakGflops) {
  const double ceiling = peakCeiling(torchGflops, peakGflops);
  if (ceiling <= 0) return;
  std::printf(
      "%sPyTorch's step runs at %.1f%% of the FMA peak: at the peak, the same arithmetic would "
      "run %.2fx PyTorch's speed, the most any engine can reach on these cores\n",
      indent.c_str(), 100 / ceiling, ceiling);
}

bool wantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) return true;
  return false;
}

ScriptRun runScript(const std::string& command) {
  ScriptRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) r.out += buf;
  r.rc = pclose(p);
  if (const size_t brace = r.out.rfind('{'); brace != std::string::npos) {
    r.last = nlohmann::json::parse(r.out.substr(brace), nullptr, false);
    if (!r.last.is_object()) r.last = nullptr;
  }
  return r;
}

std::string torchCommand(const std::string& name) {
  return "/usr/bin/python3 '" + dataDir("resources") + "/bench/" + name + "'";
}

}  // namespace paralab::bench
