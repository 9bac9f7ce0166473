// The settings table's rows for where the math runs, the model, its data and training
// (run_settings.h). See tests/engine/tst_schema.cpp and `paralab-run --help`.
#include "capabilities.h"
#include "run_settings.h"
#include "train/precision.h"

namespace paralab::settings_rows {

namespace {

std::vector<SettingChoice> kernelChoices(const RunConfig& c) {
  std::vector<SettingChoice> out;
  for (const GemmChoice& k : gemmChoices(c.device)) out.push_back({k.name, k.name, k.summary});
  return out;
}

// Images for the MLP and the MoE, text for the GPT.
std::vector<SettingChoice> datasetChoices(const RunConfig& c) {
  if (c.model == ModelKind::Gpt)
    return {{"fortunes", "Fortunes (text)", "Debian's quotations and literature, 2.5 MB"},
            {"synthetic", "Synthetic text", "Words with a fixed successor each, generated"}};
  return {{"fashion-mnist", "Fashion-MNIST", "Zalando's clothing images"},
          {"synthetic", "Synthetic (Gaussian blobs)", "Generated in memory"}};
}

// A loss scale is fp16's: bf16 has fp32's range and needs none.
Setting::Why fp16Only(const RunConfig& c) {
  if (c.precision == Dtype::Fp16) return std::nullopt;
  return std::string("a loss scale is fp16's (allowed with --precision fp16; bf16 needs none)");
}

}  // namespace

void addModelRows(std::vector<Setting>& t) {
  // [SECTION] Where the math runs and how many ranks
  t.push_back(field("device", &RunConfig::device)
                  .in(kExecution, "Device")
                  .describe("Where the ranks compute (rank r on GPU r mod G)",
                            "The CPU, or GPUs (tensors in device memory). The GEMM kernel list "
                            "follows the device."));
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
                  .appliesWhen(gptOnly)
                  .fixedPerRun()
                  .partOfAChoice());
  t.push_back(field("ffn", &RunConfig::ffn)
                  .in(kModel, "FFN")
                  .describe("The GPT blocks' feed-forward network: dense, or a mixture of experts",
                            "Dense: every token through one C→4C→C FFN. Mixture of experts: a "
                            "router sends each token to its top-k of --experts FFNs, which "
                            "--ep spreads over ranks (tokens travel by all-to-all).")
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
                  .describe("Batch B: samples per optimizer step (global with strong scaling, "
                            "per rank with weak), --accumulate's micro-batches inside it",
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
  // Mixed precision (train/precision.h): one row for a training run and for --project.
  t.push_back(
      field("precision", &RunConfig::precision)
          .in(kTraining, "Precision")
          .describe("fp32|bf16|fp16 (tf32, fp8: --project only): what parameters, "
                    "activations and gradients are stored as (bf16, fp16: mixed "
                    "precision with fp32 master weights; --project assumes bf16 unless "
                    "given)",
                    "16-bit values are really rounded where a tensor is stored; the "
                    "optimizer updates an fp32 master copy, GEMMs sum in fp32, "
                    "LayerNorm's statistics, the softmax and the loss stay fp32. The CPU "
                    "kernels widen 16-bit values to compute: the memory and numerics are "
                    "16-bit, the speed is fp32's, but a bf16 run on a CPU with AMX computes its "
                    "forward weight GEMMs in bf16 arithmetic (PARALAB_BF16_GEMM=off: fp32). On a "
                    "GPU (--kernel tensor-core) the GEMMs run on "
                    "16-bit tensor cores (lessons/reference/precision.md).")
          .fixedPerRun());
  t.push_back(field("loss-scale", &RunConfig::lossScale)
                  .in(kTraining, "Loss scale")
                  .describe("dynamic|N: fp16's loss scale (dynamic: starts at 2^16, halves on "
                            "an overflow, whose step is skipped, doubles after "
                            "--loss-scale-window clean steps; N: fixed, 1 = none)",
                            "Gradients below fp16's smallest value (6e-8) flush to zero; "
                            "multiplying the loss by S before the backward keeps them.")
                  .shaped("dynamic or a number from 1 to 1e30",
                          [](const RunConfig& c) -> Setting::Why {
                            try {
                              parseLossScale(c.lossScale);
                            } catch (const ConfigError& e) {
                              return std::string(e.what());
                            }
                            return std::nullopt;
                          })
                  .appliesWhen(fp16Only));
  t.push_back(field("loss-scale-window", &RunConfig::lossScaleWindow)
                  .in(kTraining, "Loss-scale window")
                  .describe("W: clean steps after which a dynamic loss scale doubles")
                  .range(1, 1'000'000)
                  .units("steps")
                  .appliesWhen(fp16Only));
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
}

}  // namespace paralab::settings_rows
