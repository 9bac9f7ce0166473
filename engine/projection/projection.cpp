// The projection (projection.h): the compute, communication, pipeline and memory parts put
// together for one training step. See tests/engine/tst_projection.cpp.
#include "projection/projection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config.h"
#include "model/gpt.h"  // GptShape, MoeFfnShape
#include "model/mlp.h"
#include "parallel/holdings.h"  // optimizerStateSlots
#include "parallel/process_grid.h"
#include "schema.h"             // findSetting: settings that may not exist in every build

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

std::optional<std::string> validate(const ModelSpec& m, const Layout& l, const Cluster& c) {
  if (c.gpus < 1) return "project: the GPU count must be at least 1";
  if (!(c.gpu.bf16Tflops > 0 && c.gpu.hbmGBps > 0))
    return "project: no GPU kind (allowed: " + gpuNamesText() + ", from resources/gpus)";
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
  const int model = l.tp * l.pp * l.cp;
  if (c.gpus % model != 0)
    return "project: " + n(c.gpus) + " GPUs are not divisible by tp x pp" +
           (l.cp > 1 ? " x cp" : "") + " = " + n(model) + " (allowed: a multiple of " + n(model) +
           ")";
  const int dp = l.dp > 0 ? l.dp : c.gpus / model;
  if (auto err = ProcessGrid::validate({dp, l.tp, l.pp, l.ep, l.cp}, c.gpus))
    return l.dp > 0 ? "dp: " + n(l.dp) + " x tp x pp" + (l.cp > 1 ? " x cp" : "") + " = " +
                          n((long long)l.dp * model) + " must equal the " + n(c.gpus) +
                          " GPUs (allowed: leave --dp out, or " + n(c.gpus / model) + ")"
                    : *err;
  if (m.hidden % l.tp != 0)
    return "tp: " + n(l.tp) + " must divide the hidden width H = " + n(m.hidden);
  if (l.pp * l.virtualStages > m.layers)
    return "pp: " + n(l.pp) + " stages" +
           (l.virtualStages > 1 ? " of " + n(l.virtualStages) + " chunks" : "") + " but only " +
           n(m.layers) + " blocks (allowed: pp <= layers)";
  if (m.gpt()) {
    if (m.hidden % m.heads != 0)
      return "heads: " + n(m.heads) + " must divide the hidden width H = " + n(m.hidden);
    if (m.heads % l.tp != 0)
      return "tp: tensor parallelism splits attention by heads, and " + n(l.tp) +
             " does not divide --heads " + n(m.heads);
    if (m.seq % l.cp != 0)
      return "cp: context parallelism splits each sequence's " + n(m.seq) + " tokens over " +
             n(l.cp) + " ranks (allowed: a divisor of --seq)";
    if (l.sequenceParallel && l.tp > 1 && (m.seq / l.cp) % l.tp != 0)
      return "sp: sequence parallelism splits the " + n(m.seq / l.cp) + " tokens over the " +
             n(l.tp) + " tensor-parallel ranks (allowed: seq a multiple of tp)";
  } else if (l.cp > 1) {
    return "cp: context parallelism splits sequences; the MLP has none (allowed: 1)";
  }
  if (m.experts > 0) {
    if (m.experts % l.ep != 0)
      return "ep: " + n(l.ep) + " must divide the number of experts (" + n(m.experts) + ")";
    if (m.topk < 1 || m.topk > m.experts)
      return "topk: " + n(m.topk) + " (allowed: 1.." + n(m.experts) + ")";
  } else if (l.ep > 1) {
    return "ep: expert parallelism needs experts (allowed: 1)";
  }
  if (l.zero >= 2 && l.pp > 1)
    return "zero: stage " + n(l.zero) +
           " shards the gradients that a pipeline's micro-batches accumulate (allowed with pp > "
           "1: 0, 1)";
  if (l.globalBatch % dp != 0)
    return "batch: the global batch " + n(l.globalBatch) + " does not split over the " + n(dp) +
           " data-parallel replicas (allowed: a multiple of " + n(dp) + ")";
  const int perReplica = l.globalBatch / dp;
  if (l.microBatches < 0 || l.microBatchSize < 0) return "microbatches: must be at least 1";
  if (l.microBatches > 0 && perReplica % l.microBatches != 0)
    return "microbatches: " + n(l.microBatches) + " does not divide the " + n(perReplica) +
           " samples each data-parallel replica gets per step (allowed: a divisor of " +
           n(perReplica) + ")";
  if (l.microBatchSize > 0 && perReplica % l.microBatchSize != 0)
    return "micro-batch size: " + n(l.microBatchSize) + " does not divide the " + n(perReplica) +
           " samples each data-parallel replica gets per step";
  if (l.microBatches > 0 && l.microBatchSize > 0 && l.microBatches * l.microBatchSize != perReplica)
    return "microbatches: " + n(l.microBatches) + " of " + n(l.microBatchSize) +
           " samples is not the " + n(perReplica) + " each data-parallel replica gets per step";
  if (l.virtualStages > 1) {
    if (l.pp < 2) return "virtual stages: interleaving needs a pipeline (pp 2 or more)";
    const int m = l.microBatches > 0 ? l.microBatches : perReplica / std::max(1, l.microBatchSize);
    if (m % l.pp != 0)
      return "microbatches: the interleaved schedule needs a multiple of pp = " + n(l.pp) +
             " micro-batches (Narayanan et al. 2021 §2.2.2), not " + n(m);
  }
  return std::nullopt;
}

