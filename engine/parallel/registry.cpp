// The one strategy table.
//
// Adding a strategy:
//   1. Write engine/parallel/<name>.cpp with a Strategy subclass (start from ReplicaStrategy
//      in replica.h for data-parallel kinds) and a `make...` function; every collective it
//      issues is visible in that file.
//   2. Add a row below: its name is the --strategy value; it lists the run settings it reads
//      (`uses`) and declares its own (`settings`, see schema.h), which the command line, the
//      --config file and the window's controls then offer. Every
//      strategy runs with --device cuda: every buffer it touches made through the rank's
//      Compute (device/compute.h), its collectives given the buffers' Device after
//      Compute::sync() (see grad_sync.cpp). It runs on --backend nccl too, so it calls
//      only what NcclComm serves (comm_nccl.cpp; cudaRefusal below lists it).
//   3. Ship with it: a test against the serial run on the same global batch and seed
//      (tests/engine/tst_parallel_equals_serial.cpp, or a convergence test if asynchronous),
//      its memory and traffic checked against the formula its lesson states, a lesson step.
#include "device/compute.h"
#include "parallel/strategy.h"
#include "parallel/data/zero.h"
#include "parallel/data/zero_policy.h"

namespace paralab {

std::unique_ptr<Strategy> makeDataParallel(RankContext& ctx);
std::unique_ptr<Strategy> makePsSync(RankContext& ctx);          // param_server.cpp
std::unique_ptr<Strategy> makePsAsync(RankContext& ctx);         // param_server.cpp
std::unique_ptr<Strategy> makeHogwild(RankContext& ctx);         // hogwild.cpp
std::unique_ptr<Strategy> makeLocalSgd(RankContext& ctx);        // local_sgd.cpp
std::unique_ptr<Strategy> makeGossip(RankContext& ctx);          // gossip.cpp
std::unique_ptr<Strategy> makeModelParallel(RankContext& ctx);   // model_parallel.cpp
std::unique_ptr<Strategy> makeExpertParallel(RankContext& ctx);  // expert_parallel.cpp
std::unique_ptr<Strategy> makeFedAvg(RankContext& ctx);          // fedavg.cpp
std::vector<Setting> fedAvgSettings();                           // fedavg.cpp

void ensureCompute(RankContext& ctx, std::unique_ptr<Compute>& own) {
  if (ctx.compute) return;
  own = Compute::cpu();
  ctx.compute = own.get();
}

// [SECTION] What each row cannot run with, in words

namespace {

Setting::Why hogwildNeedsThreads(const RunConfig& c) {
  if (c.backend == Backend::Thread) return std::nullopt;
  return std::string("strategy: hogwild needs ranks that share memory (--backend thread)");
}
Setting::Why modelParallelNeedsSync(const RunConfig& c) {
  if (c.strategy == "sync") return std::nullopt;
  return std::string("strategy: tensor and pipeline parallelism compose with --strategy sync only");
}
Setting::Why moeLayout(const RunConfig& c) {
  const std::string which = c.model == ModelKind::Moe ? "--model moe" : "--ffn moe";
  if (c.modelParallel())
    return "model: " + which +
           " composes with data and expert parallelism only (allowed: tp = pp = cp = 1)";
  if (c.strategy != "sync")
    return "model: " + which + " trains with --strategy sync (dp and ep are its axes)";
  return std::nullopt;
}

// A ZeRO stage's row: sync data parallelism with the row's name and summary from its policy.
StrategyInfo zeroRow(ZeroStage stage, std::unique_ptr<Strategy> (*make)(RankContext&)) {
  const ZeroPolicy& z = zeroPolicy(stage);
  return {z.row, z.summary, true, false, make, ChosenBy::ZeroStage};
}

// The row of --zero N (N != 0); a stage with no policy names no row, refused as unavailable.
std::string zeroRowName(int n) {
  const std::optional<ZeroStage> stage = zeroStageOf(n);
  return stage ? zeroPolicy(*stage).row : "zero-" + std::to_string(n);
}

}  // namespace

const std::vector<StrategyInfo>& strategyTable() {
  // Sync's data-parallel axis is where ZeRO, the gradient buckets and the model-parallel
  // layouts live; the other strategies combine whole replicas their own way.
  const std::vector<std::string> syncUses = {"zero", "dp-version", "bucket-mb", "tp", "pp", "cp"};
  static const std::vector<StrategyInfo> table = {
      {"sync",
       "Synchronous data parallel: gradients summed by all-reduce (naive, or bucketed with "
       "overlap)",
       true, false, makeDataParallel, ChosenBy::StrategyFlag, syncUses},
      zeroRow(ZeroStage::OptimizerState, makeZero1),
      zeroRow(ZeroStage::Gradients, makeZero2),
      zeroRow(ZeroStage::Parameters, makeZero3),
      {"ps-sync",
       "Parameter server, synchronous: gradient shards reduced onto their servers, updated, "
       "broadcast back",
       true,
       false,
       makePsSync,
       ChosenBy::StrategyFlag,
       {"servers"}},
      {"ps-async",
       "Parameter server, asynchronous: each worker's push applied at once and answered with the "
       "fresh shard (stale)",
       false,
       false,
       makePsAsync,
       ChosenBy::StrategyFlag,
       {"servers"}},
      {"hogwild",
       "Hogwild!: thread ranks update one shared model with no locks (races by design)",
       false,
       true,
       makeHogwild,
       ChosenBy::StrategyFlag,
       {},
       {},
       hogwildNeedsThreads},
      {"local-sgd",
       "Local SGD: ranks train alone and average their parameters every --sync-every steps",
       false,
       false,
       makeLocalSgd,
       ChosenBy::StrategyFlag,
       {"sync-every"}},
      {"gossip",
       "Gossip (decentralised SGD): each rank averages with its ring or random neighbours only",
       false,
       false,
       makeGossip,
       ChosenBy::StrategyFlag,
       {"topology"}},
      {"fedavg",
       "Federated averaging: simulated clients with label-skewed data train locally; the server "
       "averages a sample of them each round",
       false,
       false,
       makeFedAvg,
       ChosenBy::StrategyFlag,
       {},
       fedAvgSettings()},
      {"model-parallel",
       "Tensor (+ sequence) and pipeline parallelism (GPipe, 1F1B), composed with data parallelism "
       "on the dp axis",
       true,
       false,
       makeModelParallel,
       ChosenBy::Layout,
       {},
       {},
       modelParallelNeedsSync},
      {"moe",
       "Mixture of experts (--model moe, or --model gpt --ffn moe): experts spread over --ep "
       "ranks, tokens routed by all-to-all; dp on the rest",
       true,
       false,
       makeExpertParallel,
       ChosenBy::Layout,
       {},
       {},
       moeLayout},
  };
  return table;
}

// The table's row for a run (ChosenBy): a layout first, as it composes with sync data
// parallelism on its dp axis; else --strategy, with --zero picking sync's ZeRO rows.
static std::string rowName(const RunConfig& config) {
  return config.hasExperts()             ? "moe"
         : config.modelParallel()         ? "model-parallel"
         : config.zero != 0               ? zeroRowName(config.zero)
                                          : config.strategy;
}

std::optional<std::string> cudaRefusal(const RunConfig& config) {
  if (config.device != Device::Cuda) return std::nullopt;
  // GPU buffers travel through ThreadComm's device path (thread ranks, any number per GPU) or
  // NcclComm (one rank per GPU: thread ranks of this process, or a process each under mpirun;
  // RunConfig::validate counts the GPUs). MpiComm moves host buffers only. Every strategy runs
  // on both: the collectives they call on device buffers (all-reduce, reduce-scatter,
  // all-gather, broadcast, reduce, all-to-all(v), send/recv, split) are NCCL's own, and NcclComm
  // stages the one on a host buffer (the spread's all-reduce Max of local SGD and gossip)
  // through the GPU.
  if (config.backend == Backend::Mpi)
    return "device: cuda needs --backend thread or nccl; --backend mpi moves host buffers only";
  return std::nullopt;
}

const StrategyInfo& strategyFor(const RunConfig& config) {
  const std::string name = rowName(config);
  for (const StrategyInfo& s : strategyTable())
    if (name == s.name) return s;
  std::string allowed;
  for (const StrategyInfo& s : strategyTable())
    allowed += (allowed.empty() ? "" : ", ") + std::string(s.name);
  throw ConfigError("strategy: '" + name + "' is not available (available: " + allowed + ")");
}

}  // namespace paralab
