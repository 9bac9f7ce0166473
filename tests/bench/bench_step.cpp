// `paralab-bench step`: samples/s of the serial training step (MLP H=512, L=2, SGD with
// momentum). On the CPU (one thread): its GFLOP/s against the core's measured FMA peak, and
// PyTorch's CPU build on the same model, batch and optimizer. With --device cuda: the step on the
// GPU beside ParaLab's CPU step and PyTorch on the same GPU. Every reference is measured in the
// same run. Try: paralab-bench step [--batch 256,4096] [--device cuda]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli/run_options.h"
#include "cpu/gemm.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "teach/gemm_ladder.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

struct Options {
  int steps = 20, repeats = 5;
  bool json = false, noTorch = false;
};

int fail(const std::string& what) { return badInput("paralab-bench step", what); }

// FLOPs of the GEMMs in one training step: a Linear in->out on B rows costs 2·B·in·out
// forward, the same again for dW, and again for dx (the input projection needs no dx).
double gemmFlopsPerStep(int B, int H, int L) {
  const double b = B;
  auto lin = [&](double in, double out, bool dx) { return 2 * b * in * out * (dx ? 3 : 2); };
  return lin(784, H, false) + L * (lin(H, 4.0 * H, true) + lin(4.0 * H, H, true)) +
         lin(H, 10, true);
}

// What the PyTorch reference script said: its samples/s and its whole JSON line, or why not.
struct TorchRun {
  double rate = 0;
  std::string why;
  nlohmann::json line;
};

// Runs the PyTorch reference script on c.device (with OPENBLAS_CORETYPE as given, or as ParaLab
// runs if empty; `tf32`: the GPU's GEMMs may round to TF32).
TorchRun runTorch(const RunConfig& c, int steps, int repeats, const std::string& coretype = "",
                  bool tf32 = false) {
  const std::string env = coretype.empty() ? "" : "OPENBLAS_CORETYPE=" + coretype + " ";
  std::string cmd = env + bench::torchCommand("torch_step.py") + " --hidden " +
                    std::to_string(c.hidden) + " --layers " + std::to_string(c.layers) +
                    " --batch " + std::to_string(c.batch) + " --steps " + std::to_string(steps) +
                    " --repeats " + std::to_string(repeats);
  if (c.device != Device::Cpu) cmd += " --device " + nameOf(c.device) + (tf32 ? " --tf32" : "");
  const bench::ScriptRun run = bench::runScript(cmd);
  if (run.rc == -1) return {0, "cannot start python3", {}};
  std::string out = run.out;
  const nlohmann::json& j = run.last;
  if (j.is_object() && j.contains("not_run")) return {0, j.value("not_run", ""), j};
  if (run.rc == 0 && j.is_object()) return {j.value("samples_per_s", 0.0), "", j};
  if (c.device == Device::Cpu)
    return {0, "PyTorch reference unavailable (install python3-torch: make bench does)", {}};
  // On the GPU the usual cause is a PyTorch without CUDA or none at all: its last words say so.
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const std::string last = out.substr(out.find_last_of('\n') + 1);
  return {0, last.empty() ? "the PyTorch script failed" : last, {}};
}

// Appends the samples/s of `repeats` repeats of `steps` steps each. A repeat's time is the sum
// of the steps' own clocks (StepMetrics::stepMs), the same on either device: Trainer::step stops
// its clock after Compute::endStep has waited for the rank's stream, so a GPU step's time holds
// all of its kernels. (The loss read back inside the step waits only for the forward pass; the
// backward pass and the optimizer are still queued then.)
// With `sgemmMs`, also each repeat's ms a step inside OpenBLAS's sgemm (bench::timeSteps).
void measure(Trainer& t, int batch, int steps, int repeats, std::vector<double>& rates,
             std::vector<double>* sgemmMs = nullptr) {
  for (int r = 0; r < repeats; ++r) {
    const bench::TimedSteps timed = bench::timeSteps(steps, [&] { return t.step().stepMs; });
    if (sgemmMs) sgemmMs->push_back(timed.sgemmMs);
    rates.push_back(batch / (timed.stepMs * 1e-3));
  }
}

// [SECTION] --device cpu: ParaLab and PyTorch on one core, at one batch size.

