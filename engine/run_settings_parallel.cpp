// The settings table's rows for how ranks combine (the data-parallel family), split the model,
// talk, and fail on purpose (run_settings.h). See tests/engine/tst_schema.cpp.
#include <algorithm>
#include <cstdio>

#include "comm/link_model.h"
#include "parallel/data/zero_policy.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_file.h"
#include "parallel/strategy.h"
#include "run_settings.h"
#include "train/elastic.h"
#include "train/faults.h"

namespace paralab::settings_rows {

namespace {

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

// The pipeline schedules: the schedule table's rows (parallel/pipeline/schedule.h).
std::vector<SettingChoice> scheduleChoices(const RunConfig& c) {
  std::vector<SettingChoice> out;
  for (const PipeScheduleRow& row : pipeSchedules())
    out.push_back({row.name, row.label, row.summary});
  if (isScheduleFile(c.schedule))  // a table the learner wrote (schedule_file.h)
    out.push_back({c.schedule, "Custom (" + c.schedule + ")", "A schedule written as a table"});
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

// Tensor and pipeline parallelism cut sync's replicas; the MoE spreads experts instead.
Why modelParallel(const RunConfig& c, const std::string& key) {
  if (auto why = refusedUnderMoe(c, [](RunConfig& p) { p.tp = 2; })) return why;
  return usedByStrategy(c, key);
}
Why pipelineOnly(const RunConfig& c) {
  if (c.pp > 1) return std::nullopt;
  return std::string("belongs to a pipeline (--pp 2 or more)");
}
// Model chunks per stage: on a pipeline whose schedule takes their count from the setting (not
// one with a count of its own: zb-v holds two).
Why interleavedPipeline(const RunConfig& c) {
  if (auto why = pipelineOnly(c)) return why;
  if (pipelineChunks(c.schedule, c.pp, 2) != pipelineChunks(c.schedule, c.pp, 1))
    return std::nullopt;
  std::string names;
  for (const PipeScheduleRow& row : pipeSchedules())
    if (row.interleaves) names += (names.empty() ? "" : " or ") + std::string(row.name);
  return "belongs to an interleaved schedule (--schedule " +
         (names.empty() ? std::string("that interleaves") : names) + ")";
}
// Micro-batches cut each replica's batch in a tensor- or pipeline-parallel layout.
Why modelParallelLayout(const RunConfig& c) {
  if (c.modelParallel()) return std::nullopt;
  return std::string(
      "belongs to tensor, pipeline or context parallelism (--tp, --pp or --cp 2 or more)");
}
// Gradient accumulation sums micro-batches inside sync's step (its ZeRO stages and model-
// parallel layouts); the other strategies combine replicas their own way each step.
Why accumulation(const RunConfig& c) {
  if (c.hasExperts())
    return std::string(
        "gradient accumulation runs with --strategy sync and its layouts, not "
        "with --model moe or --ffn moe");
  if (c.strategy != "sync")
    return std::string(
        "gradient accumulation runs with --strategy sync (and its ZeRO stages, "
        "tensor, pipeline and context layouts)");
  return std::nullopt;
}
// Context parallelism cuts the GPT's windows, on sync's replicas.
Why contextParallel(const RunConfig& c) {
  if (auto why = gptOnly(c)) return why;
  if (auto why = refusedUnderMoe(c, [](RunConfig& p) { p.cp = 2; })) return why;
  return usedByStrategy(c, "cp");
}

}  // namespace

void addParallelRows(std::vector<Setting>& t) {
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
                    if (c.dpVersion == DpVersion::Bucket && c.zero == 0) return std::nullopt;
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
  t.push_back(field("tp-overlap", &RunConfig::tpOverlap)
                  .in(kModelParallelism, "Overlap tp communication")
                  .describe("Cut each tp all-gather and reduce-scatter into ring steps that run "
                            "while the GEMM beside them computes (collective matmul; PyTorch "
                            "AsyncTP, Megatron's --tp-comm-overlap)",
                            "The same sums; the overlap meter shows the tp communication hidden "
                            "behind the GEMMs.")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.tp > 1 && c.sp) return std::nullopt;
                    return std::string(
                        "overlapped tensor parallelism cuts sequence parallelism's all-gathers "
                        "and reduce-scatters (needs --tp 2 or more and --sp)");
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
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.cp > 1) return std::nullopt;
                    return std::string("belongs to context parallelism (--cp 2 or more)");
                  })
                  .onlyParallel()
                  .partOfAChoice(false));
  t.push_back(field("cp-kind", &RunConfig::cpKind)
                  .in(kModelParallelism, "Context attention")
                  .describe("How context parallelism's attention sees every key",
                            "ring: each rank keeps its queries and passes its keys and values "
                            "around the ring (Liu et al. 2023); ulysses: an all-to-all turns "
                            "the sequence shards into head shards, each rank attends over "
                            "whole windows for heads / cp heads, and a second all-to-all "
                            "turns them back (Jacobs et al. 2023, DeepSpeed-Ulysses). Ulysses "
                            "needs the heads to divide by cp.")
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
  // Gradient accumulation (parallel/data/accumulation.h): --batch stays the global batch of one
  // optimizer step, cut into K micro-batches whose gradients are summed before one update.
  t.push_back(field("accumulate", &RunConfig::accumulate)
                  .in(kTraining, "Accumulate")
                  .describe("Gradient accumulation: K micro-batches per optimizer step, each "
                            "--batch / K samples (--batch is the global batch with the "
                            "micro-batches inside it; K must divide it)",
                            "The gradients of the K micro-batches are summed before one update, "
                            "and data parallelism sums them over the ranks once per step, not "
                            "once per micro-batch: the same step as one batch of B, with one "
                            "micro-batch's activations. With a pipeline each micro-batch runs "
                            "the schedule over its own --microbatches.")
                  .range(1, 1024)
                  .units("micro-batches")
                  .appliesWhen(accumulation));
  t.push_back(field("schedule", &RunConfig::schedule)
                  .in(kModelParallelism, "Schedule")
                  .describe("Pipeline schedule, or a CSV file of one (a value holding '/' or "
                            "ending in .csv: one line per rank of F3, B3, W3, I3 cells, "
                            "F3.1 on chunk 1; parallel/pipeline/schedule_file.h)",
                            "The order in which a stage runs its micro-batches' forwards and "
                            "backwards (parallel/pipeline/schedule.cpp). A file gives the "
                            "computes only: its sends and receives are derived, and it is checked "
                            "before any rank starts.")
                  .oneOf(scheduleChoices)
                  .appliesWhen(pipelineOnly)
                  .onlyParallel()
                  .partOfAChoice(false));
  t.push_back(field("virtual-stages", &RunConfig::virtualStages)
                  .in(kModelParallelism, "Virtual stages")
                  .describe("Model chunks per stage of an interleaved pipeline (each of the "
                            "pp × V virtual stages holds at least one block)",
                            "Stage s holds chunks c = 0..V − 1, virtual stage c·pp + s of "
                            "pp·V (Megatron-LM's placement): every virtual stage needs at least "
                            "one block (pp·V ≤ layers) and the micro-batches come in multiples "
                            "of pp. The bubble shrinks to ((P − 1)/V)/(M + (P − 1)/V).")
                  .range(1, 64)
                  .appliesWhen(interleavedPipeline)
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
                          {"naive", "naive", "Every rank receives and sums every other's"},
                          {"hierarchical", "hierarchical",
                           "Reduce-scatter inside each node, all-reduce across the nodes, "
                           "all-gather inside: only 1/L of the buffer crosses the network "
                           "(needs --gpus-per-node)"}})
                  .onlyParallel());
  t.push_back(field("link", &RunConfig::link)
                  .in(kLinks, "Interconnect")
                  .describe("Emulated interconnect between thread ranks (in one node)",
                            "Except for none, each transfer takes at least the link's latency + "
                            "bytes / bandwidth, so step times show what a slower link does.")
                  .oneOf(linkChoices)
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.backend == Backend::Thread) return std::nullopt;
                    return std::string(
                        "emulated links need --backend thread (real processes "
                        "use their real links)");
                  }));
  // Two tiers (comm/link_model.h): world ranks r and q share a node when r / G == q / G.
  t.push_back(field("gpus-per-node", &RunConfig::gpusPerNode)
                  .in(kLinks, "GPUs per node")
                  .describe("Ranks per node: ranks r and q share a node when r / G == q / G "
                            "(with --project: the cluster's GPUs per node, 1..1024, default 8)",
                            "Ranks in one node talk over --link, ranks in different nodes over "
                            "--node-link; the traffic chart and the link heatmap split the bytes "
                            "by tier. G must divide the ranks.")
                  .range(0, 64)
                  .zeroIs("one node: every rank")
                  .onlyParallel());
  t.push_back(field("node-link", &RunConfig::nodeLink)
                  .in(kLinks, "Between nodes")
                  .describe("Emulated interconnect between thread ranks in different nodes "
                            "(with --project: infiniband or ethernet between the cluster's "
                            "nodes)",
                            "Inside a node ranks talk over --link. A rank's two ports work at "
                            "once: a transfer step takes as long as its slower tier.")
                  .oneOf(linkChoices)
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.gpusPerNode == 0)
                      return std::string("belongs to ranks in more than one node (--gpus-per-node)");
                    if (c.backend == Backend::Thread) return std::nullopt;
                    return std::string(
                        "emulated links need --backend thread (real processes "
                        "use their real links)");
                  })
                  .onlyParallel());
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
  t.push_back(field("hang", &RunConfig::hang)
                  .in(kExecution, "Hanging rank")
                  .describe("A hanging rank: RANK@STEP makes that rank skip its first "
                            "collective of that step (emulated)",
                            "The rank stops before the call instead of issuing it, so the others "
                            "wait in it until the watchdog (--timeout) ends the run with one "
                            "line from every rank's flight recorder: who waits in which "
                            "collective, and who never issued it.")
                  .shaped(kHangForm, formOf(parseHang, &RunConfig::hang))
                  .onlyParallel());
  t.push_back(field("elastic", &RunConfig::elastic)
                  .in(kExecution, "Elastic")
                  .describe("Elastic data parallelism: when a replica fails (--fail), the "
                            "others form a new group and go on (train/elastic.h)",
                            "The survivors agree on the members left, re-split the global batch "
                            "over themselves and go on from the last completed step, as "
                            "torchft's quorum does at a step boundary.")
                  .notInWindow()
                  .appliesWhen([replicasOnly](const RunConfig& c) -> Why {
                    if (c.strategy != "sync")
                      return std::string("elastic training re-forms thread ranks of --strategy "
                                         "sync (data parallelism)");
                    if (c.backend != Backend::Thread && c.backend != Backend::Mpi)
                      return std::string("elastic training re-forms thread ranks, or relaunches "
                                         "an mpirun job on its survivors (allowed: --backend "
                                         "thread or mpi)");
                    return replicasOnly(c);
                  })
                  .onlyParallel());
  t.push_back(field("rejoin", &RunConfig::rejoin)
                  .in(kExecution, "Rejoining rank")
                  .describe("A failed replica back: RANK@STEP makes the --fail rank rejoin an "
                            "--elastic run at the start of that step (train/elastic.h)",
                            "A live replica sends it its parameters, optimizer state and step "
                            "(torchft's heal); the group grows back and the global batch is "
                            "re-split over it.")
                  .shaped(kRejoinForm, rejoinProblem)
                  .notInWindow()
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (!c.elastic)
                      return std::string("a replica rejoins an elastic run (give --elastic)");
                    if (c.backend != Backend::Thread)
                      return std::string("a replica rejoins thread ranks (--backend thread); an "
                                         "mpirun job relaunches on its survivors instead");
                    return std::nullopt;
                  })
                  .onlyParallel());
  t.push_back(field("mtbf", &RunConfig::mtbfS)
                  .in(kExecution, "Failures (MTBF)")
                  .describe("Failures at random with this mean gap (emulated; train/goodput.h)",
                            "Exponential gaps in the run's wall time, drawn from the seed. At a "
                            "failure the steps since the last checkpoint are lost and the run "
                            "restarts from it; the summary reports goodput. 0: none.")
                  .range(0, 86400)
                  .zeroIs("none")
                  .units("s")
                  .notInWindow()
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.backend == Backend::Thread) return std::nullopt;
                    return std::string("emulated failures need --backend thread (processes "
                                       "would each draw their own)");
                  }));
  t.push_back(field("checkpoint-every", &RunConfig::checkpointEvery)
                  .in(kExecution, "Checkpoint every")
                  .describe("Steps between checkpoints: while failures are emulated (--mtbf), "
                            "or of an --elastic mpirun job to --save FILE")
                  .range(0, 1000000)
                  .zeroIs("none")
                  .units("steps")
                  .notInWindow()
                  .appliesWhen([](const RunConfig& c) -> Why {
                    // Under mpirun an elastic job relaunches from them (train/elastic.h).
                    if (c.mtbfS > 0 || (c.elastic && c.backend == Backend::Mpi))
                      return std::nullopt;
                    if (c.elastic)
                      return std::string("checkpoints on a schedule go with --mtbf, or with "
                                         "--elastic under mpirun (--backend mpi); elastic thread "
                                         "ranks re-form without one");
                    return std::string("checkpoints on a schedule go with --mtbf (failures to "
                                       "recover from)");
                  }));
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
  // [SECTION] Whom ZeRO shards over (HSDP, parallel/data/grad_sync.h): last, as it reads the
  // strategy, the stage, the layout, the nodes and --elastic.
  t.push_back(field("zero-shard", &RunConfig::zeroShard)
                  .in(kParallelism, "ZeRO shards over")
                  .describe("Whom ZeRO shards the model states over: every data-parallel rank "
                            "(all), or the ranks of one node with a replica per node (node: "
                            "HSDP, needs --gpus-per-node)",
                            "node: the gathers and the reduce-scatter stay inside the node; "
                            "between nodes only each gradient shard is all-reduced, among the "
                            "ranks holding that shard (FSDP's HYBRID_SHARD). Memory per rank is "
                            "sharded over the node's G ranks instead of all N.")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.strategy != "sync" || c.zero == 0)
                      return std::string("belongs to a ZeRO stage (--strategy sync --zero 1, 2 "
                                         "or 3)");
                    if (c.gpusPerNode == 0)
                      return std::string("node shards over the ranks of a node (allowed: with "
                                         "--gpus-per-node G, G dividing the ranks)");
                    if (c.modelParallel() || c.hasExperts())
                      return std::string("node shards sync's data-parallel replicas (allowed: "
                                         "--tp 1 --pp 1 --cp 1, --model mlp or gpt without "
                                         "--ffn moe)");
                    if (c.elastic)
                      return std::string("node keeps a replica per node, which one rank's "
                                         "failure breaks (allowed: without --elastic)");
                    return std::nullopt;
                  })
                  .onlyParallel());
}

}  // namespace paralab::settings_rows
