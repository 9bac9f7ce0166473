// The projection (projection.h): its model, its inputs checked (the layout by the engine's own
// rules) and resolved, and the compute, communication, pipeline and memory parts put together
// for one training step, and sweeps of one axis. Its words and the run's door are in
// projection_run.cpp. See tests/engine/tst_projection.cpp and tst_projection_layouts.cpp.
#include "projection/projection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config.h"
#include "model/gpt.h"  // GptShape, MoeFfnShape
#include "model/mlp.h"
#include "parallel/holdings.h"  // optimizerStateSlots
#include "parallel/process_grid.h"

namespace paralab::projection {

namespace {

std::string n(long long v) { return std::to_string(v); }

GptShape gptShape(const ModelSpec& m, int layers) {
  GptShape g{m.vocab, m.seq, m.hidden, layers, m.heads};
  if (m.experts > 0) g.moe = MoeFfnShape{m.hidden, m.experts, m.topk};
  return g;
}

// Parameters outside the blocks: the first stage's (embeddings; the MLP's input layer) and the
// last stage's (final LayerNorm and head; the MLP's head). A tied head is the token embedding;
// a pipeline keeps a copy of it on the last stage (Megatron-LM), which `pp` > 1 adds there.
struct EndParameters {
  double first = 0, last = 0;
};
EndParameters endParameters(const ModelSpec& m, int pp) {
  EndParameters e;
  if (!m.gpt()) {
    e.first = double(m.input) * m.hidden + m.hidden;
    e.last = double(MlpShape{m.input, m.hidden, 0, m.classes}.parameterCount()) - e.first;
    return e;
  }
  const double V = m.vocab, C = m.hidden;
  e.first = V * C + double(m.seq) * C;
  e.last = double(gptShape(m, 0).parameterCount()) - e.first;  // final LayerNorm and head
  if (m.tiedEmbeddings) e.last -= C * V + V - (pp > 1 ? C * V : 0);
  return e;
}

// Blocks of pipeline stage k of p: an even split, the first L mod p stages one more.
int layersOf(int layers, int p, int k) { return layers / p + (k < layers % p ? 1 : 0); }

// Activations outside the blocks, per token this GPU computes: the first stage's embedding
// output (and token ids), the last stage's final LayerNorm and logits. The engine's recipe is
// memory_estimate.cpp's 2H + 4 + V floats (embeddings, final LayerNorm and its statistics, the
// logits, the ids); Megatron's keeps the embedding's dropout mask and fp32 logits.
double endActivationBytesPerToken(const ModelSpec& m, const Layout& l, bool first) {
  const double e = elementBytes(l.precision), h = m.hidden;
  if (!m.gpt()) return e * (first ? m.input : m.classes);
  const double V = double(m.vocab) / l.tp;
  if (m.activations == ActivationRecipe::Megatron)
    return first ? e * h + (m.dropout ? h : 0) : e * h + 4 * V;
  return first ? e * h + 8 : e * (h + 2 + V);
}

}  // namespace

BlockWork blockOf(const ModelSpec& m, const Layout& l) {
  BlockWork w;
  w.attention = m.gpt();
  w.microBatch = l.microBatchSize;
  w.seq = m.tokensPerSample();
  w.hidden = m.hidden;
  w.heads = m.heads;
  w.ffnMultiple = m.ffnMultiple;
  w.tp = l.tp;
  w.cp = l.cp;
  w.sequenceParallel = l.sequenceParallel && l.tp > 1;
  w.dropout = m.dropout;
  w.experts = m.experts;
  w.topk = m.topk;
  w.unfusedBias = m.engineKernels;
  return w;
}

EndsWork endsOf(const ModelSpec& m, const Layout& l) {
  EndsWork e;
  e.gpt = m.gpt();
  e.samples = l.microBatchSize;
  e.seq = m.tokensPerSample();
  e.hidden = m.hidden;
  e.vocab = m.vocab;
  e.tp = l.tp;
  e.cp = l.cp;
  e.input = m.input;
  e.classes = m.classes;
  e.vocabParallel = !m.engineKernels;  // the engine's GPT computes its head whole on each tp rank
  e.unfusedLoss = l.unfusedCrossEntropy;
  return e;
}

// [SECTION] The model

double ModelSpec::parameterCount() const {
  // The engine's FFN is 4h wide; another multiple f changes each block by (f - 4)(2h^2 + h).
  const double h = hidden, wider = experts > 0 ? 0 : layers * (ffnMultiple - 4) * (2 * h * h + h);
  if (!gpt()) return double(MlpShape{input, hidden, layers, classes}.parameterCount()) + wider;
  double P = double(gptShape(*this, layers).parameterCount()) + wider;
  if (tiedEmbeddings) P -= double(hidden) * vocab + vocab;
  return P;
}

double ModelSpec::activeParameterCount() const {
  double P = parameterCount();
  if (gpt() && experts > 0)
    P -= double(layers) * (experts - topk) *
         double(MoeFfnShape{hidden, experts, topk}.expertParameterCount());
  return P;
}

std::string ModelSpec::describe() const {
  char text[256];
  if (!gpt()) {
    std::snprintf(text, sizeof text, "MLP: %d blocks, H %d, %.3g M parameters", layers, hidden,
                  parameterCount() / 1e6);
  } else {
    std::string ffn = experts > 0 ? ", " + n(experts) + " experts top-" + n(topk) : "";
    std::snprintf(text, sizeof text,
                  "GPT: %d blocks, H %d, %d heads, T %d, V %d%s, %.1f B parameters", layers, hidden,
                  heads, seq, vocab, ffn.c_str(), parameterCount() / 1e9);
  }
  return name.empty() ? text : name + " (" + text + ")";
}

ModelSpec ModelSpec::megatronGpt(int layers, int hidden, int heads, int seq, int vocab) {
  ModelSpec m;
  m.kind = Kind::Gpt;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq = seq;
  m.vocab = vocab;
  m.tiedEmbeddings = true;
  m.dropout = true;
  m.activations = ActivationRecipe::Megatron;
  return m;
}

// [SECTION] Checking and resolving the inputs

std::string scheduleValue(const Layout& l) {
  return l.scheduleFile.empty() ? std::string(scheduleName(l.schedule)) : l.scheduleFile;
}

namespace {

// The layout as a run of the engine: the engine's rules (RunConfig::validateRules) are the
// projection's, so a layout the engine trains is one the projection projects.
RunConfig engineRun(const ModelSpec& m, const Layout& l, const Cluster& c) {
  RunConfig r;
  r.model = m.gpt() ? ModelKind::Gpt : ModelKind::Mlp;
  r.dataset = "synthetic";  // a projection reads no data
  r.layers = m.layers;
  r.hidden = m.hidden;
  r.heads = m.heads;
  r.seq = m.seq;
  if (m.gpt() && m.experts > 0) {
    r.ffn = Ffn::Moe;
    r.experts = m.experts;
    r.topk = m.topk;
  }
  r.recompute = m.gpt() ? l.recompute : Recompute::None;
  r.ranks = c.gpus;
  r.dp = l.dp;
  r.tp = l.tp;
  r.pp = l.pp;
  r.cp = l.cp;
  r.ep = l.ep;
  r.cpOrder = l.cpOrder;
  // Sequence parallelism splits the tensor-parallel ranks' rows: with tp 1 it splits nothing
  // (blockOf), as a sweep over tp from 1 keeps it switched on.
  r.sp = l.sequenceParallel && l.tp > 1;
  r.tpOverlap = l.overlapTpComm && l.tp > 1;
  r.batch = l.globalBatch;
  // Micro-batches the projection derives (Megatron-LM's one sample each) are its own choice.
  r.microbatches = l.microBatches > 0 ? l.microBatches : 1;
  r.schedule = scheduleValue(l);
  // A file's cells name their chunks: its chunk count is the run's --virtual-stages.
  if (!l.scheduleFile.empty()) r.virtualStages = l.virtualStages;
  r.zero = l.zero;
  return r;
}

// One block's tensor-parallel communication in one micro-batch, seconds: on the step's path,
// and hidden behind the GEMMs.
struct TpTime {
  double exposed = 0, hidden = 0;
};

double secondsOf(const std::vector<OpCost>& ops, const std::string& name) {
  double s = 0;
  for (const OpCost& op : ops)
    if (op.name == name) s += op.seconds;
  return s;
}

// Tensor-parallel communication cut beside its GEMMs (--tp-overlap): the collective-matmul
// decomposition of Wang et al. 2023 ("Overlap Communication with Dependent Computation via
// Decomposition in Large Deep Learning Models", ASPLOS), as PyTorch's AsyncTP and Megatron's
// --tp-comm-overlap (Transformer Engine's userbuffers) run it. Each column-then-row pair
// exchanges an all-gather and a reduce-scatter (ring all-reduce = both halves, so without
// sequence parallelism the same seconds): the all-gather goes in t - 1 ring steps while the
// column-parallel GEMM computes the t row blocks in the order they arrive (its own first), the
// reduce-scatter's steps carry each row block of the row-parallel GEMM's partial sums while the
// next is computed. Of c seconds of transfer beside G seconds of GEMM, max(0, c - (t-1)/t G) stay
// exposed: only the first block's GEMM has no transfer under it. In the backward the exchange
// sits beside the same layer's input- and weight-gradient GEMMs, both of which the row blocks
// split (the weight gradient sums over them). Left out: the GEMMs' blocks run a little below a
// whole GEMM's rate, and the transfers take some of the GPU's memory bandwidth.
TpTime overlappedTp(const ModelSpec& model, const std::vector<OpCost>& fwd,
                    const std::vector<OpCost>& bwd, int passes, int t, double half) {
  std::vector<std::pair<std::string, std::string>> pairs;  // column-parallel, row-parallel
  if (model.gpt()) pairs.push_back({"QKV projection", "attention output projection"});
  if (model.experts > 0)
    pairs.push_back({"expert fc1", "expert fc2"});
  else
    pairs.push_back({"FFN fc1", "FFN fc2"});
  const auto exposed = [&](double gemm) { return std::max(0.0, half - (t - 1.0) / t * gemm); };
  const auto backward = [&](const std::string& layer) {
    return secondsOf(bwd, layer + " input grad") + secondsOf(bwd, layer + " weight grad");
  };
  TpTime time;
  for (const auto& [column, row] : pairs) {
    time.exposed += (passes - 1) * (exposed(secondsOf(fwd, column)) + exposed(secondsOf(fwd, row)));
    time.exposed += exposed(backward(row)) + exposed(backward(column));
  }
  time.hidden = double(pairs.size()) * passes * 2 * half - time.exposed;
  return time;
}

}  // namespace

std::optional<std::string> validate(const ModelSpec& m, const Layout& l, const Cluster& c) {
  // [SECTION] The cluster, and what a projection's inputs must be before the engine is asked
  if (c.gpus < 1) return "project: the GPU count must be at least 1";
  if (!(c.gpu.bf16Tflops > 0 && c.gpu.hbmGBps > 0))
    return "project: no GPU kind (allowed: " + gpuNamesText() + ", from resources/gpus)";
  if (l.precision == Precision::Fp8Mixed && !c.gpu.hasFp8())
    return "precision: fp8 needs FP8 tensor cores, which the " + c.gpu.title +
           " has not (allowed on it: bf16, tf32, fp32; fp8 on " + fp8GpuNamesText() + ")";
  if (c.gpusPerNode < 1) return "gpus-per-node: must be at least 1";
  if (m.layers < 1) return "layers: must be at least 1 to project";
  if (m.ffnMultiple < 1) return "ffn multiple: must be at least 1";
  if (m.hidden < 1) return "hidden: must be at least 1";
  if (m.gpt() && (m.heads < 1 || m.seq < 1 || m.vocab < 1))
    return "heads, seq and vocab: must be at least 1";
  if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.ep < 1 || l.dp < 0)
    return "tp, pp, cp and ep: must be at least 1";
  if (l.globalBatch < 1) return "batch: must be at least 1";
  if (l.zero < 0 || l.zero > 3)
    return "zero: " + n(l.zero) + " is not a ZeRO stage (allowed: 0, 1, 2, 3)";
  if (l.virtualStages < 1) return "virtual stages: must be at least 1";
  if (l.microBatches < 0 || l.microBatchSize < 0) return "microbatches: must be at least 1";
  if (m.experts > 0 && (m.topk < 1 || m.topk > m.experts))
    return "topk: " + n(m.topk) + " (allowed: 1.." + n(m.experts) + ")";
  const int model = l.tp * l.pp * l.cp;
  if (c.gpus % model != 0)
    return "project: " + n(c.gpus) + " GPUs are not divisible by tp x pp" +
           (l.cp > 1 ? " x cp" : "") + " = " + n(model) + " (allowed: a multiple of " + n(model) +
           ")";
  if (l.dp > 0 && (long long)l.dp * model != c.gpus)
    return "dp: " + n(l.dp) + " x tp x pp" + (l.cp > 1 ? " x cp" : "") + " = " +
           n((long long)l.dp * model) + " must equal the " + n(c.gpus) +
           " GPUs (allowed: leave --dp out, or " + n(c.gpus / model) + ")";
  // [SECTION] The layout: the engine's rules
  if (auto err = engineRun(m, l, c).validateRules()) return err;
  // [SECTION] What only a projection has: a micro-batch size, interleaved stages
  const int dp = c.gpus / model;
  const int perReplica = (l.globalBatch + dp - 1) / dp;  // the largest replica's samples
  if (l.microBatchSize > 0 && perReplica % l.microBatchSize != 0)
    return "micro-batch size: " + n(l.microBatchSize) + " does not divide the " + n(perReplica) +
           " samples each data-parallel replica gets per step";
  if (l.microBatches > 0 && l.microBatchSize > 0 && l.microBatches * l.microBatchSize != perReplica)
    return "microbatches: " + n(l.microBatches) + " of " + n(l.microBatchSize) +
           " samples is not the " + n(perReplica) + " each data-parallel replica gets per step";
  if (l.virtualStages > 1) {
    if (l.pp < 2) return "virtual stages: interleaving needs a pipeline (pp 2 or more)";
    if (l.pp * l.virtualStages > m.layers)
      return "pp: " + n(l.pp) + " stages of " + n(l.virtualStages) + " chunks but only " +
             n(m.layers) + " blocks (allowed: pp x chunks <= layers)";
    const int mb = l.microBatches > 0 ? l.microBatches : perReplica / std::max(1, l.microBatchSize);
    if (l.scheduleFile.empty() && mb % l.pp != 0)
      return "microbatches: the interleaved schedule needs a multiple of pp = " + n(l.pp) +
             " micro-batches (Narayanan et al. 2021 §2.2.2), not " + n(mb);
  }
  return std::nullopt;
}

