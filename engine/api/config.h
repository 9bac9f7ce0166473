// RunConfig: everything one training run is made of, as the CLI, a JSON --config file and the
// window set it. What each field means, its flag, range and help are in the settings table
// (run_settings.cpp, described by schema.h); validate() names the first bad field and what is
// allowed. See tests/engine/tst_config.cpp and `paralab-run --help`.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>

#include "run_choices.h"

namespace paralab {

// One setting's value, whatever its type (schema.h).
using SettingValue = std::variant<bool, int64_t, double, std::string>;

struct RunConfig {
  // One field per setting of the settings table (run_settings.cpp), which gives each its flag,
  // range or choices and help; the defaults are these initialisers.
  // The model and its data
  ModelKind model = ModelKind::Mlp;
  int layers = 2;
  int hidden = 128;
  int heads = 4;  // --model gpt: attention heads NH
  int seq = 64;   // --model gpt: context T, tokens per window
  Recompute recompute = Recompute::None;  // --model gpt: none | selective | full (model/gpt.h)
  Ffn ffn = Ffn::Dense;       // --model gpt: dense | moe, the blocks' FFN (model/gpt.h)
  int experts = 4;
  int topk = 1;
  double capacityFactor = 1.25;
  double auxLoss = 0.0;
  std::string dataset = "fashion-mnist";
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  int batch = 128;
  // --accumulate K: micro-batches of batch / K summed into one optimizer step (gradient
  // accumulation; --batch stays the global batch per optimizer step)
  int accumulate = 1;
  // --precision: fp32, or bf16 / fp16 mixed precision (train/precision.h); tf32 for --project
  Dtype precision = Dtype::Fp32;
  std::string lossScale = "dynamic";  // --loss-scale dynamic|N: fp16's loss scale
  int lossScaleWindow = 1000;          // clean steps before a dynamic scale doubles
  // Training
  int steps = 200;
  double lr = 0.05;
  std::string optimizer = "momentum";
  uint64_t seed = 1;
  int evalEvery = 50;
  int evalSamples = 2000;
  bool instrument = true;
  // Where the math runs, how many ranks and how they talk
  Device device = Device::Cpu;
  std::string kernel = "vendor";
  int ranks = 1;
  Backend backend = Backend::Thread;
  std::string allreduce = "default";
  std::string link = "none";  // emulated link inside a node (comm/link_model.h)
  int gpusPerNode = 0;         // --gpus-per-node G: ranks r, q share a node when r/G == q/G; 0: one
  std::string nodeLink = "none";  // emulated link between nodes
  double timeoutS = 60;
  // Faults on purpose (train/faults.h): "none", RANK=FACTOR, RANK@STEP
  std::string straggler = "none";
  std::string fail = "none";
  std::string hang = "none";  // --hang RANK@STEP: that rank skips a collective (emulated)
  double mtbfS = 0;           // --mtbf: emulated failures' mean gap, s (train/goodput.h); 0: none
  int checkpointEvery = 0;    // --checkpoint-every: steps between checkpoints (--mtbf; mpirun --elastic)
  bool elastic = false;       // --elastic: survivors of a --fail go on (train/elastic.h)
  std::string rejoin = "none";  // --rejoin RANK@STEP: the failed replica back (train/elastic.h)
  int serialMs = 0;  // --serial-ms: rank 0's serial section in every step (Amdahl's 1 - p)
  // The data-parallel family
  std::string strategy = "sync";
  DpVersion dpVersion = DpVersion::Bucket;
  double bucketMb = 0.25;
  int zero = 0;
  // --zero-shard node (HSDP): ZeRO's chunks over the ranks of a node, replicas across nodes
  ZeroShard zeroShard = ZeroShard::All;
  int servers = 1;
  int syncEvery = 4;
  std::string topology = "ring";
  Scaling scaling = Scaling::Strong;
  // The model-parallel family: world = dp x tp x pp x cp (parallel/process_grid.h); ep divides
  // dp
  int dp = 0;
  int tp = 1;
  int pp = 1;
  bool sp = false;
  // Under --sp, each tp all-gather and reduce-scatter cut into ring steps beside its GEMM
  // (parallel/tensor/tp_overlap.h): the collective-matmul decomposition
  bool tpOverlap = false;
  int cp = 1;                       // context parallelism: each window's tokens over cp ranks
  CpOrder cpOrder = CpOrder::Zigzag;  // which chunks a cp rank holds: zigzag | contiguous
  CpKind cpKind = CpKind::Ring;  // cp's attention: the ring | Ulysses's all-to-all over heads
  int microbatches = 1;
  std::string schedule = "1f1b";
  int virtualStages = 1;  // model chunks per pipeline stage (interleaved schedules)
  int ep = 1;
  // Settings a strategy declares for itself (its row's `settings`), by key; a setting at its
  // default is absent. A word given for an enum's setting that names none of its values
  // ("model": "resnet") is kept here under the setting's key, so validate() names it like any
  // other bad value (schema.cpp field()).
  std::map<std::string, SettingValue> extra;

  // Ranks one replica of the model spans: its tensor, pipeline and context splits.
  int modelSplit() const { return tp * pp * cp; }
  // A layout that cuts the model or its windows (ModelParallel, parallel/pipeline/model_parallel.cpp).
  bool modelParallel() const { return modelSplit() > 1; }
  int dpDegree() const { return dp > 0 ? dp : ranks / modelSplit(); }
  // The ranks ZeRO cuts each unit over: the data-parallel degree, or under --zero-shard node
  // the ranks of one node (the rest are replicas of them).
  int zeroShardDegree() const {
    return zeroShard == ZeroShard::Node && gpusPerNode > 0 ? std::min(gpusPerNode, dpDegree())
                                                           : dpDegree();
  }
  // Blocks with a mixture-of-experts FFN: the MoE MLP, or the GPT with --ffn moe.
  bool hasExperts() const {
    return model == ModelKind::Moe || (model == ModelKind::Gpt && ffn == Ffn::Moe);
  }
  // --dp/--tp/--pp/--cp given without --ranks: the world is their product.
  void deriveRanks() {
    if (ranks == 1 && (dp > 0 || modelSplit() > 1)) ranks = std::max(dp, 1) * modelSplit();
  }

  int globalBatch() const { return scaling == Scaling::Weak ? batch * ranks : batch; }

  std::optional<std::string> validate() const;  // "field: what is allowed", or nothing
  // What only a combination of settings can get wrong, nothing of this machine: the strategy's
  // row, settings given where they do not apply, the batch over the ranks, the layout. Part of
  // validate(); the projection (projection/projection.h) asks it of a cluster's layouts.
  std::optional<std::string> validateRules() const;
  std::optional<std::string> validateLayout() const;  // the dp x tp x pp x cp (x ep) constraints
  std::optional<std::string> validateDevice() const;  // device and kernel; a GPU for cuda
  nlohmann::json toJson() const;
};

// The GEMM kernels `--kernel` offers on a device, "naive, simd, ..." in ladder order; and
// whether `kernel` is one of them.
std::string gemmKernelNames(Device device);
bool isGemmKernel(Device device, const std::string& kernel);

// Reads keys named like the flags ("hidden", "data-dir", ...) into `config`. Unknown keys and
// wrong types throw ConfigError naming the key.
void applyJson(RunConfig& config, const nlohmann::json& j);
// Reads a --config file; throws ConfigError naming the path when missing or malformed. Returns
// the keys the file gave.
std::set<std::string> applyJsonFile(RunConfig& config, const std::string& path);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace paralab