int stepCpu(const RunConfig& c, const Options& o) {
  const int steps = o.steps, repeats = o.repeats;
  Trainer t(c);
  for (int i = 0; i < 5; ++i) t.step();  // warm-up: buffers allocated, caches warm
  std::vector<double> rates, sgemmMs;
  // ParaLab's repeats before and after the reference's, so a noisy neighbour hits both alike.
  measure(t, c.batch, steps, repeats, rates, &sgemmMs);
  const TorchRun ref = o.noTorch ? TorchRun{0, "skipped", {}} : runTorch(c, steps, repeats);
  const double torch = ref.rate;
  // PyTorch also as the environment had it, when ParaLab changed the OpenBLAS kernels.
  const char* inheritedEnv = std::getenv("PARALAB_INHERITED_OPENBLAS_CORETYPE");
  const std::string inherited = inheritedEnv ? inheritedEnv : "";
  double torchInherited = 0;
  if (torch > 0 && !inherited.empty()) torchInherited = runTorch(c, steps, repeats, inherited).rate;
  measure(t, c.batch, steps, repeats, rates, &sgemmMs);
  const double ours = bench::median(rates);
  const double ourMs = 1e3 * c.batch / ours, gemmMs = bench::median(sgemmMs);
  const double flops = gemmFlopsPerStep(c.batch, c.hidden, c.layers);
  const double gflops = ours / c.batch * flops * 1e-9;
  const double peak = teach::measuredFmaPeakGflops();
  const double torchGflops = torch / c.batch * flops * 1e-9;  // 0 when PyTorch did not run

  if (o.json) {
    nlohmann::json j = {{"bench", "step"},
                        {"hidden", c.hidden},
                        {"layers", c.layers},
                        {"batch", c.batch},
                        {"paralab_samples_per_s", ours},
                        {"paralab_gflops", gflops},
                        {"paralab_sgemm_ms_per_step", gemmMs},
                        {"fma_peak_gflops", peak},
                        {"fma_peak_lanes", teach::fmaPeakLanes()},
                        {"blas", kernels::vendor_blas_name()}};
    if (torch > 0) j["pytorch_samples_per_s"] = torch, j["ratio"] = ours / torch;
    if (torch > 0 && gemmMs > 0) j["ratio_ceiling_same_sgemm"] = 1e3 * c.batch / torch / gemmMs;
    if (torch > 0) j["ratio_ceiling_fma_peak"] = bench::peakCeiling(torchGflops, peak);
    if (torchInherited > 0)
      j["pytorch_inherited_env_samples_per_s"] = torchInherited,
      j["inherited_openblas_coretype"] = inherited;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "Serial training step: MLP H=%d L=%d (%lld params), batch %d, SGD+momentum, 1 thread, %s\n",
      c.hidden, c.layers, (long long)t.parameterCount(), c.batch, c.dataset.c_str());
  std::printf("BLAS: %s\nMedian of %d repeats x %d steps.\n\n", kernels::vendor_blas_name(),
              repeats, steps);
  std::printf("%-52s %12s %10s %10s %12s\n", "engine", "samples/s", "ms/step", "GFLOP/s",
              "% FMA peak");
  std::printf("%-52s %12.0f %10.2f %10.1f %11.1f%%\n", "ParaLab", ours, 1e3 * c.batch / ours,
              gflops, 100 * gflops / peak);
  auto row = [&](const std::string& name, double rate) {
    const double g = rate / c.batch * flops * 1e-9;
    std::printf("%-52s %12.0f %10.2f %10.1f %11.1f%%\n", name.c_str(), rate, 1e3 * c.batch / rate,
                g, 100 * g / peak);
  };
  if (torch > 0) {
    row("PyTorch, same OpenBLAS kernels", torch);
    if (torchInherited > 0)
      row("PyTorch, as inherited (OPENBLAS_CORETYPE=" + inherited + ")", torchInherited);
    std::printf("\nParaLab / PyTorch (same kernels): %.2fx samples/s\n", ours / torch);
    if (torchInherited > 0)
      std::printf("ParaLab / PyTorch (environment as inherited): %.2fx samples/s\n",
                  ours / torchInherited);
  } else {
    std::printf("%-22s %s\n", "PyTorch", ref.why.c_str());
  }
  bench::printSgemmCeiling("", gemmMs, ourMs, torch > 0 ? 1e3 * c.batch / torch : 0);
  bench::printPeakCeiling("", torchGflops, peak);
  std::printf("Core FMA peak (measured now, %d floats per FMA): %.1f GFLOP/s\n",
              teach::fmaPeakLanes(), peak);
  return 0;
}

