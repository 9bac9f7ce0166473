// `paralab-bench dp`: synchronous data parallelism on thread ranks against the serial run on
// the same global batch (strong scaling), PyTorch DistributedDataParallel (gloo) on the same
// model, batch and machine as the reference, the cost of instrumentation (spans on/off), and
// what the cores allow: N independent serial runs of batch / N each, all at once.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_common.h"
#include "cpu/gemm.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Median step time (ms) of `steps` steps after 3 warm-up steps.
double medianStepMs(const RunConfig& c, int steps) {
  Trainer t(c);
  for (int i = 0; i < 3; ++i) t.step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) ms.push_back(t.step().stepMs);
  return bench::median(ms);
}

// N serial runs of batch / N each, on N threads at once: no communication and no waiting for
// each other, so their step is what N cores give a rank's share of the work. Returns the mean
// of their median step times.
double independentStepMs(const RunConfig& c, int n, int steps) {
  RunConfig part = c;
  part.batch = c.batch / n;
  std::vector<double> ms(n);
  std::vector<std::thread> runs;
  for (int i = 0; i < n; ++i)
    runs.emplace_back([&, i] {
      RunConfig own = part;
      own.seed = c.seed + i;
      ms[i] = medianStepMs(own, steps);
    });
  for (std::thread& t : runs) t.join();
  double sum = 0;
  for (double m : ms) sum += m;
  return sum / n;
}

}  // namespace

int benchDp(int argc, char** argv) {
  RunConfig c;
  c.hidden = 512;
  c.layers = 2;
  c.batch = 1024;
  c.optimizer = "momentum";
  c.dataset = "synthetic";
  c.evalEvery = 0;
  int ranks = 2, steps = 15, repeats = 3;
  bool json = false, noTorch = false;
  CLI::App app{"Synchronous data parallelism vs serial, and vs PyTorch DDP (gloo)"};
  app.add_option("--ranks", ranks)->capture_default_str();
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--batch", c.batch, "Global batch")->capture_default_str();
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--repeats", repeats, "Alternating serial/parallel measurements")->capture_default_str();
  app.add_flag("--json", json);
  app.add_flag("--no-torch", noTorch);
  CLI11_PARSE(app, argc, argv);

  RunConfig par = c;
  par.ranks = ranks;
  RunConfig quiet = par;
  quiet.instrument = false;
  std::vector<double> serial, parallel, uninstrumented, independent;
  for (int r = 0; r < repeats; ++r) {  // alternate, so load changes hit all alike
    serial.push_back(medianStepMs(c, steps));
    parallel.push_back(medianStepMs(par, steps));
    uninstrumented.push_back(medianStepMs(quiet, steps));
    independent.push_back(independentStepMs(c, ranks, steps));
  }
  const double ts = bench::median(serial), tp = bench::median(parallel), tq = bench::median(uninstrumented);
  const double ti = bench::median(independent);
  double torchSerial = 0, torchDdp = 0;
  std::string why = "skipped";
  if (!noTorch) {
    const std::string cmd = bench::torchCommand("torch_ddp.py") + " --hidden " +
                            std::to_string(c.hidden) + " --batch " + std::to_string(c.batch) +
                            " --ranks " + std::to_string(ranks) + " --steps " + std::to_string(steps);
    if (const bench::ScriptRun r = bench::runScript(cmd); r.rc == 0 && r.last.is_object()) {
      torchSerial = r.last.value("serial_step_ms", 0.0);
      torchDdp = r.last.value("ddp_step_ms", 0.0);
    } else {
      why = "PyTorch reference unavailable (install python3-torch: make bench does)";
    }
  }
  if (json) {
    nlohmann::json j = {{"bench", "dp"}, {"ranks", ranks}, {"hidden", c.hidden}, {"batch", c.batch},
                        {"serial_step_ms", ts}, {"dp_step_ms", tp}, {"speedup", ts / tp},
                        {"dp_uninstrumented_step_ms", tq}, {"instrumentation_overhead", tp / tq - 1},
                        {"independent_step_ms", ti}, {"independent_speedup", ts / ti}};
    if (torchDdp > 0)
      j["pytorch_serial_step_ms"] = torchSerial, j["pytorch_ddp_step_ms"] = torchDdp,
      j["pytorch_speedup"] = torchSerial / torchDdp;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("Sync data parallel, strong scaling: MLP H=%d L=%d, global batch %d, SGD+momentum,\n"
              "thread ranks, 1 BLAS thread each. BLAS: %s. Median of %d x %d steps.\n\n",
              c.hidden, c.layers, c.batch, kernels::vendor_blas_name(), repeats, steps);
  std::printf("%-34s %12s %12s %10s\n", "engine", "serial ms", "N ms", "speedup");
  std::printf("%-34s %12.2f %12.2f %9.2fx\n", ("ParaLab sync DP, N=" + std::to_string(ranks)).c_str(), ts,
              tp, ts / tp);
  std::printf("%-34s %12.2f %12.2f %9.2fx\n",
              (std::to_string(ranks) + " serial runs of batch/" + std::to_string(ranks) + " at once")
                  .c_str(),
              ts, ti, ts / ti);
  if (torchDdp > 0)
    std::printf("%-34s %12.2f %12.2f %9.2fx\n", ("PyTorch DDP gloo, N=" + std::to_string(ranks)).c_str(),
                torchSerial, torchDdp, torchSerial / torchDdp);
  else
    std::printf("%-34s %s\n", "PyTorch DDP", why.c_str());
  if (torchDdp > 0) std::printf("\nParaLab N=%d step vs PyTorch DDP step: %.2fx faster\n", ranks, torchDdp / tp);
  std::printf(
      "%d serial runs of batch %d each, at once: what %d cores give each rank's share with no "
      "communication and no rank waiting for another (mean of their median steps)\n",
      ranks, c.batch / ranks, ranks);
  std::printf("Instrumentation (spans) on vs off at N=%d: %.2f vs %.2f ms (%+.1f%%)\n", ranks, tp, tq,
              100 * (tp / tq - 1));
  return 0;
}