std::optional<Layout> resolve(const ModelSpec& m, const Layout& layout, const Cluster& c) {
  if (validate(m, layout, c)) return std::nullopt;
  Layout l = layout;
  l.dp = c.gpus / (l.tp * l.pp * l.cp);
  // A batch that does not split evenly leaves some replicas (and micro-batches) a sample more,
  // as the engine's shards do: the largest sets the pace.
  const auto ceilDiv = [](int a, int b) { return (a + b - 1) / b; };
  const int perReplica = ceilDiv(l.globalBatch, l.dp);
  if (l.microBatches == 0 && l.microBatchSize == 0) l.microBatchSize = 1;
  if (l.microBatches == 0) l.microBatches = ceilDiv(perReplica, l.microBatchSize);
  if (l.microBatchSize == 0) l.microBatchSize = ceilDiv(perReplica, l.microBatches);
  if (!m.gpt()) l.sequenceParallel = false;
  return l;
}

// [SECTION] One step

Projection project(const ModelSpec& model, const Layout& layout, const Cluster& cluster) {
  if (auto err = validate(model, layout, cluster)) throw ConfigError(*err);
  const Layout l = *resolve(model, layout, cluster);
  Projection p;
  p.model = model;
  p.layout = l;
  p.cluster = cluster;
  p.parameters = model.parameterCount();
  const Roofline r = Roofline::of(cluster.gpu, l.precision, l.attentionKernel);
  const double e = r.elementBytes, HBM = r.bytesPerS;
  const int m = l.microBatches, pp = l.pp, t = l.tp, v = l.virtualStages;
  const int replicas = l.dp * l.cp;  // ranks holding the same weights (gradients summed)

  // Where each axis's groups sit, and so the links they use (process_grid.h's layout).
  const GridShape grid{l.dp, t, pp, l.ep, l.cp};
  const int perNode = cluster.gpusPerNode;
  p.tpLink = linkFor(cluster, placeGroup(grid, Axis::Tp, perNode));
  p.ppLink = linkFor(cluster, placeGroup(grid, Axis::Pp, perNode));
  p.cpLink = linkFor(cluster, placeGroup(grid, Axis::Cp, perNode));
  p.epLink = linkFor(cluster, placeGroup(grid, Axis::Ep, perNode));
  // The replicas of one (pp, tp) are the dp x cp ranks; with cp folded into dp they are
  // exactly a data-parallel group (rank = ((pp dp + dp) cp + cp) tp + tp).
  p.dpLink = linkFor(cluster, placeGroup({replicas, t, pp, 1, 1}, Axis::Dp, perNode));
  const auto coll = [&](Collective op, double bytes, int ranks, const Link& link) {
    return collectiveSeconds(op, bytes, ranks, link);
  };

  // [SECTION] One block, one micro-batch, on one GPU
  const BlockWork w = blockOf(model, l);
  const std::vector<OpCost> fwd = blockForward(r, w), bwd = blockBackward(r, w);
  const std::vector<OpCost> core = attentionCoreForward(r, w);
  const bool full = l.recompute == Recompute::Full, selective = l.recompute == Recompute::Selective;
  const double coreS = totalSeconds(core);
  // A fused attention kernel's backward recomputes the scores itself (its measured time holds
  // that): selective recomputation adds nothing to it.
  const double recomputeS = full ? totalSeconds(fwd) : selective && !r.fusedAttention ? coreS : 0;
  const double blockS = totalSeconds(fwd) + totalSeconds(bwd) + recomputeS;
  const double blockFlops = totalFlops(fwd) + totalFlops(bwd) +
                            (full        ? totalFlops(fwd)
                             : selective ? totalFlops(core)
                                         : 0);
  p.blockOps = fwd;
  p.blockOps.insert(p.blockOps.end(), bwd.begin(), bwd.end());
  // Forward passes of a block: the forward, and again before the backward under full
  // recomputation; the backward's collectives mirror the forward's once.
  const int passes = 2 + (full ? 1 : 0);
  const double T = w.tokens();
  const double actBytes = T * model.hidden * e;  // one activation of the block's width
  // Tensor parallelism (Shoeybi et al. 2019): the GPT's attention and FFN each end in an
  // all-reduce of the activations (the MLP's FFN only); with sequence parallelism a
  // reduce-scatter and an all-gather instead, the same bytes (Korthikanti et al. 2022).
  const double tpOne = w.sequenceParallel ? coll(Collective::ReduceScatter, actBytes, t, p.tpLink) +
                                                coll(Collective::AllGather, actBytes, t, p.tpLink)
                                          : coll(Collective::AllReduce, actBytes, t, p.tpLink);
  const double tpBlock = (model.gpt() ? 2 : 1) * passes * tpOne;
  const TpTime tpTime = l.overlapTpComm && t > 1
                            ? overlappedTp(model, fwd, bwd, passes, t,
                                           coll(Collective::AllGather, actBytes, t, p.tpLink))
                            : TpTime{tpBlock, 0};
  // Context parallelism (ring attention): each rank gathers the sequence's K and V for its
  // queries (and reduce-scatters their gradients in the backward), overlapped with attention.
  double cpBlock = 0;
  if (l.cp > 1) {
    const double kv = 2.0 * l.microBatchSize * model.seq * model.hidden / t * e;
    const double gather = coll(Collective::AllGather, kv, l.cp, p.cpLink);
    const double scatter = coll(Collective::ReduceScatter, kv, l.cp, p.cpLink);
    cpBlock = (passes - 1) * std::max(0.0, gather - coreS) + std::max(0.0, scatter - 2 * coreS);
  }
  // Expert parallelism: tokens to their experts and back, by all-to-all, in every pass.
  double epBlock = 0;
  if (model.experts > 0 && l.ep > 1)
    epBlock =
        2 * passes * coll(Collective::AllToAll, T * model.topk * model.hidden * e, l.ep, p.epLink);

  // [SECTION] Stages
  const std::vector<OpCost> firstOps = firstEnd(r, endsOf(model, l)),
                            lastOps = lastEnd(r, endsOf(model, l));
  const EndParameters ends = endParameters(model, pp);
  double blockParams = blockParameters(w);
  if (model.experts > 0 && l.ep > 1)  // each ep rank holds experts / ep of them
    blockParams -=
        double(model.experts) * (l.ep - 1) / l.ep *
        double(MoeFfnShape{model.hidden, model.experts, model.topk}.expertParameterCount());
  // Pipeline sends (Narayanan et al. 2021 §4.1, scatter/gather): each tp rank sends 1/tp of the
  // activation to the next stage and the receivers all-gather it over NVLink; one send forward
  // and one back per micro-batch, per chunk boundary when interleaved.
  const double p2p = pp > 1 ? 2.0 * v *
                                  (coll(Collective::PointToPoint, actBytes / t, 2, p.ppLink) +
                                   coll(Collective::AllGather, actBytes, t, p.tpLink))
                            : 0;
  // Gradients at the GEMMs' width (ZeRO's 2 bytes in bf16), or Megatron's fp32 main gradients.
  const int gradBytes = l.fp32MainGrads ? 4 : int(e);
  std::vector<double> slot(pp), slotCompute(pp), stageParams(pp), stageFlops(pp);
  for (int k = 0; k < pp; ++k) {
    const int L = layersOf(model.layers, pp, k);
    stageParams[k] =
        (L * blockParams + (k == 0 ? ends.first : 0) + (k == pp - 1 ? ends.last : 0)) / t;
    double compute = L * blockS, flops = L * blockFlops;
    if (k == 0) {
      compute += totalSeconds(firstOps);
      flops += totalFlops(firstOps);
    }
    if (k == pp - 1) {
      compute += totalSeconds(lastOps);
      flops += totalFlops(lastOps);
    }
    // Gradient accumulation over micro-batches: write this micro-batch's gradient, then read it
    // and the sum and write the sum, unless the GEMM adds into the sum itself.
    if (m > 1 && !l.fusedGradAccumulation)
      compute += stageParams[k] * (2 * e + 2 * gradBytes) / HBM;
    slotCompute[k] = compute;
    stageFlops[k] = flops;
    slot[k] = compute + L * (tpTime.exposed + cpBlock + epBlock) + p2p;
  }
  // ZeRO-3 gathers a stage's parameters in every forward pass and the backward, prefetched
  // behind the compute; what the compute cannot hide is exposed in every micro-batch.
  double zero3Exposed = 0, zero3Hidden = 0;
  if (l.zero == 3) {
    const double gathers =
        passes * coll(Collective::AllGather, stageParams[0] * e, replicas, p.dpLink);
    zero3Exposed = m * std::max(0.0, gathers - slotCompute[0]);
    zero3Hidden = m * gathers - zero3Exposed;
  }
  // The schedule's lists played out (a row of the table or the learner's file alike).
  const ScheduleShape shape = scheduleShape(scheduleValue(l), pp, m, v);
  const PipelineTime pipe = pipelineTime(slot, m, v, shape.fill);
  const double forwardShare = totalSeconds(fwd) / blockS;
  for (int k = 0; k < pp; ++k) {
    p.stageForwardS.push_back(slot[size_t(k)] * forwardShare);
    p.stageBackwardS.push_back(slot[size_t(k)] * (1 - forwardShare));
  }
  const int busiest = int(std::max_element(slot.begin(), slot.end()) - slot.begin());

  // [SECTION] Gradient synchronisation and the optimizer step (the busiest stage's replicas)
  const double gradS = stageParams[busiest] * gradBytes;
  const double calls = std::max(1.0, std::round(double(l.dpCalls) / pp));
  // The gradients' sum (all-reduce; ZeRO: reduce-scatter) and, at ZeRO 1/2, the all-gather of
  // the updated parameters (Rajbhandari et al.). Overlapped (Megatron's --overlap-grad-reduce
  // and --overlap-param-gather, Megatron-Core's distributed optimizer): the buckets' sums run
  // under the last micro-batch's backward and the gathers under the next step's first forward,
  // each hidden up to that pass's time; a pipeline's earlier chunks could start sooner, which
  // this leaves out.
  const double gradSync =
      calls * coll(l.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter, gradS / calls,
                   replicas, p.dpLink);
  const double paramGather =
      l.zero == 1 || l.zero == 2
          ? calls *
                coll(Collective::AllGather, stageParams[busiest] * e / calls, replicas, p.dpLink)
          : 0;
  const int busiestLayers = layersOf(model.layers, pp, busiest);
  const double lastBackward = busiestLayers * (totalSeconds(bwd) + recomputeS);
  const double firstForward = busiestLayers * totalSeconds(fwd);
  const double dpExposed =
      (l.overlapDpComm ? std::max(0.0, gradSync - lastBackward) : gradSync) +
      (l.overlapParamGather ? std::max(0.0, paramGather - firstForward) : paramGather);
  // Adam (say) reads and writes its fp32 weights and each state (8 bytes each), reads the
  // gradient, and in mixed precision writes the bf16 weights the GEMMs read (fp8 also reads them
  // again to write their FP8 cast and its transpose, 2 + 1 + 1 bytes, once a step); the engine
  // also zeroes the gradients each step.
  const double updateBytes = 8.0 * (1 + optimizerStateSlots(l.optimizer)) + gradBytes +
                             (keepsMaster(l.precision) ? e : 0) +
                             (l.precision == Precision::Fp8Mixed ? e + 2 : 0);
  const double zeroingBytes = model.engineKernels ? gradBytes : 0;
  const double updateRate = r.optimizerBytesPerS > 0 ? r.optimizerBytesPerS : HBM;
  const double optimizerS = stageParams[busiest] / (l.zero >= 1 ? replicas : 1) *
                            (updateBytes / updateRate + zeroingBytes / HBM);

  p.stepSeconds = pipe.total + dpExposed + zero3Exposed + optimizerS;
  const int Lb = layersOf(model.layers, pp, busiest);
  p.split.compute = m * slotCompute[busiest];
  p.split.tpComm = m * Lb * tpTime.exposed;
  p.split.tpCommHidden = m * Lb * tpTime.hidden;
  p.split.cpComm = m * Lb * cpBlock;
  p.split.epComm = m * Lb * epBlock;
  p.split.ppComm = m * p2p;
  p.split.ppBubble = pipe.bubble;
  p.split.dpCommExposed = dpExposed + zero3Exposed;
  p.split.dpCommHidden = gradSync + paramGather - dpExposed + zero3Hidden;
  p.split.optimizer = optimizerS;

  // [SECTION] Throughput
  const double samples = l.globalBatch, tokens = samples * model.tokensPerSample();
  p.samplesPerS = samples / p.stepSeconds;
  p.tokensPerS = tokens / p.stepSeconds;
  double stepFlops = 0;  // one replica's stages, each split over tp x cp GPUs
  for (int k = 0; k < pp; ++k) stepFlops += m * stageFlops[k];
  p.hardwareFlops = stepFlops * l.dp * t * l.cp;
  p.modelFlops = tokens * modelFlopsPerToken(model.activeParameterCount(), model.layers,
                                             model.hidden, model.seq, model.gpt());
  const double gpuSeconds = p.stepSeconds * cluster.gpus;
  p.tflopsPerGpu = p.hardwareFlops / gpuSeconds / 1e12;
  p.modelTflopsPerGpu = p.modelFlops / gpuSeconds / 1e12;
  p.hfu = p.hardwareFlops / (gpuSeconds * r.peakFlops);
  p.mfu = p.modelFlops / (gpuSeconds * r.peakFlops);

  // [SECTION] Memory: every stage, the largest reported
  const double perToken =
      blockActivationBytesPerToken(w, l.recompute, model.activations, l.precision);
  p.memoryCapacity = cluster.gpu.hbmBytes();
  for (int k = 0; k < pp; ++k) {
    const ModelStateBytes states =
        modelStates(stageParams[k], l.zero, l.precision, l.optimizer, replicas, gradBytes);
    MemoryPerGpu mem;
    mem.params = states.params;
    mem.grads = states.grads;
    mem.optimizer = states.optimizer;
    const double held = shape.held[size_t(k)];
    mem.activations = held * T * layersOf(model.layers, pp, k) * perToken;
    if (k == 0) mem.activations += held * T * endActivationBytesPerToken(model, l, true);
    if (k == pp - 1)
      mem.activations +=
          shape.held[size_t(pp - 1)] * T * endActivationBytesPerToken(model, l, false);
    // Full recomputation refills one block's buffers for its backward; ZeRO-3 holds the
    // gathered parameters of the block running and the one prefetched.
    if (full)
      mem.workspace +=
          T * blockActivationBytesPerToken(w, Recompute::None, model.activations, l.precision);
    if (l.zero == 3) mem.workspace += 2 * blockParams / t * e;
    if (k == 0 || mem.total() > p.memory.total()) {
      p.memory = mem;
      p.memoryStage = k;
    }
  }
  return p;
}