// [SECTION] --device cuda: ParaLab on the GPU, beside ParaLab's CPU step and PyTorch on the GPU.

// A CPU repeat at a large batch would take seconds per step: it gets fewer steps, enough for
// about this long (the median over repeats stays; a repeat is still many GEMMs long).
constexpr double kCpuRepeatMs = 1000;

// `cpu`: the CPU's step (one thread, OpenBLAS); `kernel`: the GPU's GEMM.
int stepCuda(const RunConfig& cpu, const std::string& kernel, const std::vector<int>& batches,
             const Options& o) {
  RunConfig g = cpu;
  g.device = Device::Cuda;
  g.kernel = kernel;
  if (auto err = g.validateDevice()) {
    if (err->rfind("kernel:", 0) == 0) return fail("--" + *err);
    // The GPU's absence is the reason where there is none, whatever else the engine says.
    const kernels::GpuInfo gpu = kernels::cuda_query_devices();
    std::fprintf(stderr, "GPU: not run (%s)\n", (gpu.count == 0 ? gpu.reason : *err).c_str());
    return 2;
  }
  const kernels::GpuInfo gpu = kernels::cuda_query_devices();
  std::string summary, precision;
  for (const kernels::GemmCudaKernel& k : kernels::kGemmCudaKernels)
    if (g.kernel == k.name) summary = k.summary, precision = k.precision;
  const bool tf32 = precision == "tf32";
  const bool cublas = g.kernel.rfind("vendor", 0) == 0;
  const std::string ourPrecision =
      tf32     ? "TF32 inputs, fp32 accumulation"
      : cublas ? "fp32 (cuBLAS CUBLAS_COMPUTE_32F in its default math mode: no TF32)"
               : "fp32 (CUDA cores)";
  std::string torchWhy = o.noTorch ? "--no-torch" : "";
  int torchStoppedAt = 0;  // the batch where PyTorch first could not run, if it ran before

  bool header = false;
  for (int batch : batches) {
    RunConfig cc = cpu, gc = g;
    cc.batch = gc.batch = batch;
    Trainer tg(gc), tc(cc);
    for (int i = 0; i < 5; ++i) tg.step();  // warm-up: cuBLAS's handle, the caching allocator
    double cpuMs = 0;
    for (int i = 0; i < 5; ++i) cpuMs = tc.step().stepMs;
    const int cpuSteps = std::clamp(int(kCpuRepeatMs / std::max(cpuMs, 1e-3)), 1, o.steps);
    if (!header && !o.json) {
      std::printf(
          "Training step, GPU vs CPU: MLP H=%d L=%d (%lld params), SGD+momentum, %s, batch "
          "copied from host memory each step\n",
          g.hidden, g.layers, (long long)tg.parameterCount(), g.dataset.c_str());
      std::printf("GPU: %s, GEMM %s (%s)\n", gpu.firstName.c_str(), g.kernel.c_str(),
                  summary.c_str());
      std::printf("CPU: ParaLab's serial step, 1 thread, GEMM vendor (%s)\n",
                  kernels::vendor_blas_name());
      std::printf(
          "GEMM precision: ParaLab %s; PyTorch torch.backends.cuda.matmul.allow_tf32 = %s, set "
          "to match\n",
          ourPrecision.c_str(), tf32 ? "True" : "False");
      std::printf(
          "Median of %d repeats x %d steps (the CPU: fewer steps per repeat where %d would take "
          "over %.0f s).\n\n",
          o.repeats, o.steps, o.steps, kCpuRepeatMs * 1e-3);
      std::printf("%6s %22s %21s %8s %22s %15s\n", "batch", "ParaLab cuda samples/s",
                  "ParaLab cpu samples/s", "GPU/CPU", "PyTorch cuda samples/s", "ParaLab/PyTorch");
      std::fflush(stdout);
      header = true;
    }
    std::vector<double> gpuRates, cpuRates;
    // ParaLab's repeats before and after PyTorch's, so a noisy neighbour hits both alike.
    measure(tg, batch, o.steps, o.repeats, gpuRates);
    measure(tc, batch, cpuSteps, o.repeats, cpuRates);
    TorchRun ref;
    if (torchWhy.empty()) {
      ref = runTorch(gc, o.steps, o.repeats, "", tf32);
      torchWhy = ref.why;  // a PyTorch that cannot run here will not at the next batch either
      if (!torchWhy.empty() && batch != batches.front()) torchStoppedAt = batch;
    }
    measure(tg, batch, o.steps, o.repeats, gpuRates);
    measure(tc, batch, cpuSteps, o.repeats, cpuRates);
    const double ours = bench::median(gpuRates), onCpu = bench::median(cpuRates);
    const double torch = ref.rate;

    if (o.json) {
      nlohmann::json j = {{"bench", "step"},
                          {"device", "cuda"},
                          {"batch", batch},
                          {"hidden", g.hidden},
                          {"layers", g.layers},
                          {"parameters", tg.parameterCount()},
                          {"dataset", g.dataset},
                          {"gpu", gpu.firstName},
                          {"kernel", g.kernel},
                          {"gemm_precision", precision},
                          {"paralab_cuda_samples_per_s", ours},
                          {"paralab_cpu_samples_per_s", onCpu},
                          {"gpu_over_cpu", ours / onCpu},
                          {"cpu_steps_per_repeat", cpuSteps},
                          {"blas", kernels::vendor_blas_name()}};
      if (torch > 0) {
        j["pytorch_cuda_samples_per_s"] = torch, j["ratio"] = ours / torch;
        j["pytorch"] = ref.line.value("engine", "");
        j["pytorch_allow_tf32"] = ref.line.value("allow_tf32", false);
      } else {
        j["pytorch_not_run"] = torchWhy;
      }
      std::printf("%s\n", j.dump().c_str());
    } else if (torch > 0) {
      std::printf("%6d %22.0f %21.0f %7.2fx %22.0f %14.2fx\n", batch, ours, onCpu, ours / onCpu,
                  torch, ours / torch);
    } else {
      std::printf("%6d %22.0f %21.0f %7.2fx %22s %15s\n", batch, ours, onCpu, ours / onCpu, "-",
                  "-");
    }
    std::fflush(stdout);
  }
  if (!o.json && !torchWhy.empty()) {
    const std::string from = torchStoppedAt ? " from batch " + std::to_string(torchStoppedAt) : "";
    std::printf("PyTorch on cuda: not run%s (%s)\n", from.c_str(), torchWhy.c_str());
  }
  return 0;
}

}  // namespace

