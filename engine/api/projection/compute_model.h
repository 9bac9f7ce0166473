// The compute part of the projection: each operation of a block as FLOPs and bytes, and its
// time on a GPU from a roofline (Williams et al. 2009): max(FLOPs / achievable FLOP/s, bytes /
// achievable bytes/s). GEMMs run at the GPU's measured matmul rate, less the wave quantization
// of their tiles over the SMs (a GEMM of few tiles split along k); elementwise operations (LayerNorm, softmax, GELU, dropout,
// residual adds) are memory-bound. See tests/engine/tst_projection.cpp
// (blockFlopsAreTheTransformersCount, rooflineSeparatesComputeFromMemory).
#pragma once
#include <string>
#include <vector>

#include "projection/gpu_spec.h"

namespace paralab::projection {

// Achievable share of the datasheet HBM bandwidth for streaming kernels: copy and triad
// kernels (BabelStream, nvbandwidth) reach about 90% of it on A100 and H100. One constant for
// every GPU.
constexpr double kHbmFraction = 0.9;
// One GEMM tile (thread block) of cuBLAS's large bf16/fp16 kernels on A100 and H100: 256 x 128
// outputs (as their names say, e.g. ampere_fp16_s16816gemm_fp16_256x128_...). A GEMM's tiles
// run in waves of one tile per SM, and a last partial wave leaves SMs idle.
constexpr int kTileRows = 256, kTileCols = 128;

// What one device can do at one precision.
struct Roofline {
  double peakFlops = 0;       // FLOP/s, dense datasheet peak
  double matmulFraction = 1;  // share of it large GEMMs reach (measured)
  double bytesPerS = 0;       // achievable memory bandwidth
  int sms = 0;                // 0: no wave quantization (a CPU, or a rate measured as a whole)
  int elementBytes = 2;       // one activation
  // Bytes of one operand of a block's linear-layer GEMM where it is not elementBytes: 1 in fp8
  // (the GEMM writes its output in bf16); 0: elementBytes.
  int operandBytes = 0;
  // fp8: the bf16 dense peak, at which attention's products and the output head run
  // (Transformer Engine casts the blocks' linear layers to FP8; its FP8 attention is off by
  // default and the head is not one of its layers); 0: peakFlops.
  double bf16PeakFlops = 0;
  // FLOP/s of attention's score and weighted-sum products where a kernel of its own computes
  // them (a CPU run's attention loops, host_profile.h); 0: they are GEMMs at the GEMM rate.
  double attentionFlops = 0;
  // bytes/s of the optimizer's update where it is measured as a kernel of its own (a CPU's);
  // 0: at bytesPerS.
  double optimizerBytesPerS = 0;
  // bytes/s of the softmax cross-entropy where it is measured as a kernel of its own (a CPU's,
  // bound by its exponentials); 0: at bytesPerS.
  double lossBytesPerS = 0;
  // Measured on the GPU (gpu_spec.h), where its datasheet file has them: GEMMs at the rate
  // measured for their shape (bf16, scaled to the precision's peak), attention as one fused
  // kernel at its measured rate. Null: the model above.
  std::shared_ptr<const GemmRates> gemmRates;
  double gemmRatesPeakFlops = 0;  // the bf16 peak the measured rates belong to
  std::shared_ptr<const FusedAttentionRates> fusedAttention;
  // attentionKernel: one of the GPU's fused_attention kernels ("cudnn", "flash2"), or "" for
  // attention's products as GEMMs with the scores written to memory (Megatron-LM 2021).
  static Roofline of(const GpuSpec& gpu, Precision p, const std::string& attentionKernel = "");
  // What runs in bf16 under fp8 (attention's products, the head): this roofline at the bf16
  // peak with bf16 operands; itself in the other precisions.
  Roofline bf16() const;
  double gemmFlops() const { return peakFlops * matmulFraction; }
  double ridge() const { return gemmFlops() / bytesPerS; }  // FLOP per byte where bounds meet
};

// One operation on one GPU: count GEMMs of M x K by K x N (m, n, k, count > 0), or an
// elementwise pass over `bytes`.
struct OpCost {
  std::string name;
  double flops = 0, bytes = 0, seconds = 0;
  bool gemm = false, computeBound = false;
  double m = 0, n = 0, k = 0, count = 0;
};

// A GEMM with fewer output tiles than SMs is split along k into this many slices, each at least
// kSplitDepth deep, as many as the idle SMs take (cuBLAS's split-K); their partial sums are then
// added. 1: not split.
constexpr int kSplitDepth = 256;
double splitK(double m, double n, double k, double count, int sms);
// Busy share of the SMs over a GEMM's waves of tiles (1 when every wave is full), the tiles of
// split-K's slices counted when `k` is given.
double waveEfficiency(double m, double n, double count, int sms, double k = 0);
OpCost gemmCost(const Roofline& r, std::string name, double m, double n, double k,
                double count = 1);
OpCost elementwiseCost(const Roofline& r, std::string name, double bytes);
double totalSeconds(const std::vector<OpCost>& ops);
double totalFlops(const std::vector<OpCost>& ops);

// One block of the model on one GPU for one micro-batch: a GPT block (attention then FFN, each
// with a LayerNorm before and a residual add after) or the MLP's (LayerNorm, FFN, residual).
struct BlockWork {
  bool attention = true;
  double microBatch = 1;  // b: sequences (samples) in the micro-batch
  int seq = 1;            // s: tokens per sequence (1 for the MLP)
  int hidden = 128, heads = 1, ffnMultiple = 4;
  int tp = 1, cp = 1;  // tensor-parallel ranks split heads and FFN; cp ranks split the tokens
  bool sequenceParallel =
      false;             // LayerNorm, dropout and residual split over tp (Korthikanti 2022)
  bool dropout = false;  // dropout after softmax and in both residual branches (Megatron's GPT)
  int experts = 0, topk = 1;  // experts > 0: a mixture-of-experts FFN, each token to its top-k
  // Each linear layer's bias added (and its gradient summed) in a pass of its own, as the
  // engine's CPU layers do; Megatron-LM's kernels fuse them into their neighbours.
  bool unfusedBias = false;
  double tokens() const { return microBatch * seq / cp; }  // rows this GPU computes
};

// The forward's operations in order. GEMM FLOPs per token, summed over the tp ranks:
// 2 (3 + 1 + 2 f) h^2 + 4 s h (QKV, output projection, FFN of multiple f; scores and weighted
// sum over all s keys, the causal half not skipped, as Megatron-LM's 2021 kernels compute it).
std::vector<OpCost> blockForward(const Roofline& r, const BlockWork& w);
// The backward: each GEMM twice (input gradient and weight gradient, same FLOPs), each
// elementwise pass about twice the forward's bytes (it reads the output gradient and what the
// forward kept, and writes the input gradient).
std::vector<OpCost> blockBackward(const Roofline& r, const BlockWork& w);
// What selective recomputation reruns before the backward: attention's scores, softmax,
// dropout and weighted sum (Korthikanti et al. 2022, §4.2).
std::vector<OpCost> attentionCoreForward(const Roofline& r, const BlockWork& w);

// The ends of the model on one GPU for one micro-batch, forward and backward together.
struct EndsWork {
  bool gpt = true;
  double samples = 1;  // b
  int seq = 1, hidden = 128, vocab = 96, tp = 1, cp = 1;
  int input = 784, classes = 10;  // the MLP's
  // The head and the loss split over tp by vocabulary (Megatron's); false: whole on every tp
  // rank (the engine's CPU GPT).
  bool vocabParallel = true;
  // The loss as separate passes (Layout::unfusedCrossEntropy): see crossEntropyBytesPerLogit.
  bool unfusedLoss = false;
};
// Memory traffic of the softmax cross-entropy, forward and backward, per logit of e bytes.
// Fused: forward reads the logit and writes its fp32 probability, backward reads that and writes
// the logit's gradient, 2 (e + 4). Unfused, as Megatron-Core r0.8.0's vocab-parallel loss runs
// (one pass each): cast to fp32 (e + 4, none in fp32), max (4), subtract the max in place (8),
// exp in place (8), sum (4), divide by the sum in place (8); backward: multiply by the loss's
// gradient in place (8) and cast back (4 + e): 52 bytes for a bf16 logit.
double crossEntropyBytesPerLogit(double e, bool unfused);
// First stage: token and position embeddings (the MLP: its input layer).
std::vector<OpCost> firstEnd(const Roofline& r, const EndsWork& w);
// Last stage: final LayerNorm, output head (split over tp by vocabulary where vocabParallel)
// and the fp32 softmax cross-entropy (the MLP: its head and loss).
std::vector<OpCost> lastEnd(const Roofline& r, const EndsWork& w);

// Narayanan et al. 2021, §5.1, eq. (3): FLOPs of one training step of a GPT with full activation
// recomputation, batch B sequences of s tokens, l layers, hidden h, vocabulary V:
// 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).
double narayananStepFlops(double B, double s, double l, double h, double V);
// The model FLOPs MFU counts, per token (engine/model/model.h, modelFlopsPerSample: Chowdhery et
// al. 2022, PaLM appendix B): 6 per parameter a token uses plus attention's 12 L h s; seq 1 and
// no attention for the MLP.
double modelFlopsPerToken(double activeParameters, int layers, int hidden, int seq, bool attention);

}  // namespace paralab::projection