// [SECTION] Sweeps

std::vector<SweepPoint> sweep(const ModelSpec& model, const Layout& layout, const Cluster& cluster,
                              SweepAxis axis, const std::vector<int>& values) {
  std::vector<SweepPoint> points;
  for (int value : values) {
    Layout l = layout;
    Cluster c = cluster;
    switch (axis) {
      case SweepAxis::Tp:
        l.tp = value;
        break;
      case SweepAxis::Pp:
        l.pp = value;
        break;
      case SweepAxis::Cp:
        l.cp = value;
        break;
      case SweepAxis::Ep:
        l.ep = value;
        break;
      case SweepAxis::MicroBatches:
        l.microBatches = value;
        l.microBatchSize = 0;
        break;
      case SweepAxis::MicroBatchSize:
        l.microBatchSize = value;
        l.microBatches = 0;
        break;
      case SweepAxis::Gpus:
        c.gpus = value;
        break;
      case SweepAxis::Zero:
        l.zero = value;
        break;
    }
    if (axis != SweepAxis::Gpus || layout.dp == 0) l.dp = 0;  // dp follows the other degrees
    SweepPoint point;
    point.value = value;
    if (auto why = validate(model, l, c))
      point.refused = *why;
    else
      point.projection = project(model, l, c);
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace paralab::projection
