// `paralab-bench latency`: latency against throughput, the CPU beside the GPU. The model's
// forward pass (inference) is timed at each batch size on each device with the engine's latency
// sweep (engine/train/latency_sweep.h, as `paralab-run --latency-sweep`), and each row says which
// device answered faster and by how much. Try: paralab-bench latency [--batches 1,4,...,4096]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/run_options.h"
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "data/dataset.h"
#include "train/latency_sweep.h"

using namespace paralab;

namespace {

// One device's sweep, or why it did not run.
struct Side {
  const char* label;  // "CPU" | "GPU", as the table's columns name it
  RunConfig config;
  std::string notRun;
  LatencySweepResult result;
};

int fail(const std::string& what) { return badInput("paralab-bench latency", what); }

// Why `c` cannot be swept here ("" when it can). Without a GPU, the GPU's absence is the reason,
// whatever else the configuration says.
std::string whyNot(const RunConfig& c) {
  if (c.device == Device::Cuda) {
    const kernels::GpuInfo gpu = kernels::cuda_query_devices();
    if (gpu.count == 0) return gpu.reason;
  }
  return latencySweepProblem(c);
}

// Where a side's math ran, for the table's header.
std::string whereText(const Side& s) {
  const RunConfig& c = s.config;
  std::string t = std::string(s.label) + ": GEMM " + c.kernel;
  if (c.device == Device::Cpu) {
    if (c.kernel == "vendor") t += std::string(" (") + kernels::vendor_blas_name() + ")";
    const int n = s.result.threads;
    return t + ", " + std::to_string(n) + (n == 1 ? " thread" : " threads");
  }
  if (c.kernel.rfind("vendor", 0) == 0) t += " (cuBLAS)";
  return t + " on " + s.result.gpu + ", the batch copied from host memory each forward";
}

// 365706 -> "365,706".
std::string grouped(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

}  // namespace

int benchLatency(int argc, char** argv) {
  // paralab-run's model by default, so this table's CPU half and `paralab-run --latency-sweep`
  // time the same thing. Its weights (1.4 MiB at H=128) stay in the CPU's caches, which is what
  // lets one core answer a single sample quickly.
  RunConfig base;
  std::string batchSpec = "1,2,4,...,4096";
  LatencySweepOptions options;
  bool json = false;
  CLI::App app{"Forward-pass latency and throughput per batch size, CPU beside GPU"};
  app.add_option("--batches", batchSpec,
                 "Batch sizes, 1..65536: a list, where '...' continues the ratio of the two "
                 "sizes before it up to the size after it (as paralab-run --latency-sweep)")
      ->capture_default_str();
  app.add_option("--hidden", base.hidden, "Hidden width H")
      ->check(CLI::Range(1, 8192))
      ->capture_default_str();
  app.add_option("--layers", base.layers, "Residual blocks")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--kernel", base.kernel,
                 "GEMM on both devices: cpu " + gemmKernelNames(Device::Cpu) + "; cuda " +
                     gemmKernelNames(Device::Cuda) + " (a device without it says so)")
      ->capture_default_str();
  app.add_option("--repeats", options.repeats, "Timed repeats per batch size (median reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--json", json, "One JSON object per batch size instead of the table");
  if (const auto code = parseCommandLine(app, argc, argv, "paralab-bench latency")) return *code;

  std::vector<int> batches;
  try {
    batches =
        parseLatencySweep(batchSpec.rfind("batch=", 0) == 0 ? batchSpec : "batch=" + batchSpec);
  } catch (const ConfigError& e) {
    // The engine names its own flag; here the list is --batches, given without "batch=".
    std::string why = e.what();
    if (why.rfind("latency-sweep: ", 0) == 0) why.erase(0, 15);
    if (const size_t at = why.find("allowed: batch="); at != std::string::npos)
      why.erase(at + 9, 6);
    return fail("--batches: " + why);
  }
  if (!isGemmKernel(Device::Cpu, base.kernel) && !isGemmKernel(Device::Cuda, base.kernel))
    return fail("--kernel: '" + base.kernel + "' is a GEMM of neither device (allowed: cpu " +
                gemmKernelNames(Device::Cpu) + "; cuda " + gemmKernelNames(Device::Cuda) + ")");
  base.dataset = missingFashionMnistFile(base.dataDir).empty() ? "fashion-mnist" : "synthetic";

