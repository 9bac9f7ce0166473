// The projection: a training step of a model (the engine's MLP or GPT at any size, or a named
// shape such as Megatron-LM's GPTs) in a layout (dp x tp x pp x cp, ep, micro-batches, ZeRO,
// recomputation, schedule) on a cluster of real GPUs (resources/gpus), projected from the GPUs'
// datasheets and the links' alpha-beta figures: memory per GPU by category, step time split into
// compute / TP communication / PP bubble / exposed DP communication (the communication that
// overlaps hides reported beside it, as the overlap meter does), tokens/s, TFLOP/s per GPU and
// MFU. Every figure it gives is "projected", never measured, and is shown as such.
// Validated against Narayanan et al. 2021 (Megatron-LM, SC'21) Table 1 and the ZeRO paper's
// memory figures (tests/engine/tst_projection.cpp) and Megatron-Core's H100 table with DP and TP
// overlap (tst_projection_overlap.cpp). Try:
//   paralab-run --model gpt --layers 80 --hidden 12288 --heads 96 --seq 2048 --vocab 51200
//               --batch 2304 --tp 8 --pp 8 --recompute full --project a100-80gb:1536  (one line)
//
// A window panel calls it like this (no Qt, value types only, safe to call from a worker thread):
//   Cluster cluster{loadGpu("h100-sxm"), 512};                 // GPUs, 8 per node, InfiniBand
//   ModelSpec model = modelOf(session config, kEngineVocab);    // or ModelSpec::megatronGpt(...)
//   Layout layout = layoutOf(session config);                   // or set its fields
//   if (auto why = validate(model, layout, cluster)) show(*why); // "tp: ..." one line
//   Projection p = project(model, layout, cluster);             // throws ConfigError otherwise
//   p.memory.total() > p.memoryCapacity: draw red, over by the difference;
//   p.split: the step-time bars; p.mfu; p.blockOps: the per-operation roofline view.
//   sweep(model, layout, cluster, SweepAxis::Tp, {1, 2, 4, 8}): one point per value, each a
//   Projection or the reason that value is refused.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "projection/comm_model.h"
#include "projection/compute_model.h"
#include "projection/gpu_spec.h"
#include "projection/memory_model.h"
#include "projection/pipeline_schedule.h"
#include "run_choices.h"

namespace paralab {
struct RunConfig;
}

namespace paralab::projection {

// The GPT's vocabulary when nothing gives it: printable ASCII, as memory_estimate.cpp takes the
// engine's character vocabulary before the text is read.
constexpr int kEngineVocab = 96;

// What is trained. The GPT is the engine's (model/gpt.h: pre-LayerNorm blocks of causal
// self-attention and a GELU FFN of 4h, learned positions, untied head) unless the flags below
// make it Megatron-LM's; the MLP is the engine's (model/mlp.h).
struct ModelSpec {
  enum class Kind { Gpt, Mlp };
  Kind kind = Kind::Gpt;
  std::string name;  // a label ("" = made from the shape)
  int layers = 2, hidden = 128, heads = 4, seq = 64, vocab = kEngineVocab;
  int ffnMultiple = 4;
  int input = 784, classes = 10;  // the MLP's input pixels and classes
  int experts = 0, topk = 1;      // experts > 0: the GPT's FFN is a mixture of experts
  bool tiedEmbeddings = false;    // the output head is the token embedding (no head bias)
  bool dropout = false;           // dropout after attention's softmax and in both residuals
  ActivationRecipe activations = ActivationRecipe::Engine;
  // The engine's own CPU layers: every bias a pass of its own, the gradients zeroed before
  // each step's backward, and under tp the output head and loss whole on every rank
  // (host_profile.h projects them); a cluster's kernels fuse the first, skip the second and
  // split the head by vocabulary.
  bool engineKernels = false;

