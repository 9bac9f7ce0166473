// The run flags shared by paralab-run and the window (see run_options.h).
#include "cli/run_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "config.h"

namespace paralab {

int badInput(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  return kBadInputExit;
}

std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return badInput(program, std::string(e.what()) + " (see --help)");
  }
  return std::nullopt;
}

void addRunConfigOptions(CLI::App& app, RunConfig& config) {
  app.add_option("--model", config.model, "Model: mlp | moe")->capture_default_str();
  app.add_option("--layers", config.layers, "Residual blocks (1..64)")->capture_default_str();
  app.add_option("--hidden", config.hidden, "Hidden width H (1..8192)")->capture_default_str();
  app.add_option("--dataset", config.dataset, "fashion-mnist | synthetic")->capture_default_str();
  app.add_option("--data-dir", config.dataDir, "Directory of the Fashion-MNIST .gz files")
      ->capture_default_str();
  app.add_option("--batch", config.batch, "Global batch size (1..65536)")->capture_default_str();
  app.add_option("--lr", config.lr, "Learning rate")->capture_default_str();
  app.add_option("--optimizer", config.optimizer, "sgd | momentum | adam")->capture_default_str();
  app.add_option("--seed", config.seed, "Seed of the model, data order and synthetic data")
      ->capture_default_str();
  app.add_option("--eval-every", config.evalEvery, "Test accuracy every K steps (0 = never)")
      ->capture_default_str();
  app.add_option("--eval-samples", config.evalSamples, "Test samples per evaluation (0 = all)")
      ->capture_default_str();
  app.add_option("--device", config.device, "cpu | cuda (rank r on GPU r mod G)")
      ->capture_default_str();
  app.add_option("--kernel", config.kernel,
                 "GEMM: naive | simd | threaded | tiled | vendor on cpu; "
                 "naive | coalesced | tiled | tensor-core | vendor on cuda")
      ->capture_default_str();
  app.add_option("--ranks", config.ranks, "Ranks in all (the world) 1..64")->capture_default_str();
  app.add_option("--dp", config.dp, "Data-parallel degree (default: ranks / (tp x pp))");
  app.add_option("--tp", config.tp, "Tensor-parallel degree (splits each block's FFN)")
      ->capture_default_str();
  app.add_option("--pp", config.pp, "Pipeline stages")->capture_default_str();
  app.add_flag("--sp", config.sp, "Sequence parallelism (with --tp > 1)");
  app.add_option("--microbatches", config.microbatches, "Pipeline micro-batches per step")
      ->capture_default_str();
  app.add_option("--schedule", config.schedule, "Pipeline schedule: gpipe | 1f1b")
      ->capture_default_str();
  app.add_option("--experts", config.experts, "--model moe: experts per block")
      ->capture_default_str();
  app.add_option("--topk", config.topk, "--model moe: experts each token is routed to")
      ->capture_default_str();
  app.add_option("--capacity-factor", config.capacityFactor, "--model moe: expert capacity factor")
      ->capture_default_str();
  app.add_option("--aux-loss", config.auxLoss,
                 "--model moe: load-balancing loss coefficient (0 = off)")
      ->capture_default_str();
  app.add_option("--ep", config.ep, "--model moe: expert-parallel degree (divides dp)")
      ->capture_default_str();
  app.add_option("--backend", config.backend,
                 "thread (ranks as threads) | mpi (under mpirun) | nccl (--device cuda, one rank "
                 "per GPU: threads, or one process each under mpirun)")
      ->capture_default_str();
  app.add_option("--strategy", config.strategy,
                 "sync | ps-sync | ps-async | hogwild | local-sgd | gossip")
      ->capture_default_str();
  app.add_option("--dp-version", config.dpVersion, "sync: naive | bucket (overlapped)")
      ->capture_default_str();
  app.add_option("--bucket-mb", config.bucketMb, "sync bucket: gradient bucket size in MiB")
      ->capture_default_str();
  app.add_option("--zero", config.zero, "ZeRO stage 0 | 1 | 2 | 3 (with --strategy sync)")
      ->capture_default_str();
  app.add_option("--servers", config.servers, "ps-*: parameter-server shards")
      ->capture_default_str();
  app.add_option("--sync-every", config.syncEvery, "local-sgd: average every H steps")
      ->capture_default_str();
  app.add_option("--topology", config.topology, "gossip: ring | random")->capture_default_str();
  app.add_option("--allreduce", config.allreduce, "All-reduce algorithm: default | ring | naive")
      ->capture_default_str();
  app.add_option("--link", config.link,
                 "Emulated interconnect: none | nvlink | pcie | infiniband | ethernet")
      ->capture_default_str();
  app.add_option("--timeout", config.timeoutS, "Seconds before a stuck collective aborts the run")
      ->capture_default_str();
  app.add_option("--scaling", config.scaling,
                 "strong (--batch is global) | weak (--batch per rank)")
      ->capture_default_str();
}

std::string findConfigPath(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
  }
  return "";
}

}  // namespace paralab
