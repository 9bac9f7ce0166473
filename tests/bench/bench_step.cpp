// `paralab-bench step`: samples/s of the serial training step (MLP H=512, L=2, batch 256,
// SGD with momentum, one thread), its GFLOP/s against the core's measured FMA peak, and
// PyTorch's CPU build on the same model, batch and optimizer, measured in the same run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "cpu/gemm.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// FLOPs of the GEMMs in one training step: a Linear in->out on B rows costs 2·B·in·out
// forward, the same again for dW, and again for dx (the input projection needs no dx).
double gemmFlopsPerStep(int B, int H, int L) {
  const double b = B;
  auto lin = [&](double in, double out, bool dx) { return 2 * b * in * out * (dx ? 3 : 2); };
  return lin(784, H, false) + L * (lin(H, 4.0 * H, true) + lin(4.0 * H, H, true)) +
         lin(H, 10, true);
}

// Runs the PyTorch reference script (with OPENBLAS_CORETYPE as given, or as ParaLab runs if
// empty); returns its samples/s, or a reason why not.
std::pair<double, std::string> runTorch(const RunConfig& c, int steps, int repeats,
                                        const std::string& coretype = "") {
  const std::string env = coretype.empty() ? "" : "OPENBLAS_CORETYPE=" + coretype + " ";
  const std::string cmd = env + "/usr/bin/python3 " PARALAB_TORCH_STEP_SCRIPT " --hidden " +
                          std::to_string(c.hidden) + " --layers " + std::to_string(c.layers) +
                          " --batch " + std::to_string(c.batch) + " --steps " +
                          std::to_string(steps) + " --repeats " + std::to_string(repeats) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {0, "cannot start python3"};
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  const size_t brace = out.rfind('{');
  if (rc != 0 || brace == std::string::npos)
    return {0, "PyTorch reference unavailable (install python3-torch: make bench does)"};
  return {nlohmann::json::parse(out.substr(brace)).value("samples_per_s", 0.0), ""};
}

}  // namespace

int benchStep(int argc, char** argv) {
  RunConfig c;
  c.hidden = 512;
  c.layers = 2;
  c.batch = 256;
  c.optimizer = "momentum";
  c.evalEvery = 0;
  int steps = 20, repeats = 5;
  bool json = false, noTorch = false;
  CLI::App app{"Serial training-step throughput vs PyTorch"};
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--batch", c.batch)->capture_default_str();
  app.add_option("--steps", steps, "Steps per timed repeat")->capture_default_str();
  app.add_option("--repeats", repeats, "Repeats (the median is reported)")->capture_default_str();
  app.add_flag("--json", json, "One JSON object instead of the table");
  app.add_flag("--no-torch", noTorch, "Skip the PyTorch reference");
  CLI11_PARSE(app, argc, argv);
  c.dataset = missingFashionMnistFile(c.dataDir).empty() ? "fashion-mnist" : "synthetic";

  Trainer t(c);
  for (int i = 0; i < 5; ++i) t.step();  // warm-up: buffers allocated, caches warm
  std::vector<double> rates;
  auto measureOurs = [&] {
    for (int r = 0; r < repeats; ++r) {
      double ms = 0;
      for (int s = 0; s < steps; ++s) ms += t.step().stepMs;
      rates.push_back(steps * c.batch / (ms * 1e-3));
    }
  };
  // ParaLab's repeats before and after the reference's, so a noisy neighbour hits both alike.
  measureOurs();
  auto [torch, why] =
      noTorch ? std::pair<double, std::string>{0, "skipped"} : runTorch(c, steps, repeats);
  // PyTorch also as the environment had it, when ParaLab changed the OpenBLAS kernels.
  const char* inheritedEnv = std::getenv("PARALAB_INHERITED_OPENBLAS_CORETYPE");
  const std::string inherited = inheritedEnv ? inheritedEnv : "";
  double torchInherited = 0;
  if (torch > 0 && !inherited.empty())
    torchInherited = runTorch(c, steps, repeats, inherited).first;
  measureOurs();
  const double ours = bench::median(rates);
  const double flops = gemmFlopsPerStep(c.batch, c.hidden, c.layers);
  const double gflops = ours / c.batch * flops * 1e-9;
  const double peak = bench::measuredFmaPeakGflops();

  if (json) {
    nlohmann::json j = {{"bench", "step"},
                        {"hidden", c.hidden},
                        {"layers", c.layers},
                        {"batch", c.batch},
                        {"paralab_samples_per_s", ours},
                        {"paralab_gflops", gflops},
                        {"fma_peak_gflops", peak},
                        {"blas", kernels::vendor_blas_name()}};
    if (torch > 0) j["pytorch_samples_per_s"] = torch, j["ratio"] = ours / torch;
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
    std::printf("%-22s %s\n", "PyTorch", why.c_str());
  }
  std::printf("Core FMA peak (measured now): %.1f GFLOP/s\n", peak);
  return 0;
}