std::optional<Layout> resolve(const ModelSpec& m, const Layout& layout, const Cluster& c) {
  if (validate(m, layout, c)) return std::nullopt;
  Layout l = layout;
  l.dp = c.gpus / (l.tp * l.pp * l.cp);
  const int perReplica = l.globalBatch / l.dp;
  if (l.microBatches == 0 && l.microBatchSize == 0) l.microBatchSize = 1;
  if (l.microBatches == 0) l.microBatches = perReplica / l.microBatchSize;
  if (l.microBatchSize == 0) l.microBatchSize = perReplica / l.microBatches;
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
  const Roofline r = Roofline::of(cluster.gpu, l.precision);
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
  const double recomputeS = full ? totalSeconds(fwd) : selective ? coreS : 0;
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
  const int gradBytes = int(e);  // gradients at the GEMMs' width (ZeRO's 2 bytes in bf16)
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
    slot[k] = compute + L * (tpBlock + cpBlock + epBlock) + p2p;
  }
  // ZeRO-3 gathers a stage's parameters in every forward pass and the backward, prefetched
  // behind the compute; what the compute cannot hide is exposed in every micro-batch.
  double zero3Exposed = 0;
  if (l.zero == 3) {
    const double gathers =
        passes * coll(Collective::AllGather, stageParams[0] * e, replicas, p.dpLink);
    zero3Exposed = m * std::max(0.0, gathers - slotCompute[0]);
  }
  const PipelineTime pipe = pipelineTime(slot, m, v);
  const double forwardShare = totalSeconds(fwd) / blockS;
  for (int k = 0; k < pp; ++k) {
    p.stageForwardS.push_back(slot[size_t(k)] * forwardShare);
    p.stageBackwardS.push_back(slot[size_t(k)] * (1 - forwardShare));
  }
  const int busiest = int(std::max_element(slot.begin(), slot.end()) - slot.begin());

  // [SECTION] Gradient synchronisation and the optimizer step (the busiest stage's replicas)
  const double gradS = stageParams[busiest] * gradBytes;
  const double calls = std::max(1.0, std::round(double(l.dpCalls) / pp));
  double dpS = 0;
  if (l.zero == 0)
    dpS = calls * coll(Collective::AllReduce, gradS / calls, replicas, p.dpLink);
  else  // reduce-scatter the gradients, all-gather the updated parameters (Rajbhandari et al.)
    dpS = calls * (coll(Collective::ReduceScatter, gradS / calls, replicas, p.dpLink) +
                   (l.zero < 3 ? coll(Collective::AllGather, stageParams[busiest] * e / calls,
                                      replicas, p.dpLink)
                               : 0));
  const double lastBackward =
      layersOf(model.layers, pp, busiest) * (totalSeconds(bwd) + recomputeS);
  const double dpExposed = l.overlapDpComm ? std::max(0.0, dpS - lastBackward) : dpS;
  // Adam (say) reads and writes its fp32 weights and each state (8 bytes each), reads the
  // gradient, and in mixed precision writes the bf16 weights the GEMMs read; the engine also
  // zeroes the gradients each step.
  const double updateBytes = 8.0 * (1 + optimizerStateSlots(l.optimizer)) + gradBytes +
                             (l.precision == Precision::Bf16Mixed ? e : 0);
  const double zeroingBytes = model.engineKernels ? gradBytes : 0;
  const double updateRate = r.optimizerBytesPerS > 0 ? r.optimizerBytesPerS : HBM;
  const double optimizerS = stageParams[busiest] / (l.zero >= 1 ? replicas : 1) *
                            (updateBytes / updateRate + zeroingBytes / HBM);

  p.stepSeconds = pipe.total + dpExposed + zero3Exposed + optimizerS;
  const int Lb = layersOf(model.layers, pp, busiest);
  p.split.compute = m * slotCompute[busiest];
  p.split.tpComm = m * Lb * tpBlock;
  p.split.cpComm = m * Lb * cpBlock;
  p.split.epComm = m * Lb * epBlock;
  p.split.ppComm = m * p2p;
  p.split.ppBubble = pipe.bubble;
  p.split.dpCommExposed = dpExposed + zero3Exposed;
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
        modelStates(stageParams[k], l.zero, l.precision, l.optimizer, replicas);
    MemoryPerGpu mem;
    mem.params = states.params;
    mem.grads = states.grads;
    mem.optimizer = states.optimizer;
    const double held = microBatchesInFlight(l.schedule, pp, m, k, v);
    mem.activations = held * T * layersOf(model.layers, pp, k) * perToken;
    if (k == 0) mem.activations += held * T * endActivationBytesPerToken(model, l, true);
    if (k == pp - 1)
      mem.activations += microBatchesInFlight(l.schedule, pp, m, pp - 1, v) * T *
                         endActivationBytesPerToken(model, l, false);
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

