// CPU against GPU, layer by layer: the engine's MLP (784 -> H, L blocks of LayerNorm, Linear
// H -> 4H, GELU, Linear 4H -> H, residual add, head H -> 10, softmax cross-entropy) timed layer by
// layer, forward and backward, on this CPU with the engine's own kernels (device/compute.h), at
// batch 1 and batch 4096; beside each layer the same layer's time projected for real GPUs by the
// roofline of engine/projection/compute_model.h, with whether the GPU is compute- or
// memory-bound there. Where a GPU answers, the same layers are timed on it too. A lesson's
// ```bench {"kind": "roofline"} draws it; `paralab-bench roofline` prints it.
// See tests/engine/tst_teach_roofline.cpp.
#pragma once
#include <string>
#include <vector>

#include "projection/compute_model.h"
#include "teach/gemm_ladder.h"

namespace paralab::teach {

struct RooflineOptions {
  int hidden = 128, layers = 2;     // the MLP's H and L (paralab-run's defaults)
  int input = 784, classes = 10;    // Fashion-MNIST's pixels and classes
  std::vector<int> batches = {1, 4096};
  std::string kernel = "vendor";    // the CPU GEMM rung (--kernel), on one thread as a rank runs
  std::vector<std::string> gpus = {"h100-sxm", "a100-80gb"};  // resources/gpus names
  // The engine computes in fp32; fp32 (CUDA cores) is like for like, tf32 is what tensor cores
  // give an fp32 GEMM when a framework allows it.
  projection::Precision precision = projection::Precision::Fp32;
  int repeats = 5;                  // timed passes per batch; each layer's median is kept
  bool measureGpu = true;           // also time the layers on a GPU where one answers
  std::string gpuKernel = "vendor";  // its GEMM (cuBLAS fp32), from the CUDA ladder
};

// One GPU's projected time of one layer: forward and backward, all its operations.
struct ProjectedLayer {
  double seconds = 0;
  double flops = 0, bytes = 0;
  // The roofline's verdict: FLOPs / bytes at or above the GPU's ridge point (its GEMM FLOP/s
  // over its bytes/s). Below it the layer waits on memory.
  bool computeBound = false;
  // max(FLOPs at the GEMM rate, bytes at the memory rate) / seconds: below 1 where a GEMM has
  // fewer tiles than the GPU has SMs (compute_model's wave quantization), so SMs sit idle.
  double smBusy = 1;
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
};

struct RooflineLayer {
  std::string key;    // "input" | "layernorm" | "fc1" | "gelu" | "fc2" | "residual" | "head" | "loss"
  std::string title;  // "Linear H -> 4H (fc1)"
  int count = 1;      // how many of it one step runs (L for a block's layers)
  double cpuSeconds = 0;  // measured on this CPU, median, forward + backward
  double gpuSeconds = 0;  // measured on the GPU that answered (0: none)
  std::vector<ProjectedLayer> projected;  // one per RooflineResult::gpus
  // The compute_model operations the projection sums, forward then backward.
  std::vector<std::string> ops;
};

struct RooflineBatch {
  int batch = 1;
  std::vector<RooflineLayer> layers;  // in the order the forward runs them
  // One step's forward and backward: the layers, the block's L times (no optimizer).
  double cpuStepSeconds() const;
  double gpuStepSeconds() const;
  double projectedStepSeconds(size_t gpu) const;
};

struct RooflineGpu {
  std::string name, title;  // "h100-sxm", "NVIDIA H100 SXM"
  double gemmTflops = 0;    // the roofline's GEMM ceiling at the precision, 1e12 FLOP/s
  double memoryGBps = 0;    // its memory ceiling, 1e9 bytes/s
  double ridge = 0;         // FLOP per byte where the two meet
};

struct RooflineResult {
  int hidden = 0, layers = 0;
  long long parameters = 0;
  std::string kernel;      // the CPU GEMM
  int threads = 1;         // the CPU GEMM's threads
  std::string precision;   // of the projection: "fp32" | "tf32"
  std::vector<RooflineGpu> gpus;
  std::string measuredGpu;  // the GPU the layers were also timed on ("" none)
  std::string gpuNotRun;    // why not ("" when it ran)
  std::vector<RooflineBatch> batches;
  bool cancelled = false;
};

// The projected layers of the MLP at one batch on one roofline: each layer's operations from
// compute_model (firstEnd, blockForward, blockBackward, lastEnd), grouped as the engine's layers
// are. `cpuSeconds` are left 0.
std::vector<RooflineLayer> projectedMlpLayers(const projection::Roofline& r, int hidden, int input,
                                              int classes, int layers, int batch);

// Measures and projects. Throws std::invalid_argument naming a bad option, ConfigError for an
// unknown GPU.
RooflineResult runRoofline(const RooflineOptions& options, const BenchProgress& progress = {});

}  // namespace paralab::teach
