// RunConfig: everything one training run is made of, as the CLI, a JSON --config file and the
// window set it. validate() names the first bad field and what is allowed.
// See tests/engine/tst_config.cpp and `paralab-run --help`.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace paralab {

struct RunConfig {
  // Model: MLP of residual blocks, input 784 -> hidden, `layers` blocks, classifier -> 10.
  std::string model = "mlp";
  int layers = 2;
  int hidden = 128;
  // Data.
  std::string dataset = "fashion-mnist";  // fashion-mnist | synthetic
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  // Training.
  int batch = 128;  // global batch, samples
  int steps = 200;  // 0 = run until stopped
  double lr = 0.05;
  std::string optimizer = "momentum";  // sgd | momentum | adam
  uint64_t seed = 1;
  int evalEvery = 50;  // evaluate test accuracy every K steps (0 = never)
  int evalSamples = 2000;  // test samples evaluated each time (0 = the whole test split)
  bool instrument = true;  // record spans (the timeline); off only to measure their cost
  // Where the math runs.
  std::string device = "cpu";     // cpu | cuda (rank r uses GPU r mod G)
  std::string kernel = "vendor";  // GEMM: cpu naive | simd | threaded | tiled | vendor;
                                  //       cuda naive | coalesced | tiled | tensor-core | vendor
  // Ranks and how they talk.
  int ranks = 1;                     // world size (thread ranks, or the mpirun job's size)
  std::string backend = "thread";    // thread | mpi | nccl (one rank per GPU, needs cuda)
  std::string allreduce = "default"; // all-reduce algorithm: default | ring | naive
  std::string link = "none";         // emulated interconnect: none | nvlink | pcie | infiniband | ethernet
  double timeoutS = 60;              // a collective not finished by then aborts the run
  // Data-parallel family.
  std::string strategy = "sync";     // sync | ps-sync | ps-async | hogwild | local-sgd | gossip
  std::string dpVersion = "bucket";  // sync: naive (all-reduce per tensor after backward) | bucket
  double bucketMb = 0.25;            // sync bucket: gradient bucket size, MiB
  int zero = 0;                      // sync: ZeRO stage 0 | 1 | 2 | 3
  int servers = 1;                   // ps-*: parameter-server shards (hosted by the first ranks)
  int syncEvery = 4;                 // local-sgd: average parameters every H steps
  std::string topology = "ring";     // gossip: ring | random
  std::string scaling = "strong";    // strong: --batch is global; weak: --batch is per rank
  // Model-parallel family: world = dp x tp x pp (engine/parallel/process_grid.h).
  int dp = 0;                        // data-parallel degree; 0 = ranks / (tp x pp)
  int tp = 1;                        // tensor-parallel degree (Megatron FFN split)
  int pp = 1;                        // pipeline stages
  bool sp = false;                   // sequence parallelism (needs tp > 1)
  int microbatches = 1;              // pipeline micro-batches per step
  std::string schedule = "1f1b";     // pipeline schedule: gpipe | 1f1b
  // Mixture of experts (--model moe): each block's FFN becomes E experts behind a router.
  int experts = 4;
  int topk = 1;
  double capacityFactor = 1.25;      // expert capacity = factor x tokens x topk / experts
  double auxLoss = 0.0;              // Switch Transformer load-balancing loss coefficient
  int ep = 1;                        // expert-parallel degree (divides dp)

  int dpDegree() const { return dp > 0 ? dp : ranks / (tp * pp); }
  // --dp/--tp/--pp given without --ranks: the world is their product.
  void deriveRanks() {
    if (ranks == 1 && (dp > 0 || tp * pp > 1)) ranks = std::max(dp, 1) * tp * pp;
  }

  int globalBatch() const { return scaling == "weak" ? batch * ranks : batch; }

  std::optional<std::string> validate() const;  // "field: what is allowed", or nothing
  std::optional<std::string> validateLayout() const;  // the dp x tp x pp (x ep) constraints
  std::optional<std::string> validateDevice() const;  // device and kernel; a GPU for cuda
  nlohmann::json toJson() const;
};

// The GEMM kernels `--kernel` offers on a device, "naive, simd, ..." in ladder order ("" for a
// device that is neither cpu nor cuda); and whether `kernel` is one of them.
std::string gemmKernelNames(const std::string& device);
bool isGemmKernel(const std::string& device, const std::string& kernel);

// Reads keys named like the flags ("hidden", "data-dir", ...) into `config`. Unknown keys and
// wrong types throw ConfigError naming the key.
void applyJson(RunConfig& config, const nlohmann::json& j);
// Reads a --config file; throws ConfigError naming the path when missing or malformed.
void applyJsonFile(RunConfig& config, const std::string& path);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace paralab