// [SECTION] JSON and the run's settings

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
              {"dp", l.dp},
              {"tp", l.tp},
              {"pp", l.pp},
              {"cp", l.cp},
              {"ep", l.ep},
              {"microbatches", l.microBatches},
              {"microbatch_size", l.microBatchSize},
              {"global_batch", l.globalBatch},
              {"schedule", scheduleName(l.schedule)},
              {"virtual_stages", l.virtualStages},
              {"zero", l.zero},
              {"dp_calls", std::max(1, l.dpCalls)},
              {"dp_overlapped", l.overlapDpComm},
              {"recompute", l.recompute == Recompute::Full        ? "full"
                            : l.recompute == Recompute::Selective ? "selective"
                                                                  : "none"},
              {"precision", precisionName(l.precision)},
              {"step_ms", ms(p.stepSeconds)},
              {"split_ms", split},
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
      layout.c_str(), l.microBatches, l.microBatchSize, l.globalBatch, scheduleName(l.schedule),
      l.virtualStages > 1 ? (" interleaved x" + n(l.virtualStages)).c_str() : "",
      l.recompute == Recompute::Full        ? "full"
      : l.recompute == Recompute::Selective ? "selective"
                                            : "none",
      l.zero,
      l.precision == Precision::Bf16Mixed ? "bf16 mixed precision" : precisionName(l.precision),
      l.optimizer.c_str());
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
  part("tensor-parallel communication", p.split.tpComm, true);
  part("context-parallel communication", p.split.cpComm, false);
  part("expert-parallel all-to-all", p.split.epComm, false);
  part("pipeline sends", p.split.ppComm, l.pp > 1);
  part("pipeline bubble", p.split.ppBubble, true);
  part("exposed data-parallel communication", p.split.dpCommExposed, true);
  part("optimizer step", p.split.optimizer, true);
  part("copying the batch", p.split.data, p.split.data > 0);
  part("total", step, true);
  add("Throughput (projected): %.0f tokens/s, %.1f samples/s; %.1f TFLOP/s per GPU executed "
      "(recomputation included), %.1f model TFLOP/s per GPU, MFU %.1f%% of the %s peak "
      "%.0f TFLOP/s\n",
      p.tokensPerS, p.samplesPerS, p.tflopsPerGpu, p.modelTflopsPerGpu, 100 * p.mfu,
      precisionName(l.precision), c.gpu.peakFlops(l.precision) / 1e12);
  const MemoryPerGpu& m = p.memory;
  const double GB = 1e9;
  add("Memory per GPU (projected, pipeline stage %d, GB = 1e9 bytes): params %.3g, grads %.3g, "
      "optimizer %.3g, activations %.3g, workspace %.3g; total %.3g of %.0f GB: %s",
      p.memoryStage, m.params / GB, m.grads / GB, m.optimizer / GB, m.activations / GB,
      m.workspace / GB, m.total() / GB, p.memoryCapacity / GB,
      p.fits() ? "fits" : "does not fit, over by ");
  if (!p.fits()) add("%.3g GB", (m.total() - p.memoryCapacity) / GB);
  add("\nThe model behind these figures is checked against %s (tests/engine/tst_projection.cpp)\n",
      Projection::kValidatedBy);
  return out;
}

