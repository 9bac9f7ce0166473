// GpuSpec: one GPU kind as its vendor's datasheet gives it (peak dense FLOP/s per precision, HBM
// size and bandwidth, NVLink, SMs), its measured maximum matmul rate, and the node it ships in
// (GPUs per node and the node's network adapters), read from resources/gpus/<name>.json. Each
// file names its sources. See tests/engine/tst_projection.cpp and `paralab-run --project`.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace paralab::projection {

// The arithmetic a projected run does: bf16 GEMMs with fp32 master weights (mixed precision,
// Micikevicius et al. 2018), TF32 tensor-core GEMMs on fp32 tensors, plain fp32 (the engine's
// own arithmetic, as it runs on a CPU), or FP8 as NVIDIA's Transformer Engine trains (Micikevicius
// et al. 2022, "FP8 Formats for Deep Learning"): the blocks' linear layers multiply FP8 operands
// on FP8 tensor cores, everything else is bf16 mixed precision (attention's products, the
// output head, the elementwise kernels, activations and communication in bf16; fp32 master
// weights and optimizer states).
enum class Precision { Bf16Mixed, Tf32, Fp32, Fp8Mixed };
// "bf16" | "fp8" | "tf32" | "fp32"; throws ConfigError naming them.
Precision parsePrecision(const std::string& name);
const char* precisionName(Precision p);
// Whether an fp32 master copy of the weights is kept beside 16-bit ones (bf16 and fp8).
bool keepsMaster(Precision p);
// Bytes of one activation (and of one parameter or gradient as the GEMMs read it): fp8 keeps
// its activations and gradients in bf16, 2.
int elementBytes(Precision p);
// Bytes of one operand a block's linear-layer GEMM reads: 1 in fp8, else elementBytes.
int gemmOperandBytes(Precision p);

// A GEMM rate measured by shape: bf16 m x k by k x n products timed on the GPU (cuBLAS), on a
// grid of m, n and k (each ascending); rate(m, n, k) interpolates in log2 of each, clamped to
// the grid. What the chip sustains at that shape: wave quantization, tile fit and the clocks
// under its power limit are in the measurement.
struct GemmRates {
  std::vector<double> m, n, k;
  std::vector<double> tflops;  // [im][in][ik], 1e12 FLOP/s
  std::string source;
  double rate(double m, double n, double k) const;  // 1e12 FLOP/s
};

// A fused attention kernel's rate (FlashAttention-style: the s x s scores never leave the chip;
// the backward recomputes them) measured at one sequence length and head size, by how many
// (sequence, head) pairs one launch computes. FLOPs counted as the projection counts them:
// the full s x s products, the causal half not skipped; forward two products, backward four.
struct FusedAttentionRates {
  int seq = 0, headDim = 0;
  std::vector<double> heads, fwdTflops, bwdTflops;  // heads ascending; 1e12 FLOP/s
  std::string source;
  double forward(double heads) const;   // interpolated, clamped
  double backward(double heads) const;
};

struct GpuSpec {
  std::string name;                                       // the file stem: "a100-80gb"
  std::string title;                                      // "NVIDIA A100 80GB SXM"
  std::string source;                                     // where the figures come from
  double bf16Tflops = 0, tf32Tflops = 0, fp32Tflops = 0;  // dense peak, 1e12 FLOP/s
  // Dense FP8 tensor-core peak (the datasheets print it with 2:4 sparsity, twice this), 1e12
  // FLOP/s; 0: the GPU has no FP8 tensor cores (A100) and a projection in fp8 is refused.
  double fp8Tflops = 0;
  double matmulTflopsBf16 = 0;  // measured maximum achievable bf16 matmul rate
  double hbmGB = 0;             // memory, 1e9 bytes (the datasheet's GB)
  double hbmGBps = 0;           // memory bandwidth, 1e9 bytes/s
  double nvlinkGBps = 0;        // NVLink per direction per GPU, 1e9 bytes/s
  int sms = 0;                  // streaming multiprocessors (GEMM tiles run one per SM at a time)
  // Attention's products computed by a kernel of its own at this rate, 1e12 FLOP/s (a CPU
  // measured by host_profile.h); 0: they are GEMMs at the matmul rate.
  double attentionTflops = 0;
  // Measured on the GPU itself where resources/gpus/<name>.json has them (null: the datasheet
  // model, matmul_tflops_bf16 with wave quantization, and attention as GEMMs).
  std::shared_ptr<const GemmRates> gemmRates;
  // By kernel: "cudnn" (Transformer Engine's on Hopper), "flash2" (PyTorch's SDPA).
  std::map<std::string, std::shared_ptr<const FusedAttentionRates>> fusedAttention;
  // The optimizer's update computed by a kernel of its own at this rate over the bytes the
  // model counts for it, 1e9 bytes/s (a CPU's Adam is not bound by memory: host_profile.h);
  // 0: at the memory bandwidth.
  double optimizerGBps = 0;
  // The softmax cross-entropy likewise (a CPU's is bound by its exponentials), 1e9 bytes/s
  // over the bytes the model counts for it; 0: at the memory bandwidth.
  double lossGBps = 0;
  // The node it ships in: network adapters for the compute fabric and their rate.
  std::string nodeTitle;  // "DGX A100"
  int nodeGpus = 8;       // GPUs in that node
  int nodeNics = 0;
  double nicGBps = 0;    // per adapter per direction, 1e9 bytes/s
  std::string nicTitle;  // "InfiniBand HDR 200 Gb/s, one adapter per GPU"

  // FLOP/s: the precision's dense peak, never the datasheet's "with sparsity" figure (dense
  // training cannot use 2:4 sparsity), and MFU's denominator.
  double peakFlops(Precision p) const;
  bool hasFp8() const { return fp8Tflops > 0; }
  // The measured matmul rate as a fraction of the bf16 peak: what large GEMMs really reach
  // (clocks under the power limit, tile scheduling). Applied to every precision's peak.
  double matmulFraction() const { return matmulTflopsBf16 / bf16Tflops; }
  double hbmBytes() const { return hbmGB * 1e9; }
  // One GPU's share of its node's network adapters, per direction, 1e9 bytes/s.
  double networkGBpsPerGpu() const { return nicGBps * nodeNics / nodeGpus; }
};

// The GPU kinds in resources/gpus, sorted: "a100-80gb, h100-sxm, h200".
std::vector<std::string> gpuNames();
std::string gpuNamesText();
// Those with FP8 tensor cores: "h100-sxm, h200".
std::string fp8GpuNamesText();
// Reads resources/gpus/<name>.json; throws ConfigError "project: unknown GPU 'x' (allowed:
// ...)" or naming the file and the field that is missing or malformed.
GpuSpec loadGpu(const std::string& name);

}  // namespace paralab::projection
