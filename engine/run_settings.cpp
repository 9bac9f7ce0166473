// The run settings table: every setting of a run, once (schema.h says what each column
// means). Order is precedence: whether a setting applies depends only on settings above it.
// The window shows them by group, in this order within a group. Strategies add their own
// settings through their row of the strategy table (parallel/registry.cpp).
// See tests/engine/tst_schema.cpp and `paralab-run --help`.
#include <algorithm>

#include "capabilities.h"
#include "comm/link_model.h"
#include "parallel/data/zero_policy.h"
#include "parallel/strategy.h"
#include "schema.h"
#include "train/faults.h"

namespace paralab {

namespace {

using Why = Setting::Why;

// The --strategy values and what each one is.
std::vector<SettingChoice> strategyChoices(const RunConfig&) {
  std::vector<SettingChoice> out;
  for (const StrategyInfo& s : strategyTable())
    if (s.chosenBy == ChosenBy::StrategyFlag) out.push_back({s.name, s.name, s.summary});
  return out;
}

// ZeRO stages: the policy table's rows (parallel/data/zero_policy.h).
std::vector<SettingChoice> zeroChoices(const RunConfig&) {
  std::vector<SettingChoice> out;
  for (const ZeroPolicy& z : zeroPolicies()) {
    const std::string stage = std::to_string(int(z.stage));
    out.push_back({stage, stage + ": " + z.title, z.summary});
  }
  return out;
}

// The link profiles in resources/links, shared memory first, then fastest to slowest. Read
// once: validation asks on every check, and the files do not change under a running program.
std::vector<SettingChoice> readLinkChoices() {
  std::vector<LinkProfile> profiles;
  for (const std::string& name : linkProfileNames()) {
    try {
      profiles.push_back(loadLinkProfile(name));
    } catch (const std::exception&) {  // a malformed profile: --link names it when chosen
      profiles.push_back(LinkProfile{name, name, 0, 0});
    }
  }
  std::stable_sort(profiles.begin(), profiles.end(), [](const auto& a, const auto& b) {
    return a.emulated() != b.emulated() ? !a.emulated() : a.bandwidthGBps > b.bandwidthGBps;
  });
  std::vector<SettingChoice> out;
  for (const LinkProfile& p : profiles) {
    if (!p.emulated()) {
      out.push_back({p.name, "None (" + p.title + ")",
                     "Thread ranks copy through shared memory at full speed"});
      continue;
    }
    char about[160];
    std::snprintf(about, sizeof about,
                  "%s: %g µs per transfer, %g GB/s per direction (emulated: transfers are held "
                  "back to this speed)",
                  p.title.c_str(), p.latencyUs, p.bandwidthGBps);
    out.push_back({p.name, p.title + " — emulated", about});
  }
  return out;
}
std::vector<SettingChoice> linkChoices(const RunConfig&) {
  static const std::vector<SettingChoice> choices = readLinkChoices();
  return choices;
}

std::vector<SettingChoice> kernelChoices(const RunConfig& c) {
  std::vector<SettingChoice> out;
  for (const GemmChoice& k : gemmChoices(c.device)) out.push_back({k.name, k.name, k.summary});
  return out;
}

// Images for the MLP and the MoE, text for the GPT.
std::vector<SettingChoice> datasetChoices(const RunConfig& c) {
  if (c.model == "gpt")
    return {{"fortunes", "Fortunes (text)", "Debian's quotations and literature, 2.5 MB"},
            {"synthetic", "Synthetic text", "Words with a fixed successor each, generated"}};
  return {{"fashion-mnist", "Fashion-MNIST", "Zalando's clothing images"},
          {"synthetic", "Synthetic (Gaussian blobs)", "Generated in memory"}};
}

// A setting only some strategies read applies under the rows that list it (`uses`).
Why usedByStrategy(const RunConfig& c, const std::string& key) {
  std::string users;
  for (const StrategyInfo& s : strategyTable()) {
    if (s.chosenBy != ChosenBy::StrategyFlag || std::find(s.uses.begin(), s.uses.end(), key) == s.uses.end()) continue;
    if (c.strategy == s.name) return std::nullopt;
    users += (users.empty() ? "" : ", ") + std::string(s.name);
  }
  return "applies to --strategy " + users + " (the strategy is " + c.strategy + ")";
}
auto usedBy(std::string key) {
  return [key](const RunConfig& c) { return usedByStrategy(c, key); };
}
Why gptOnly(const RunConfig& c) {
  if (c.model == "gpt") return std::nullopt;
  return std::string("belongs to the GPT (--model gpt)");
}
Why moeOnly(const RunConfig& c) {
  if (c.hasExperts()) return std::nullopt;
  return std::string("belongs to the mixture of experts (--model moe, or --model gpt --ffn moe)");
}
// Tensor and pipeline parallelism cut sync's replicas; the MoE spreads experts instead.
// What the mixture of experts' row (parallel/registry.cpp) refuses when `change` sets one
// setting away from its default in an MoE run: its reason, without the "model: " it starts
// with. The row is the one place the MoE's layout rules are written.
Why refusedUnderMoe(const RunConfig& c, void (*change)(RunConfig&)) {
  if (!c.hasExperts()) return std::nullopt;
  RunConfig probe;
  probe.model = c.model;
  probe.ffn = c.ffn;
  change(probe);
  Why why = strategyFor(probe).incompatible(probe);
  if (why) why = why->substr(why->find(": ") + 2);
  return why;
}
// Tensor and pipeline parallelism cut sync's replicas; the MoE spreads experts instead.
Why modelParallel(const RunConfig& c, const std::string& key) {
  if (auto why = refusedUnderMoe(c, [](RunConfig& p) { p.tp = 2; })) return why;
  return usedByStrategy(c, key);
}
Why pipelineOnly(const RunConfig& c) {
  if (c.pp > 1) return std::nullopt;
  return std::string("belongs to a pipeline (--pp 2 or more)");
}
// Micro-batches cut each replica's batch in a tensor- or pipeline-parallel layout.
Why modelParallelLayout(const RunConfig& c) {
  if (c.modelParallel()) return std::nullopt;
  return std::string(
      "belongs to tensor, pipeline or context parallelism (--tp, --pp or --cp 2 or more)");
}
// Context parallelism cuts the GPT's windows, on sync's replicas.
Why contextParallel(const RunConfig& c) {
  if (auto why = gptOnly(c)) return why;
  if (auto why = refusedUnderMoe(c, [](RunConfig& p) { p.cp = 2; })) return why;
  return usedByStrategy(c, "cp");
}

constexpr const char* kExecution = "Execution";
constexpr const char* kParallelism = "Parallelism";
constexpr const char* kModelParallelism = "Model parallelism";
constexpr const char* kLinks = "Interconnect and kernels";
constexpr const char* kModel = "Model";
constexpr const char* kData = "Data";
constexpr const char* kTraining = "Training";

std::vector<Setting> coreSettings() {
  std::vector<Setting> t;
  // [SECTION] Where the math runs and how many ranks
  t.push_back(field("device", &RunConfig::device)
                  .in(kExecution, "Device")
                  .describe("Where the ranks compute (rank r on GPU r mod G)",
                            "The CPU, or GPUs (tensors in device memory). The GEMM kernel list "
                            "follows the device.")
                  .oneOf({{"cpu", "CPU", "The ranks compute on this machine's CPU cores"},
                          {"cuda", "GPU (CUDA)", "Tensors in GPU memory, CUDA kernels"}}));
  t.push_back(field("kernel", &RunConfig::kernel)
                  .in(kLinks, "GEMM kernel")
                  .describe("The GEMM of every layer: a rung of the device's ladder",
                            "CPU: naive → SIMD → threaded → tiled → OpenBLAS; GPU: naive → "
                            "coalesced → tiled → tensor cores → cuBLAS. Hover an entry for what "
                            "it does.")
                  .oneOf(kernelChoices, "device"));
  t.push_back(field("backend", &RunConfig::backend)
                  .in(kExecution, "Ranks run as")
                  .describe("How ranks are made and talk",
                            "thread: ranks as threads of this process; mpi: one process each, "
                            "under mpirun; nccl: --device cuda, one rank per GPU. The window "
                            "launches mpi and nccl runs as mpirun jobs of paralab-run.")
                  .oneOf({{"thread", "Threads", "Ranks as threads of this process"},
                          {"mpi", "MPI processes", "One process per rank, launched by mpirun"},
                          {"nccl", "NCCL, a process per GPU",
                           "One process per GPU under mpirun, talking through NCCL"}})
                  .fixedPerRun());
  t.push_back(field("ranks", &RunConfig::ranks)
                  .in(kExecution, "Ranks")
                  .describe("Ranks in all: how many workers train together (the world size)",
                            "With strong scaling each gets 1/N of the global batch.")
                  .range(1, 64)
                  .onlyParallel());
  // [SECTION] The model and its data (fixed for a run: they define what is trained)
  t.push_back(field("model", &RunConfig::model)
                  .in(kModel, "Kind")
                  .describe("The model: a residual MLP, a mixture of experts, or a GPT",
                            "MLP: residual blocks of LayerNorm → H→4H → GELU → 4H→H. Mixture of "
                            "experts: each block's FFN becomes E experts behind a router. GPT: "
                            "a character-level transformer, each block causal self-attention "
                            "then the same FFN, trained on text.")
                  .oneOf({{"mlp", "MLP", "Residual blocks of LayerNorm, H→4H, GELU, 4H→H"},
                          {"moe", "Mixture of experts",
                           "Each block's FFN becomes E experts behind a router"},
                          {"gpt", "GPT (characters)",
                           "Blocks of causal self-attention and the FFN, predicting the next "
                           "character"}})
                  .fixedPerRun());
  t.push_back(field("layers", &RunConfig::layers)
                  .in(kModel, "Residual blocks L")
                  .describe("Residual blocks L: how deep the model is",
                            "Each block adds about 8·H² parameters and one forward and backward "
                            "pass of its two matrix products.")
                  .range(1, 64)
                  .fixedPerRun());
  t.push_back(field("hidden", &RunConfig::hidden)
                  .in(kModel, "Hidden width H")
                  .describe("Hidden width H of every residual block",
                            "The model is 784 → H, then L blocks of [LayerNorm → H→4H → GELU → "
                            "4H→H], then H → 10; parameters grow as about 8·L·H².")
                  .range(1, 8192)
                  .units("", 16)
                  .fixedPerRun());
  t.push_back(field("heads", &RunConfig::heads)
                  .in(kModel, "Attention heads")
                  .describe("Attention heads NH of the GPT (they split the width H)",
                            "Each head attends with H/NH of the width; tensor parallelism "
                            "splits attention by heads.")
                  .range(1, 256)
                  .appliesWhen(gptOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("seq", &RunConfig::seq)
                  .in(kModel, "Context T")
                  .describe("Context length T of the GPT: characters a sample holds",
                            "Attention's scores and probabilities grow as T² per head.")
                  .range(1, 4096)
                  .appliesWhen(gptOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("recompute", &RunConfig::recompute)
                  .in(kModel, "Recomputation")
                  .describe("Activation recomputation of the GPT: what the forward keeps for "
                            "the backward",
                            "None keeps every block's activations. Selective drops attention's "
                            "probabilities (B·heads·T² per block) and recomputes them before "
                            "the backward. Full keeps only each block's input and runs the "
                            "block's forward again in its backward: about one more forward "
                            "(under --tp its collectives too).")
                  .oneOf({{"none", "None", "Keep every activation"},
                          {"selective", "Selective", "Recompute attention's probabilities"},
                          {"full", "Full", "Keep block inputs only; recompute each block"}})
                  .appliesWhen(gptOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("ffn", &RunConfig::ffn)
                  .in(kModel, "FFN")
                  .describe("The GPT blocks' feed-forward network: dense, or a mixture of experts",
                            "Dense: every token through one C→4C→C FFN. Mixture of experts: a "
                            "router sends each token to its top-k of --experts FFNs, which "
                            "--ep spreads over ranks (tokens travel by all-to-all).")
                  .oneOf({{"dense", "Dense", "One FFN for every token"},
                          {"moe", "Mixture of experts", "Each token to its top-k experts"}})
                  .appliesWhen(gptOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("experts", &RunConfig::experts)
                  .in(kModel, "Experts")
                  .describe("Experts per block (E) of the mixture of experts")
                  .range(1, 256)
                  .appliesWhen(moeOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("topk", &RunConfig::topk)
                  .in(kModel, "Top-k")
                  .describe("Experts each token is routed to (top-k of the router)")
                  .range(1, 256)
                  .upTo("experts", [](const RunConfig& c) { return c.experts; })
                  .appliesWhen(moeOnly)
                  .partOfAChoice());
  t.push_back(field("capacity-factor", &RunConfig::capacityFactor)
                  .in(kModel, "Capacity factor")
                  .describe("Expert capacity = factor × tokens × top-k / experts",
                            "Tokens routed to a full expert are dropped (they skip the FFN).")
                  .above(0, 64)
                  .appliesWhen(moeOnly)
                  .partOfAChoice());
  t.push_back(field("aux-loss", &RunConfig::auxLoss)
                  .in(kModel, "Load-balancing loss")
                  .describe("Switch Transformer load-balancing loss coefficient (0 = off)")
                  .range(0, 10)
                  .appliesWhen(moeOnly)
                  .partOfAChoice());
  t.push_back(field("dataset", &RunConfig::dataset)
                  .in(kData, "Dataset")
                  .describe("Training data",
                            "Fashion-MNIST: 60 000 clothing images of 28×28 pixels in 10 "
                            "classes. Synthetic: 10 overlapping Gaussian blobs seen through a "
                            "fixed random projection as 784 pixels, generated in memory "
                            "(nothing to install, quick to start). Fortunes: 2.5 MB of "
                            "English quotations and literature from Debian's fortunes, for the "
                            "GPT; under --model gpt, synthetic is a generated text instead.")
                  .oneOf(datasetChoices, "model")
                  .withChoiceNoun("a data set of the model (images for mlp and moe, text for gpt)")
                  .fixedPerRun());
  t.push_back(field("data-dir", &RunConfig::dataDir)
                  .in(kData, "Data folder")
                  .describe("Folder of the Fashion-MNIST .gz files (the fortunes files for "
                            "--dataset fortunes; left at this default, theirs)")
                  .fixedPerRun()
                  .notInWindow());
  t.push_back(field("batch", &RunConfig::batch)
                  .in(kData, "Batch")
                  .describe("Batch B: samples per step (global with strong scaling, per rank "
                            "with weak)",
                            "Larger batches raise samples/s until the machine is busy, and take "
                            "fewer, larger steps.")
                  .range(1, 65536)
                  .units("", 32));
  // [SECTION] Training
  t.push_back(field("lr", &RunConfig::lr)
                  .in(kTraining, "Learning rate")
                  .describe("Learning rate: how far each step moves the parameters",
                            "Too small learns slowly; too large makes the loss jump or diverge.")
                  .above(0, 10));
  t.push_back(
      field("optimizer", &RunConfig::optimizer)
          .in(kTraining, "Optimizer")
          .describe("How gradients become updates",
                    "SGD: parameters −= lr · gradient. Momentum: keeps a running "
                    "velocity (one extra copy of the parameters). Adam: per-parameter "
                    "step sizes (two extra copies).")
          .oneOf({{"sgd", "SGD", ""}, {"momentum", "SGD with momentum", ""}, {"adam", "Adam", ""}})
          .fixedPerRun());
  t.push_back(field("steps", &RunConfig::steps)
                  .in(kTraining, "Steps")
                  .describe("Steps to run before the run finishes")
                  .range(0, 10'000'000)
                  .zeroIs("until stopped")
                  .units("", 100));
  t.push_back(field("eval-every", &RunConfig::evalEvery)
                  .in(kTraining, "Test accuracy every")
                  .describe("Measure test accuracy every K steps, on held-out samples")
                  .range(0, 1'000'000)
                  .zeroIs("never")
                  .units("steps", 10));
  t.push_back(field("eval-samples", &RunConfig::evalSamples)
                  .in(kTraining, "Test samples")
                  .describe("Test samples per evaluation")
                  .range(0, 1'000'000)
                  .zeroIs("all")
                  .notInWindow());
  t.push_back(field("seed", &RunConfig::seed)
                  .in(kTraining, "Seed")
                  .describe("Seed of the initial weights, the data order and the synthetic data",
                            "The same seed and settings give the same loss curve.")
                  .range(0, 2147483647)
                  .fixedPerRun());
  t.push_back(field("instrument", &RunConfig::instrument)
                  .in(kTraining, "Record spans")
                  .describe("Record every rank's spans for the timeline (off only to measure "
                            "their cost)")
                  .notInWindow());
  // [SECTION] The data-parallel family: how replicas combine
  t.push_back(field("strategy", &RunConfig::strategy)
                  .in(kParallelism, "Strategy")
                  .describe("How the ranks combine their work",
                            "Hover an entry for its summary. Synchronous kinds reproduce the "
                            "serial loss curve; asynchronous ones trade staleness for speed.")
                  .oneOf(strategyChoices)
                  .appliesWhen([](const RunConfig& c) {
                    return refusedUnderMoe(c, [](RunConfig& p) { p.strategy = "ps-sync"; });
                  })
                  .onlyParallel());
  t.push_back(field("zero", &RunConfig::zero)
                  .in(kParallelism, "ZeRO stage")
                  .describe("ZeRO stage: shard the optimizer state (1), also the gradients (2), "
                            "also the parameters (3, as FSDP) over the data-parallel ranks",
                            "Rajbhandari et al. 2020: memory per rank traded for gathers.")
                  .oneOf(zeroChoices)
                  .withChoiceNoun("a ZeRO stage")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (auto why = refusedUnderMoe(c, [](RunConfig& p) { p.zero = 1; })) return why;
                    if (usedByStrategy(c, "zero"))
                      return std::string("ZeRO stages apply to --strategy sync only");
                    return std::nullopt;
                  })
                  .onlyParallel());
  t.push_back(field("dp-version", &RunConfig::dpVersion)
                  .in(kParallelism, "Gradient sync")
                  .describe("How sync all-reduces the gradients",
                            "per-tensor: one all-reduce per gradient tensor after backward. bucket: "
                            "gradients grouped into buckets, each all-reduced while backward "
                            "goes on.")
                  .oneOf({{"bucket", "bucketed, overlapped", "Buckets all-reduced during backward"},
                          {"per-tensor", "per tensor, after backward",
                           "One all-reduce per gradient tensor once backward is done"}})
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (auto why = usedByStrategy(c, "dp-version")) return why;
                    if (c.zero == 0) return std::nullopt;
                    return std::string("ZeRO stages reduce-scatter their own gradient shards");
                  })
                  .onlyParallel()
                  .partOfAChoice());
  t.push_back(field("bucket-mb", &RunConfig::bucketMb)
                  .in(kParallelism, "Bucket size")
                  .describe("Gradient bucket size of --dp-version bucket")
                  .above(0, 1024)
                  .units("MiB")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (auto why = usedByStrategy(c, "bucket-mb")) return why;
                    if (c.dpVersion == "bucket" && c.zero == 0) return std::nullopt;
                    return std::string("belongs to --dp-version bucket");
                  })
                  .onlyParallel()
                  .partOfAChoice());
  t.push_back(field("servers", &RunConfig::servers)
                  .in(kParallelism, "Servers")
                  .describe("Parameter-server shards, hosted by the first ranks",
                            "The other ranks push gradients to them and pull fresh parameters.")
                  .range(1, 64)
                  .upTo("ranks", [](const RunConfig& c) { return c.ranks; })
                  .appliesWhen(usedBy("servers"))
                  .onlyParallel()
                  .partOfAChoice());
  t.push_back(field("sync-every", &RunConfig::syncEvery)
                  .in(kParallelism, "Average every")
                  .describe("Local SGD: ranks average their parameters every H steps",
                            "Fewer all-reduces, some drift between them.")
                  .range(1, 10000)
                  .units("steps")
                  .appliesWhen(usedBy("sync-every"))
                  .onlyParallel()
                  .partOfAChoice());
  t.push_back(field("topology", &RunConfig::topology)
                  .in(kParallelism, "Neighbours")
                  .describe("Gossip: whom each rank averages with after its step")
                  .oneOf({{"ring", "ring neighbours", "Its two ring neighbours"},
                          {"random", "random pairs", "A random partner each step"}})
                  .appliesWhen(usedBy("topology"))
                  .onlyParallel()
                  .partOfAChoice());
  t.push_back(field("scaling", &RunConfig::scaling)
                  .in(kParallelism, "Scaling")
                  .describe("What --batch counts: the global batch (strong) or each rank's (weak)",
                            "Strong scaling splits a fixed batch over the ranks (Amdahl); weak "
                            "scaling gives every rank the batch, so the work grows with N "
                            "(Gustafson).")
                  .oneOf({{"strong", "Strong (fixed global batch)", ""},
                          {"weak", "Weak (batch per rank)", ""}})
                  .onlyParallel());
  // [SECTION] Model parallelism: world = dp × tp × pp × cp (parallel/process_grid.h)
  t.push_back(field("dp", &RunConfig::dp)
                  .in(kModelParallelism, "Data parallel (dp)")
                  .describe("Data-parallel degree: replicas of the (tensor- and pipeline-split) "
                            "model, each on its own slice of the batch")
                  .range(0, 64)
                  .zeroIs("auto: ranks / (tp × pp × cp)")
                  .onlyParallel());
  t.push_back(field("tp", &RunConfig::tp)
                  .in(kModelParallelism, "Tensor parallel (tp)")
                  .describe("Tensor-parallel degree (Megatron-LM): each block's FFN split over "
                            "tp ranks",
                            "The tp ranks all-reduce the activations twice per block.")
                  .range(1, 64)
                  .appliesWhen([](const RunConfig& c) { return modelParallel(c, "tp"); })
                  .onlyParallel());
  t.push_back(field("sp", &RunConfig::sp)
                  .in(kModelParallelism, "Sequence parallel")
                  .describe("Sequence parallelism (Korthikanti et al. 2022): LayerNorm and "
                            "residual split by rows over the tp ranks",
                            "Each tp rank keeps 1/tp of those activations.")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.tp > 1) return std::nullopt;
                    return std::string(
                        "sequence parallelism needs tensor parallelism (--tp 2 "
                        "or more)");
                  })
                  .onlyParallel());
  t.push_back(field("cp", &RunConfig::cp)
                  .in(kModelParallelism, "Context parallel (cp)")
                  .describe("Context-parallel degree (ring attention, Liu et al. 2023): each "
                            "window's tokens split over cp ranks",
                            "Each cp rank keeps 1/cp of every window's activations; attention "
                            "passes the key/value blocks around the ring, cp − 1 steps each way.")
                  .range(1, 64)
                  .appliesWhen(contextParallel)
                  .onlyParallel());
  t.push_back(field("cp-order", &RunConfig::cpOrder)
                  .in(kModelParallelism, "Context chunks")
                  .describe("Which chunks of a window each cp rank holds",
                            "zigzag: chunks i and 2cp − 1 − i of 2cp, so every rank has as "
                            "much causal attention to compute; contiguous: chunk i of cp, so "
                            "the last rank computes the most.")
                  .oneOf({{"zigzag", "Zig-zag (balanced)", ""},
                          {"contiguous", "Contiguous (unbalanced)", ""}})
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.cp > 1) return std::nullopt;
                    return std::string("belongs to context parallelism (--cp 2 or more)");
                  })
                  .onlyParallel()
                  .partOfAChoice(false));
  t.push_back(field("pp", &RunConfig::pp)
                  .in(kModelParallelism, "Pipeline stages (pp)")
                  .describe("Pipeline stages: the blocks cut into pp consecutive stages",
                            "Micro-batches flow through them.")
                  .range(1, 64)
                  .appliesWhen([](const RunConfig& c) { return modelParallel(c, "pp"); })
                  .onlyParallel());
  t.push_back(field("microbatches", &RunConfig::microbatches)
                  .in(kModelParallelism, "Micro-batches")
                  .describe("Micro-batches each replica's batch is cut into per step",
                            "More of them shrink the bubble (P − 1)/(M + P − 1) but make each "
                            "one smaller.")
                  .range(1, 1024)
                  .appliesWhen(modelParallelLayout)
                  .onlyParallel()
                  .partOfAChoice(false));
  t.push_back(field("schedule", &RunConfig::schedule)
                  .in(kModelParallelism, "Schedule")
                  .describe("Pipeline schedule",
                            "GPipe: all forwards, then all backwards (keeps M micro-batches of "
                            "activations). 1F1B: one forward, one backward once the pipe is "
                            "full (keeps at most P).")
                  .oneOf({{"1f1b", "1F1B", ""}, {"gpipe", "GPipe", ""}})
                  .appliesWhen(pipelineOnly)
                  .onlyParallel()
                  .partOfAChoice(false));
  t.push_back(field("ep", &RunConfig::ep)
                  .in(kModelParallelism, "Expert parallel (ep)")
                  .describe("Expert-parallel degree: the experts spread over ep ranks (divides "
                            "dp)",
                            "Tokens travel to their expert by all-to-all.")
                  .range(1, 64)
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.hasExperts()) return std::nullopt;
                    return std::string(
                        "expert parallelism needs experts (--model moe, or --model gpt --ffn moe)");
                  })
                  .onlyParallel());
  // [SECTION] How ranks talk
  t.push_back(field("allreduce", &RunConfig::allreduce)
                  .in(kLinks, "All-reduce algorithm")
                  .describe("The all-reduce algorithm of thread ranks",
                            "naive: every rank sends its whole vector to every other; ring: "
                            "reduce-scatter then all-gather, 2(N−1) steps.")
                  .oneOf({{"default", "default", "The backend's own (ring on threads)"},
                          {"ring", "ring", "Reduce-scatter then all-gather around a ring"},
                          {"naive", "naive", "Every rank receives and sums every other's"}})
                  .onlyParallel());
  t.push_back(field("link", &RunConfig::link)
                  .in(kLinks, "Interconnect")
                  .describe("Emulated interconnect between thread ranks",
                            "Except for none, each transfer takes at least the link's latency + "
                            "bytes / bandwidth, so step times show what a slower link does.")
                  .oneOf(linkChoices)
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.backend == "thread") return std::nullopt;
                    return std::string(
                        "emulated links need --backend thread (real processes "
                        "use their real links)");
                  }));
  t.push_back(field("timeout", &RunConfig::timeoutS)
                  .in(kLinks, "Timeout")
                  .describe("Seconds before a stuck collective aborts the run")
                  .above(0, 86400)
                  .units("s")
                  .notInWindow());
  // [SECTION] Faults on purpose (train/faults.h): emulated in the forward and backward the
  // data-parallel family shares (parallel/data/replica.cpp)
  const auto replicasOnly = [](const RunConfig& c) -> Why {
    if (!c.hasExperts() && c.tp == 1 && c.pp == 1) return std::nullopt;
    return std::string(
        "emulated in the data-parallel strategies' forward and backward (not with --tp, --pp, "
        "--model moe or --ffn moe)");
  };
  const auto formOf = [](auto parse, std::string RunConfig::*member) {
    return [parse, member](const RunConfig& c) -> Why {
      try {
        parse(c.*member, c.ranks);
      } catch (const ConfigError& e) {
        return std::string(e.what());
      }
      return std::nullopt;
    };
  };
  t.push_back(field("straggler", &RunConfig::straggler)
                  .in(kExecution, "Straggler")
                  .describe("A slow rank: RANK=FACTOR makes that rank's compute FACTOR times as "
                            "long (emulated)",
                            "After its real forward and backward the rank sleeps FACTOR − 1 "
                            "times their measured time. Synchronous strategies wait for it; "
                            "asynchronous ones need not.")
                  .shaped(kStragglerForm, formOf(parseStraggler, &RunConfig::straggler))
                  .appliesWhen(replicasOnly)
                  .onlyParallel());
  t.push_back(field("fail", &RunConfig::fail)
                  .in(kExecution, "Failing rank")
                  .describe("A failing rank: RANK@STEP makes that rank throw in that step",
                            "A real exception inside the rank's step: the others are released "
                            "from their collectives and the run ends with one message naming "
                            "the rank and the step.")
                  .shaped(kFailForm, formOf(parseFail, &RunConfig::fail))
                  .appliesWhen(replicasOnly)
                  .onlyParallel());
  t.push_back(field("serial-ms", &RunConfig::serialMs)
                  .in(kExecution, "Serial section")
                  .describe("A serial section in every step: rank 0 works this long while the "
                            "other ranks wait (emulated)",
                            "Rank 0 sleeps this long after its backward, before the gradients "
                            "are summed, so every rank waits for it: the part of a step more "
                            "ranks do not shorten (Amdahl's 1 − p). 0: none.")
                  .range(0, 1000)
                  .zeroIs("none")
                  .units("ms")
                  .appliesWhen([replicasOnly](const RunConfig& c) -> Why {
                    if (c.strategy != "sync")
                      return std::string("a serial section every rank waits for needs --strategy "
                                         "sync (asynchronous ranks would not wait)");
                    return replicasOnly(c);
                  }));
  return t;
}

}  // namespace

const std::vector<Setting>& runSettings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t = coreSettings();
    for (const StrategyInfo& row : strategyTable())
      for (Setting s : row.settings) {
        s.group = kParallelism;
        s.parallelOnly = true;
        s.partOfAChoice();
        s.appliesWhen([name = std::string(row.name)](const RunConfig& c) -> Why {
          if (c.strategy == name) return std::nullopt;
          return "applies to --strategy " + name + " (the strategy is " + c.strategy + ")";
        });
        t.push_back(std::move(s));
      }
    return t;
  }();
  return table;
}

const std::vector<std::string>& settingGroups() {
  static const std::vector<std::string> groups = {
      kExecution, kParallelism, kModelParallelism, kLinks, kModel, kData, kTraining};
  return groups;
}

}  // namespace paralab