  Side sides[2] = {{"CPU", base, "", {}}, {"GPU", base, "", {}}};
  sides[1].config.device = Device::Cuda;
  for (Side& s : sides) {
    s.notRun = whyNot(s.config);
    if (!s.notRun.empty()) continue;
    try {
      s.result = runLatencySweep(s.config, batches, options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paralab-bench latency: %s: %s\n", s.label, e.what());
      return 1;
    }
  }
  const Side &cpu = sides[0], &gpu = sides[1];
  const bool both = cpu.notRun.empty() && gpu.notRun.empty();

  if (json) {
    for (size_t i = 0; i < batches.size(); ++i) {
      nlohmann::json j = {{"bench", "latency"},          {"batch", batches[i]},
                          {"model", nameOf(base.model)}, {"hidden", base.hidden},
                          {"layers", base.layers},       {"dataset", base.dataset}};
      for (const Side& s : sides) {
        const std::string d = s.config.device == Device::Cpu ? "cpu" : "gpu";  // the columns' names
        j[d + "_kernel"] = s.config.kernel;
        if (!s.notRun.empty()) {
          j[d + "_not_run"] = s.notRun;
          continue;
        }
        const LatencyPoint& p = s.result.points[i];
        j["parameters"] = s.result.parameterCount;
        j[d + "_ms_per_forward"] = p.msPerForward;
        j[d + "_samples_per_s"] = p.samplesPerS;
        if (s.config.device == Device::Cpu)
          j["cpu_threads"] = s.result.threads, j["blas"] = kernels::vendor_blas_name();
        else
          j["gpu"] = s.result.gpu;
      }
      if (both) {
        const double c = cpu.result.points[i].msPerForward, g = gpu.result.points[i].msPerForward;
        j["faster"] = c <= g ? "cpu" : "gpu";
        j["faster_by"] = c <= g ? g / c : c / g;  // the slower time over the faster
      }
      std::printf("%s\n", j.dump().c_str());
    }
    return cpu.notRun.empty() || gpu.notRun.empty() ? 0 : 2;
  }

  const Side& ran = cpu.notRun.empty() ? cpu : gpu;
  if (ran.notRun.empty()) {
    std::printf(
        "Latency vs throughput, CPU beside GPU: %s H=%d, L=%d (%s parameters), forward "
        "only, on %s test samples\n",
        nameOf(base.model).c_str(), base.hidden, base.layers,
        grouped(ran.result.parameterCount).c_str(), base.dataset.c_str());
    for (const Side& s : sides)
      if (s.notRun.empty()) std::printf("%s\n", whereText(s).c_str());
    std::printf(
        "Median of %d timed repeats per batch size after %d warm-up forwards; a repeat "
        "runs forwards for at least %.0f ms.\n\n",
        options.repeats, options.warmup, options.minRepeatMs);
    std::printf("%6s", "batch");
    for (const Side& s : sides)
      if (s.notRun.empty()) std::printf(" %4s ms/forward %4s samples/s", s.label, s.label);
    std::printf(both ? "   faster\n" : "\n");
    for (size_t i = 0; i < batches.size(); ++i) {
      std::printf("%6d", batches[i]);
      for (const Side& s : sides)
        if (s.notRun.empty())
          std::printf(" %15.4f %14.0f", s.result.points[i].msPerForward,
                      s.result.points[i].samplesPerS);
      if (both) {
        const double c = cpu.result.points[i].msPerForward, g = gpu.result.points[i].msPerForward;
        std::printf("   %s %.2fx", c <= g ? "CPU" : "GPU", c <= g ? g / c : c / g);
      }
      std::printf("\n");
    }
  }
  for (const Side& s : sides)
    if (!s.notRun.empty()) std::printf("%s: not run (%s)\n", s.label, s.notRun.c_str());
  return cpu.notRun.empty() || gpu.notRun.empty() ? 0 : 2;
}
