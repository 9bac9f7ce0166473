// The projection's words and its door from a run's settings (projection.h): the JSON object
// and the readable table, a RunConfig as the projection's model and layout, and
// `paralab-run --project GPU:COUNT`. See tests/engine/tst_projection_layouts.cpp and
//   paralab-run --model gpt --tp 8 --pp 8 --batch 1536 --project a100-80gb:1024
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config.h"
#include "parallel/pipeline/schedule_file.h"  // isScheduleFile
#include "projection/projection.h"
#include "projection/projection_settings.h"
#include "schema.h"

namespace paralab::projection {

namespace {

std::string n(long long v) { return std::to_string(v); }

}  // namespace

nlohmann::json toJson(const Projection& p) {
  using nlohmann::json;
  const Layout& l = p.layout;
  const auto ms = [](double s) { return s * 1e3; };
  json split = {{"compute", ms(p.split.compute)},
                {"tp_comm", ms(p.split.tpComm)},
                {"cp_comm", ms(p.split.cpComm)},
                {"ep_comm", ms(p.split.epComm)},
                {"pp_comm", ms(p.split.ppComm)},
                {"pp_bubble", ms(p.split.ppBubble)},
                {"dp_comm_exposed", ms(p.split.dpCommExposed)},
                {"optimizer", ms(p.split.optimizer)},
                {"data", ms(p.split.data)}};
  // Communication that ran under compute: not part of the step (split_ms sums to step_ms).
  json hidden = {{"tp_comm", ms(p.split.tpCommHidden)}, {"dp_comm", ms(p.split.dpCommHidden)}};
  json mem = {{"params", p.memory.params},       {"grads", p.memory.grads},
              {"optimizer", p.memory.optimizer}, {"activations", p.memory.activations},
              {"workspace", p.memory.workspace}, {"total", p.memory.total()}};
  return json{{"projected", true},
              {"validated_by", Projection::kValidatedBy},
              {"model", p.model.describe()},
              {"parameters", p.parameters},
              {"gpu", p.cluster.gpu.name},
              {"gpu_title", p.cluster.gpu.title},
              {"gpus", p.cluster.gpus},
              {"gpus_per_node", p.cluster.gpusPerNode},
              {"nodes", p.cluster.nodes()},
              {"node_link", nodeLinkName(p.cluster.nodeLink)},
              {"attention_kernel", l.attentionKernel.empty() ? "materialised" : l.attentionKernel},
              {"dp", l.dp},
              {"tp", l.tp},
              {"pp", l.pp},
              {"cp", l.cp},
              {"ep", l.ep},
              {"microbatches", l.microBatches},
              {"microbatch_size", l.microBatchSize},
              {"global_batch", l.globalBatch},
              {"schedule", scheduleValue(l)},
              {"virtual_stages", l.virtualStages},
              {"zero", l.zero},
              {"dp_calls", std::max(1, l.dpCalls)},
              {"dp_overlapped", l.overlapDpComm},
              {"param_gather_overlapped", l.overlapParamGather},
              {"tp_overlapped", l.overlapTpComm},
              {"recompute", nameOf(l.recompute)},
              {"precision", precisionName(l.precision)},
              {"step_ms", ms(p.stepSeconds)},
              {"split_ms", split},
              {"hidden_ms", hidden},
              {"tokens_per_s", p.tokensPerS},
              {"samples_per_s", p.samplesPerS},
              {"tflops_per_gpu", p.tflopsPerGpu},
              {"model_tflops_per_gpu", p.modelTflopsPerGpu},
              {"mfu", p.mfu},
              {"hfu", p.hfu},
              {"mem_per_gpu", mem},
              {"mem_stage", p.memoryStage},
              {"mem_capacity", p.memoryCapacity},
              {"fits", p.fits()}};
}

std::string toText(const Projection& p) {
  const Layout& l = p.layout;
  const Cluster& c = p.cluster;
  std::string out;
  char line[512];
  const auto add = [&](const char* format, auto... values) {
    std::snprintf(line, sizeof line, format, values...);
    out += line;
  };
  add("Projected (not measured) on %d x %s: %d node%s of %d, joined by %s\n", c.gpus,
      c.gpu.title.c_str(), c.nodes(), c.nodes() == 1 ? "" : "s", c.gpusPerNode,
      c.nodeLink == NodeLink::InfiniBand ? c.gpu.nicTitle.c_str() : p.dpLink.title.c_str());
  add("Model: %s\n", p.model.describe().c_str());
  std::string layout = "dp " + n(l.dp) + " x tp " + n(l.tp) + " x pp " + n(l.pp);
  if (l.cp > 1) layout += " x cp " + n(l.cp);
  if (l.ep > 1) layout += ", ep " + n(l.ep);
  if (l.sequenceParallel) layout += ", sequence parallel";
  add("Layout: %s; %d micro-batches of %d per replica (global batch %d), %s%s, recompute %s, "
      "ZeRO %d, %s, %s\n",
      layout.c_str(), l.microBatches, l.microBatchSize, l.globalBatch, scheduleValue(l).c_str(),
      l.virtualStages > 1 ? (" interleaved x" + n(l.virtualStages)).c_str() : "",
      nameOf(l.recompute).c_str(), l.zero,
      l.precision == Precision::Bf16Mixed  ? "bf16 mixed precision"
      : l.precision == Precision::Fp8Mixed ? "FP8 linear layers, bf16 mixed precision"
                                           : precisionName(l.precision),
      l.optimizer.c_str());
  // Where the kernels' rates come from: measured on the GPU, or its datasheet's model.
  const bool gemmsMeasured = c.gpu.gemmRates != nullptr;
  const std::string attention =
      !p.model.gpt()               ? ""
      : l.attentionKernel.empty() ? "; attention as GEMMs, the scores written to memory"
                                   : "; attention one fused kernel (" + l.attentionKernel +
                                         ") at its measured rate";
  add("Kernels: GEMMs at %s%s\n",
      !gemmsMeasured ? "the measured best matmul rate, by waves of tiles"
      : l.precision == Precision::Bf16Mixed
          ? "the bf16 rate measured for their shape (resources/gpus)"
          : "the bf16 rate measured for their shape (resources/gpus), scaled to this "
            "precision's peak",
      attention.c_str());
  const auto link = [&](const char* axis, int size, const Link& k) {
    if (size <= 1) return;
    add("  %s (%d ranks) over %s: %.3g GB/s per GPU each way, %.3g us per step\n", axis, size,
        k.title.c_str(), k.bytesPerS / 1e9, k.alphaS * 1e6);
  };
  if (c.gpus > 1) out += "Links (projected, alpha-beta):\n";
  link("tp", l.tp, p.tpLink);
  link("pp", l.pp, p.ppLink);
  link("cp", l.cp, p.cpLink);
  link("ep", l.ep, p.epLink);
  link("dp", l.dp * l.cp, p.dpLink);
  add("%-40s %12s %7s\n", "Step time (projected)", "ms", "share");
  const double step = p.stepSeconds;
  const auto part = [&](const char* name, double s, bool always) {
    if (always || s > 0) add("  %-38s %12.2f %6.1f%%\n", name, s * 1e3, 100 * s / step);
  };
  part("compute (GEMMs, memory-bound kernels)", p.split.compute, true);
  part("exposed tensor-parallel communication", p.split.tpComm, true);
  part("context-parallel communication", p.split.cpComm, false);
  part("expert-parallel all-to-all", p.split.epComm, false);
  part("pipeline sends", p.split.ppComm, l.pp > 1);
  part("pipeline bubble", p.split.ppBubble, true);
  part("exposed data-parallel communication", p.split.dpCommExposed, true);
  part("optimizer step", p.split.optimizer, true);
  part("copying the batch", p.split.data, p.split.data > 0);
  part("total", step, true);
  if (p.split.tpCommHidden > 0 || p.split.dpCommHidden > 0)
    add("  hidden behind compute, not in the total: tensor-parallel %.2f ms, data-parallel %.2f "
        "ms\n",
        p.split.tpCommHidden * 1e3, p.split.dpCommHidden * 1e3);
  const std::string rate =
      p.model.gpt() ? std::to_string(std::llround(p.tokensPerS)) + " tokens/s, " : std::string();
  add("Throughput (projected): %s%.1f samples/s; %.1f TFLOP/s per GPU executed "
      "(recomputation included), %.1f model TFLOP/s per GPU, MFU %.1f%% of the %s dense peak "
      "%.0f TFLOP/s\n",
      rate.c_str(), p.samplesPerS, p.tflopsPerGpu, p.modelTflopsPerGpu, 100 * p.mfu,
      precisionName(l.precision), c.gpu.peakFlops(l.precision) / 1e12);
  const MemoryPerGpu& m = p.memory;
  const double GB = 1e9;
  add("Memory per GPU (projected, pipeline stage %d, GB = 1e9 bytes): params %.3g, grads %.3g, "
      "optimizer %.3g, activations %.3g, workspace %.3g; total %.3g of %.0f GB: %s",
      p.memoryStage, m.params / GB, m.grads / GB, m.optimizer / GB, m.activations / GB,
      m.workspace / GB, m.total() / GB, p.memoryCapacity / GB,
      p.fits() ? "fits" : "does not fit, over by ");
  if (!p.fits()) add("%.3g GB", (m.total() - p.memoryCapacity) / GB);
  add("\nThe model behind these figures is checked against %s (tests/engine/tst_projection.cpp, "
      "tst_projection_overlap.cpp)\n",
      Projection::kValidatedBy);
  return out;
}

ModelSpec modelOf(const RunConfig& c, int vocab) {
  ModelSpec m;
  m.kind = c.model == ModelKind::Gpt ? ModelSpec::Kind::Gpt : ModelSpec::Kind::Mlp;
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.seq = c.seq;
  m.vocab = vocab;
  if (c.model == ModelKind::Gpt && c.hasExperts()) {
    m.experts = c.experts;
    m.topk = c.topk;
  }
  return m;
}

Layout layoutOf(const RunConfig& c) {
  Layout l;
  l.dp = c.dp;
  l.tp = c.tp;
  l.pp = c.pp;
  l.ep = c.ep;
  l.cp = c.cp;
  l.cpOrder = c.cpOrder;
  l.sequenceParallel = c.sp;
  l.globalBatch = c.globalBatch();
  // The engine cuts a replica's batch into micro-batches in a tensor-, pipeline- or
  // context-parallel layout only.
  l.microBatches = c.modelParallel() ? c.microbatches : 1;
  if (isScheduleFile(c.schedule))  // a learner's table (schedule_file.h)
    l.scheduleFile = c.schedule;
  else
    l.schedule = parseSchedule(c.schedule);
  l.virtualStages = pipelineChunks(c.schedule, c.pp, c.virtualStages);
  l.zero = c.zero;
  l.recompute = c.model == ModelKind::Gpt ? c.recompute : Recompute::None;
  l.optimizer = c.optimizer;
  l.overlapDpComm = c.dpVersion == DpVersion::Bucket;
  l.overlapTpComm = c.tpOverlap;
  return l;
}

Projection projectRun(const RunConfig& config, const RunProjection& q) {
  const std::string form =
      "project: '" + q.target +
      "' is not GPU:COUNT (for example a100-80gb:1536; GPUs: " + gpuNamesText() + ")";
  const size_t colon = q.target.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == q.target.size())
    throw ConfigError(form);
  const std::string digits = q.target.substr(colon + 1);
  if (digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw ConfigError(form);
  Cluster cluster;
  cluster.gpus = std::stoi(digits);
  if (cluster.gpus < 1) throw ConfigError("project: " + digits + " GPUs (allowed: 1 or more)");
  cluster.gpu = loadGpu(q.target.substr(0, colon));
  // The other cluster settings: their table's ranges, choices and where they apply.
  if (auto err = checkCluster(config, q)) throw ConfigError(*err);
  cluster.gpusPerNode = q.gpusPerNode;
  cluster.nodeLink = parseNodeLink(q.nodeLink);
  const Precision precision = parsePrecision(q.precision);
  // The settings' own choices (a schedule, a recomputation, an optimizer...); their ranges are
  // a training run's on this machine and do not bound a projection.
  RunConfig c = config;
  paralab::datasetFollowsModel(c);  // a projection reads no data
  for (const Setting& s : runSettings())
    if (s.choices)
      if (auto err = s.check(c)) throw ConfigError(*err);
  if (config.model != ModelKind::Gpt && config.model != ModelKind::Mlp)
    throw ConfigError("model: --project projects the mlp and the gpt (allowed: mlp, gpt)");
  if (config.strategy != "sync")
    throw ConfigError("strategy: --project projects synchronous data parallelism (allowed: sync)");
  // --ranks left out: 1, or what a --config file's degrees implied (applyJsonFile derives it).
  RunConfig derived = config;
  derived.ranks = 1;
  derived.deriveRanks();
  if (config.ranks != 1 && config.ranks != derived.ranks && config.ranks != cluster.gpus)
    throw ConfigError("ranks: --project " + q.target +
                      " runs one rank per GPU (allowed: leave "
                      "--ranks out, or " +
                      n(cluster.gpus) + ")");
  c.ranks = cluster.gpus;
  if (auto err = notApplicableAsGiven(c, q.givenFlags, q.configKeys)) throw ConfigError(*err);
  const ModelSpec model = modelOf(c, q.vocab > 0 ? q.vocab : kEngineVocab);
  Layout layout = layoutOf(c);
  layout.precision = precision;
  if (q.attentionKernel != "materialised") {
    if (!cluster.gpu.fusedAttention.count(q.attentionKernel)) {
      std::string measured;
      for (const auto& [kernel, rates] : cluster.gpu.fusedAttention)
        measured += (measured.empty() ? "" : ", ") + kernel;
      throw ConfigError("attention-kernel: " + q.attentionKernel + " was not measured on " +
                        cluster.gpu.name + " (allowed there: materialised" +
                        (measured.empty() ? "" : ", " + measured) + ")");
    }
    layout.attentionKernel = q.attentionKernel;
  }
  // A schedule file holds its micro-batches: --microbatches, given or not, as a run reads it.
  if (!q.microBatchesGiven && layout.scheduleFile.empty()) layout.microBatches = 0;
  if (auto err = validate(model, layout, cluster)) throw ConfigError(*err);
  // The engine's rules again for the run as given, one rank per GPU: a setting given where it
  // does not apply (--sp without --tp) is refused as a training run refuses it.
  if (auto err = c.validateRules()) throw ConfigError(*err);
  return project(model, layout, cluster);
}

}  // namespace paralab::projection
