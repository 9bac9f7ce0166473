// paralab-run: the headless engine. Trains as configured by flags and/or a JSON --config
// (flags win), prints one JSON object per step with --json, then a summary.
// Try: paralab-run --steps 100 --json    See tests/engine/tst_cli.cpp.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "config.h"
#include "cpu/gemm.h"
#include "platform.h"
#include "train/sweep.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

constexpr int kBadInput = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "paralab-run: %s\n", message.c_str());
  return kBadInput;
}

// The value of --config, looked up before the full parse so the file can supply defaults
// that flags then override.
std::string findConfigPath(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
  }
  return "";
}

int runSweepCommand(const RunConfig& config, const std::string& spec, bool json) {
  std::vector<int> ranks;
  try {
    ranks = parseSweep(spec);
    if (config.backend != "thread") throw ConfigError("sweep: runs thread ranks (--backend thread)");
    for (int n : ranks) {
      RunConfig c = config;
      c.ranks = n;
      if (auto err = c.validate()) throw ConfigError(*err + " (at " + std::to_string(n) + " ranks)");
    }
  } catch (const ConfigError& e) {
    return fail(e.what());
  }
  const int warmup = 3;
  try {
    const bool tty = isatty(fileno(stderr));
    const SweepResult r = runSweep(config, ranks, config.steps, warmup, [tty](int done, int total) {
      if (tty) {  // progress for long sweeps, on a terminal only
        std::fprintf(stderr, "\rsweep: %d/%d steps", done, total);
        if (done == total) std::fprintf(stderr, "\r%*s\r", 30, "");
      }
      return true;
    });
    if (json) {
      nlohmann::json j = {{"sweep", true}, {"scaling", r.scaling},
                          {"amdahl_p", r.amdahl.p}, {"amdahl_r2", r.amdahl.r2},
                          {"gustafson_serial_fraction", r.gustafson.s}, {"gustafson_r2", r.gustafson.r2},
                          {"config", config.toJson()}, {"points", nlohmann::json::array()}};
      if (config.link != "none") j["emulated"] = config.link;
      for (const SweepPoint& p : r.points)
        j["points"].push_back({{"ranks", p.ranks}, {"step_ms", p.stepMs}, {"samples_per_s", p.samplesPerS},
                               {"speedup", p.speedup}, {"efficiency", p.efficiency}});
      std::cout << j.dump() << '\n';
      return 0;
    }
    std::printf("Scaling sweep (%s scaling, %s, median of %d steps after %d warm-up)%s\n",
                r.scaling.c_str(), config.strategy.c_str(), config.steps, warmup,
                config.link != "none" ? (", link " + config.link + " (emulated)").c_str() : "");
    std::printf("%6s %10s %12s %9s %11s %14s\n", "ranks", "step ms", "samples/s", "speedup",
                "efficiency", r.scaling == "weak" ? "Gustafson ref" : "Amdahl ref");
    for (const SweepPoint& p : r.points)
      std::printf("%6d %10.2f %12.0f %8.2fx %10.0f%% %13.2fx\n", p.ranks, p.stepMs, p.samplesPerS,
                  p.speedup, 100 * p.efficiency,
                  r.scaling == "weak" ? r.gustafson.speedup(p.ranks) : r.amdahl.speedup(p.ranks));
    if (r.amdahl.p > 0)
      std::printf("Amdahl fit (reference): p = %.3f (R^2 = %.3f); predicts %.1fx at 64 ranks, at most %.1fx\n",
                  r.amdahl.p, r.amdahl.r2, r.amdahl.speedup(64),
                  r.amdahl.p < 1 ? 1 / (1 - r.amdahl.p) : INFINITY);
    else
      std::printf("Amdahl fit (reference): p = %.3f: more ranks made the step slower here\n", r.amdahl.p);
    std::printf("Gustafson fit (reference): serial fraction s = %.3f (R^2 = %.3f)\n", r.gustafson.s,
                r.gustafson.r2);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  useFastBlasKernels(argc, argv);
  RunConfig config;
  bool json = false;
  std::string configPath = findConfigPath(argc, argv);
  if (!configPath.empty()) {
    try {
      applyJsonFile(config, configPath);
    } catch (const ConfigError& e) {
      return fail(e.what());
    }
  }

  CLI::App app{"ParaLab headless engine: trains the MLP and prints per-step metrics."};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.add_option("--config", configPath, "JSON file whose keys are these flag names; flags win");
  app.add_option("--model", config.model, "Model: mlp | moe")->capture_default_str();
  app.add_option("--layers", config.layers, "Residual blocks (1..64)")->capture_default_str();
  app.add_option("--hidden", config.hidden, "Hidden width H (1..8192)")->capture_default_str();
  app.add_option("--dataset", config.dataset, "fashion-mnist | synthetic")->capture_default_str();
  app.add_option("--data-dir", config.dataDir, "Directory of the Fashion-MNIST .gz files")
      ->capture_default_str();
  app.add_option("--batch", config.batch, "Global batch size (1..65536)")->capture_default_str();
  app.add_option("--steps", config.steps, "Steps to run")->capture_default_str();
  app.add_option("--lr", config.lr, "Learning rate")->capture_default_str();
  app.add_option("--optimizer", config.optimizer, "sgd | momentum | adam")->capture_default_str();
  app.add_option("--seed", config.seed, "Seed of the model, data order and synthetic data")
      ->capture_default_str();
  app.add_option("--eval-every", config.evalEvery, "Test accuracy every K steps (0 = never)")
      ->capture_default_str();
  app.add_option("--eval-samples", config.evalSamples, "Test samples per evaluation (0 = all)")
      ->capture_default_str();
  app.add_option("--ranks", config.ranks, "Ranks in all (the world) 1..64")->capture_default_str();
  app.add_option("--dp", config.dp, "Data-parallel degree (default: ranks / (tp x pp))");
  app.add_option("--tp", config.tp, "Tensor-parallel degree (splits each block's FFN)")->capture_default_str();
  app.add_option("--pp", config.pp, "Pipeline stages")->capture_default_str();
  app.add_flag("--sp", config.sp, "Sequence parallelism (with --tp > 1)");
  app.add_option("--microbatches", config.microbatches, "Pipeline micro-batches per step")->capture_default_str();
  app.add_option("--schedule", config.schedule, "Pipeline schedule: gpipe | 1f1b")->capture_default_str();
  app.add_option("--experts", config.experts, "--model moe: experts per block")->capture_default_str();
  app.add_option("--topk", config.topk, "--model moe: experts each token is routed to")->capture_default_str();
  app.add_option("--capacity-factor", config.capacityFactor, "--model moe: expert capacity factor")
      ->capture_default_str();
  app.add_option("--aux-loss", config.auxLoss, "--model moe: load-balancing loss coefficient (0 = off)")
      ->capture_default_str();
  app.add_option("--ep", config.ep, "--model moe: expert-parallel degree (divides dp)")->capture_default_str();
  app.add_option("--backend", config.backend, "thread (ranks as threads) | mpi (under mpirun)")
      ->capture_default_str();
  app.add_option("--strategy", config.strategy,
                 "sync | ps-sync | ps-async | hogwild | local-sgd | gossip")->capture_default_str();
  app.add_option("--dp-version", config.dpVersion, "sync: naive | bucket (overlapped)")->capture_default_str();
  app.add_option("--bucket-mb", config.bucketMb, "sync bucket: gradient bucket size in MiB")->capture_default_str();
  app.add_option("--zero", config.zero, "ZeRO stage 0 | 1 | 2 | 3 (with --strategy sync)")->capture_default_str();
  app.add_option("--servers", config.servers, "ps-*: parameter-server shards")->capture_default_str();
  app.add_option("--sync-every", config.syncEvery, "local-sgd: average every H steps")->capture_default_str();
  app.add_option("--topology", config.topology, "gossip: ring | random")->capture_default_str();
  app.add_option("--allreduce", config.allreduce, "All-reduce algorithm: default | ring | naive")
      ->capture_default_str();
  app.add_option("--link", config.link, "Emulated interconnect: none | nvlink | pcie | infiniband | ethernet")
      ->capture_default_str();
  app.add_option("--timeout", config.timeoutS, "Seconds before a stuck collective aborts the run")
      ->capture_default_str();
  app.add_option("--scaling", config.scaling, "strong (--batch is global) | weak (--batch per rank)")
      ->capture_default_str();
  std::string sweep;
  app.add_option("--sweep", sweep,
                 "ranks=1,2,4,8: time --steps steps at each rank count (thread backend); prints "
                 "speedup, efficiency and the Amdahl/Gustafson fits");
  bool noInstrument = false;
  app.add_flag("--no-instrument", noInstrument, "Record no spans (to measure what they cost)");
  app.add_flag("--json", json, "Print one JSON object per step on stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see --help)");
  }
  if (config.steps == 0) return fail("steps: paralab-run needs a bounded run (allowed: 1 or more)");
  config.deriveRanks();
  if (auto err = config.validate()) return fail(*err);

  if (noInstrument) config.instrument = false;
  if (!sweep.empty()) return runSweepCommand(config, sweep, json);

  try {
    std::unique_ptr<Trainer> owned;
    if (config.backend == "mpi") {
      if (!mpiAvailable()) return fail("backend: this build has no MPI (install libopenmpi-dev and rebuild)");
      CommOptions options;
      options.algorithm = parseAllReduceAlgo(config.allreduce);
      options.timeoutSeconds = config.timeoutS;
      auto world = makeMpiWorld(options);
      if (config.ranks == 1) config.ranks = world->size();  // --ranks defaults to the job's size
      owned = std::make_unique<Trainer>(config, std::move(world));
    } else {
      owned = std::make_unique<Trainer>(config);
    }
    Trainer& trainer = *owned;
    const bool root = trainer.isRoot();  // under MPI only rank 0 prints
    if (!json && root)
      std::printf("ParaLab: %s, H=%d, L=%d (%lld parameters), global batch %d, %s, lr %g, %d rank(s) "
                  "[%s, %s%s], BLAS %s\n",
                  config.dataset.c_str(), config.hidden, config.layers,
                  (long long)trainer.parameterCount(), config.globalBatch(), config.optimizer.c_str(),
                  config.lr, config.ranks, config.backend.c_str(), config.strategy.c_str(),
                  config.zero ? (", ZeRO-" + std::to_string(config.zero)).c_str() : "",
                  kernels::vendor_blas_name());
    if (!json && root && config.link != "none")
      std::printf("Interconnect: %s (emulated)\n", config.link.c_str());
    double totalMs = 0, lastLoss = 0;
    std::optional<double> lastAcc;
    for (int s = 0; s < config.steps; ++s) {
      const StepMetrics m = trainer.step();
      totalMs += m.stepMs;
      lastLoss = m.loss;
      if (m.testAccuracy) lastAcc = m.testAccuracy;
      if (!root) {
        continue;
      } else if (json) {
        std::cout << toJson(m).dump() << '\n' << std::flush;
      } else if (m.step % 10 == 0 || m.step == 1 || m.testAccuracy) {
        std::printf("step %5lld  loss %.4f  %8.2f ms  %9.0f samples/s%s\n", (long long)m.step,
                    m.loss, m.stepMs, m.samplesPerS,
                    m.testAccuracy ? (" test acc " + std::to_string(*m.testAccuracy)).c_str() : "");
      }
    }
    if (!root) return 0;
    const double samplesPerS = config.steps * double(config.globalBatch()) / (totalMs * 1e-3);
    nlohmann::json summary = {{"summary", true},       {"steps", config.steps},
                              {"final_loss", lastLoss}, {"mean_step_ms", totalMs / config.steps},
                              {"samples_per_s", samplesPerS}, {"config", config.toJson()}};
    if (lastAcc) summary["test_accuracy"] = *lastAcc;
    if (config.link != "none") summary["emulated"] = config.link;
    if (json)
      std::cout << summary.dump() << '\n';
    else
      std::printf("done: %d steps, final loss %.4f, %.2f ms/step, %.0f samples/s%s\n", config.steps,
                  lastLoss, totalMs / config.steps, samplesPerS,
                  lastAcc ? (", test accuracy " + std::to_string(*lastAcc)).c_str() : "");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