  bool gpt() const { return kind == Kind::Gpt; }
  int tokensPerSample() const { return gpt() ? seq : 1; }
  // P: the engine's count (GptShape, MlpShape), less the head when it is tied. For Megatron's
  // GPT this is Narayanan et al.'s eq. (2), 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), plus the
  // final LayerNorm's 2h.
  double parameterCount() const;
  // What one token uses: P less the experts its top-k skips.
  double activeParameterCount() const;
  std::string describe()
      const;  // "GPT: 80 blocks, H 12288, 96 heads, T 2048, V 51200, 145.6 B parameters"

  // Megatron-LM's GPT (Narayanan et al. 2021 §5): tied embeddings, dropout, FFN 4h, its
  // activation recipe (Korthikanti et al. 2022).
  static ModelSpec megatronGpt(int layers, int hidden, int heads, int seq, int vocab);
};

struct Layout;
// The layout's --schedule value: its file, or its row's name.
std::string scheduleValue(const Layout& l);

// How it is split and run. dp, microBatches and microBatchSize may be left 0: resolve() derives
// them (dp = GPUs / (tp pp cp); without either micro-batch figure, micro-batches of 1 sequence,
// Megatron-LM's default).
struct Layout {
  int dp = 0;
  int tp = 1, pp = 1, cp = 1, ep = 1;  // ep divides dp (process_grid.h)
  CpOrder cpOrder = CpOrder::Zigzag;     // a cp rank's chunks: zigzag (2 cp of them) | contiguous
  bool sequenceParallel = false;
  int globalBatch = 512;   // sequences (samples) per step
  int microBatches = 0;    // per data-parallel replica per step
  int microBatchSize = 0;  // sequences per micro-batch
  int virtualStages = 1;   // interleaved 1F1B: model chunks per GPU (1 = not interleaved)
  Schedule schedule = Schedule::OneFOneB;
  // --schedule FILE: a learner's table (parallel/pipeline/schedule_file.h), checked as a
  // training run checks it and played as the table's rows are; empty: the row `schedule`.
  std::string scheduleFile;
  int zero = 0;  // ZeRO stage 0..3 over the data-parallel replicas
  Recompute recompute = Recompute::None;
  Precision precision = Precision::Bf16Mixed;
  std::string optimizer = "adam";
  // Gradients all-reduced (ZeRO: reduce-scattered) in buckets while the last micro-batch's
  // backward runs (the engine's bucketed sync, PyTorch DDP, Megatron's --overlap-grad-reduce);
  // false: after the backward (Megatron-LM 2021).
  bool overlapDpComm = true;
  // ZeRO 1/2: the updated parameters all-gathered bucket by bucket while the next step's first
  // micro-batch runs its forward (Megatron's --overlap-param-gather); false: before it.
  bool overlapParamGather = false;
  // Tensor-parallel collectives cut into ring steps beside their GEMMs (--tp-overlap; Megatron's
  // --tp-comm-overlap, PyTorch's AsyncTP); the engine's rules ask for sequence parallelism.
  bool overlapTpComm = false;
  // Each micro-batch's weight gradients added into the accumulated ones by the GEMM itself
  // (false: a separate pass reads and writes the accumulated gradients).
  bool fusedGradAccumulation = false;
  // Gradients accumulated and reduced in fp32 (4 bytes), not at the precision's width: Megatron's
  // main_grad, which its arguments force on in bf16 ("bfloat16 requires gradient accumulation
  // and all-reduce to be done in fp32": --accumulate-allreduce-grads-in-fp32). Mixed precision
  // with Adam is then Megatron's 18 bytes a parameter, not ZeRO's 16.
  bool fp32MainGrads = false;
  // The softmax cross-entropy over the vocabulary as separate tensor operations, each a pass
  // over the logits (Megatron-Core's vocab-parallel loss without --cross-entropy-loss-fusion,
  // megatron/core/tensor_parallel/cross_entropy.py: 52 bytes a bf16 logit, compute_model.h);
  // false: one fused pass forward and one backward.
  bool unfusedCrossEntropy = false;
  // Attention's kernel: "" computes its products as GEMMs and writes the scores to memory
  // (Megatron-LM 2021); "cudnn" or "flash2" runs one fused kernel at the rate measured for it
  // on the GPU (resources/gpus: fused_attention; Transformer Engine runs cuDNN's on Hopper,
  // PyTorch's scaled_dot_product_attention FlashAttention-2).
  std::string attentionKernel;
  // Gradient synchronisation's collective calls per step, each paying the link's latency:
  // 0 = one flat buffer per stage (Megatron-LM's). The engine's per-tensor sync makes one per
  // parameter tensor, its buckets one per bucket, its ZeRO a reduce-scatter and an all-gather
  // per model unit: layoutOf counts them for the whole model, a stage makes its 1/pp share.
  int dpCalls = 0;
};

// Seconds of one step of the busiest pipeline stage, by where they go; they sum to the step.
// Communication is split as the overlap meter splits it (metrics/overlap.h): the exposed part
// is on the step's path and in total(); the hidden part ran while the GPU computed and is not.
struct StepSplit {
  double compute = 0;  // GEMMs and memory-bound kernels, recomputation included
  // Tensor-parallel all-reduces (or reduce-scatter + all-gather): all of it exposed, or under
  // overlapTpComm what the GEMMs beside them do not cover.
  double tpComm = 0;
  double cpComm = 0;         // context-parallel K/V exchange not hidden behind attention
  double epComm = 0;         // expert-parallel all-to-alls
  double ppComm = 0;         // stage-to-stage sends on the critical path
  double ppBubble = 0;       // idle while the pipeline fills and drains
  double dpCommExposed = 0;  // gradient (and ZeRO) communication not hidden behind compute
  double optimizer = 0;      // the optimizer step (memory-bound)
  // Copying the batch into the rank's buffers: a host's measured rate (host_profile.h); 0 on a
  // cluster, whose input pipeline runs beside the step.
  double data = 0;
  // Hidden behind compute (not in total()): tensor-parallel communication under the GEMMs,
  // data-parallel under the last backward and the first forward.
  double tpCommHidden = 0, dpCommHidden = 0;
  double total() const {
    return compute + tpComm + cpComm + epComm + ppComm + ppBubble + dpCommExposed + optimizer +
           data;
  }
};

struct Projection {
  ModelSpec model;
  Layout layout;  // resolved: dp, microBatches and microBatchSize filled in
  Cluster cluster;
  double parameters = 0;
  double stepSeconds = 0;
  StepSplit split;
  double tokensPerS = 0, samplesPerS = 0;
  // The throughput in the model's own unit: tokens/s for a GPT, samples/s for the MLP (whose
  // sample is an image, no tokens).
  double throughput() const { return model.gpt() ? tokensPerS : samplesPerS; }
  const char* throughputUnit() const { return model.gpt() ? "tokens/s" : "samples/s"; }
  // FLOPs of one step: what the GPUs execute (recomputation included: Narayanan et al.'s
  // count, their eq. (3) for full recomputation) and what the model needs (MFU's).
  double hardwareFlops = 0, modelFlops = 0;
  double tflopsPerGpu = 0;       // hardware FLOPs / (step x GPUs), 1e12
  double modelTflopsPerGpu = 0;  // model FLOPs / (step x GPUs), 1e12
  double mfu = 0, hfu = 0;       // of the precision's dense peak
  MemoryPerGpu memory;           // the stage that needs the most
  int memoryStage = 0;
  double memoryCapacity = 0;  // the GPU's, bytes
  bool fits() const { return memory.total() <= memoryCapacity; }
  std::vector<OpCost> blockOps;  // one block, one micro-batch, one GPU: forward then backward
  // One micro-batch on each pipeline stage, seconds, its slot split by a block's forward share:
  // what a schedule played out in time needs (sharedCoresPipelineTime).
  std::vector<double> stageForwardS, stageBackwardS;
  Link tpLink, ppLink, dpLink, cpLink, epLink;
  // Which published runs this model is checked against.
  static constexpr const char* kValidatedBy =
      "Narayanan et al. 2021 (Megatron-LM, SC'21) Table 1; Megatron-Core r0.8.0's H100 weak "
      "scaling table (NVIDIA/Megatron-LM README); Rajbhandari et al. 2020 (ZeRO); torchtitan "
      "2024, Llama 3.1 405B (interleaved 1F1B)";
};

// The layout with dp, microBatches and microBatchSize derived, or nullopt where validate() fails.
// A batch that does not split evenly is paced by its largest part (the engine's shards).
std::optional<Layout> resolve(const ModelSpec& model, const Layout& layout, const Cluster& cluster);
// One block, and the model's ends, of one micro-batch on one GPU of a resolved layout: what the
// compute model costs (compute_model.h).
BlockWork blockOf(const ModelSpec& model, const Layout& layout);
EndsWork endsOf(const ModelSpec& model, const Layout& layout);

// One line naming the first bad field and what is allowed ("tp: 3 does not divide the hidden
// width 4096 ..."), or nothing. The layout's rules are the engine's (RunConfig::validateRules):
// a layout the engine trains is one the projection projects, and the other way round; the
// projection adds the cluster's (the GPU count) and its own knobs' (micro-batch size,
// interleaving).
std::optional<std::string> validate(const ModelSpec& model, const Layout& layout,
                                    const Cluster& cluster);
// Throws ConfigError with validate()'s line when the inputs are refused.
Projection project(const ModelSpec& model, const Layout& layout, const Cluster& cluster);

// One axis swept, the rest kept: each value's projection, or why it is refused.
enum class SweepAxis { Tp, Pp, Cp, Ep, MicroBatches, MicroBatchSize, Gpus, Zero };
struct SweepPoint {
  int value = 0;
  std::optional<Projection> projection;
  std::string refused;  // validate()'s line when there is no projection
};
std::vector<SweepPoint> sweep(const ModelSpec& model, const Layout& layout, const Cluster& cluster,
                              SweepAxis axis, const std::vector<int>& values);

// One JSON object, every figure under keys that say "projected": see toJson's keys in
// projection.cpp (step_ms, split_ms, tokens_per_s, tflops_per_gpu, model_tflops_per_gpu, mfu,
// mem_per_gpu {params, grads, optimizer, activations, workspace, total}, mem_capacity, fits).
nlohmann::json toJson(const Projection& p);
// The same figures as a readable table (paralab-run --project), each line saying "projected".
std::string toText(const Projection& p);

// A run's settings as the projection's inputs: the engine's model (vocabulary `vocab` for the
// GPT) and its layout (dp from --dp or derived, --microbatches, --zero, --recompute, --schedule,
// --sp, --optimizer, --batch as the global batch; cp when the settings have it).
ModelSpec modelOf(const RunConfig& c, int vocab);
Layout layoutOf(const RunConfig& c);

// `paralab-run --project GPU:COUNT`: the run the other settings describe, projected instead of
// trained, on COUNT GPUs of a kind of resources/gpus.
struct RunProjection {
  std::string target;  // "a100-80gb:1536"
  int gpusPerNode = 8;
  std::string nodeLink = "infiniband";
  std::string precision = "bf16";
  int vocab = 0;  // the GPT's vocabulary; 0: kEngineVocab
  std::string attentionKernel = "materialised";  // or one of the GPU's measured kernels
  // Whether --microbatches was given; if not, micro-batches of one sample (Megatron-LM's
  // default micro-batch size), as many as each replica's share of the batch.
  bool microBatchesGiven = false;
  // The settings the user gave (command-line flags; a --config file's keys), so a parameter of a
  // choice the layout does not make is refused as a training run refuses it (--recompute on the
  // MLP): schema.h notApplicableAsGiven.
  std::set<std::string> givenFlags, configKeys;
};
// Throws ConfigError with one line naming the field and what is allowed: the target's form,
// the GPU kind, the settings' own choices, what a projection covers (the MLP and the GPT under
// --strategy sync), then validate()'s checks.
Projection projectRun(const RunConfig& c, const RunProjection& request);

}  // namespace paralab::projection