int benchStep(int argc, char** argv) {
  RunConfig c;
  c.hidden = 512;
  c.layers = 2;
  c.optimizer = "momentum";
  c.evalEvery = 0;
  std::vector<int> batches = {256};
  std::string device = "cpu", kernel = "vendor";
  Options o;
  CLI::App app{"Serial training-step throughput vs PyTorch, on the CPU or the GPU"};
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--batch", batches, "Batch sizes, 1..65536: one, or a list (256,4096)")
      ->check(CLI::Range(1, 65536))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--device", device, "cpu: ParaLab vs PyTorch on one core; cuda: on the GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--kernel", kernel,
                 "GEMM of the GPU's step (cuda " + gemmKernelNames(Device::Cuda) +
                     "); the CPU's step always calls OpenBLAS, as PyTorch's CPU build does")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Steps per timed repeat")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "Repeats (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object per batch size instead of the table");
  app.add_flag("--no-torch", o.noTorch, "Skip the PyTorch reference");
  if (const auto code = parseCommandLine(app, argc, argv, "paralab-bench step")) return *code;
  c.dataset = missingFashionMnistFile(c.dataDir).empty() ? "fashion-mnist" : "synthetic";
  if (device == "cpu" && kernel != "vendor")
    return fail(
        "--kernel: chooses the GPU's GEMM (with --device cuda); the CPU step calls "
        "OpenBLAS (allowed with --device cpu: vendor)");
  // The engine's own checks, named by their flags: --hidden, --layers, --batch.
  for (int b : batches) {
    c.batch = b;
    if (auto err = c.validate()) return fail("--" + *err);
  }

  try {
    if (device == "cuda") return stepCuda(c, kernel, batches, o);
    int rc = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (i > 0 && !o.json) std::printf("\n");
      c.batch = batches[i];
      rc |= stepCpu(c, o);
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paralab-bench step: %s\n", e.what());
    return 1;
  }
}