ModelSpec modelOf(const RunConfig& c, int vocab) {
  ModelSpec m;
  m.kind = c.model == "gpt" ? ModelSpec::Kind::Gpt : ModelSpec::Kind::Mlp;
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.seq = c.seq;
  m.vocab = vocab;
  if (c.model == "gpt" && c.hasExperts()) {
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
  // Context parallelism is a setting of its own where the build has it.
  if (const Setting* s = findSetting("cp")) {
    const SettingValue value = s->get(c);
    if (const auto* v = std::get_if<int64_t>(&value)) l.cp = int(*v);
  }
  l.sequenceParallel = c.sp;
  l.globalBatch = c.globalBatch();
  l.microBatches = c.microbatches;
  l.schedule = parseSchedule(c.schedule);
  l.zero = c.zero;
  l.recompute = c.model == "gpt" ? recomputeFromName(c.recompute) : Recompute::None;
  l.optimizer = c.optimizer;
  l.overlapDpComm = c.dpVersion == "bucket";
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
  if (q.gpusPerNode < 1 || q.gpusPerNode > 1024)
    throw ConfigError("gpus-per-node: " + n(q.gpusPerNode) + " is out of range (allowed: 1..1024)");
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
  if (config.model != "gpt" && config.model != "mlp")
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
  if (q.vocab != 0 && config.model != "gpt")
    throw ConfigError(
        "vocab: the MLP's inputs and classes are its data set's (allowed: --vocab "
        "with --model gpt)");
  if (q.vocab < 0 || q.vocab > 10000000)
    throw ConfigError("vocab: " + n(q.vocab) + " is out of range (allowed: 1..10000000)");
  c.ranks = cluster.gpus;
  const ModelSpec model = modelOf(c, q.vocab > 0 ? q.vocab : kEngineVocab);
  Layout layout = layoutOf(c);
  layout.precision = precision;
  if (!q.microBatchesGiven) layout.microBatches = 0;
  if (auto err = validate(model, layout, cluster)) throw ConfigError(*err);
  return project(model, layout, cluster);
}

}  // namespace paralab::projection
