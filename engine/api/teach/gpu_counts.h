// The GPU lessons counted on the host: warp divergence, coalescing and the shared-memory GEMM,
// each kernel's source executed by the host executor, which counts what a GPU profiler reports
// (kernels/cuda/teach_count.h). Counted by executing the kernel source, not timed: the same on
// every machine, GPU or none. A lesson's ```bench {"kind": "gpu-counts"} step draws it;
// `paralab-bench teach` prints it. See tests/engine/tst_teach_gpu_counts.cpp.
#pragma once
#include <string>
#include <vector>

namespace paralab::teach {

// One kernel's counts over one launch. A "warp instruction" is one warp reaching one counted
// site once.
struct GpuCountRow {
  std::string key;     // what a lesson's metric path selects: "lane-parity", "warp-index";
                       // "stride-32"; "naive", "tiled", "tiled-column", "tiled-column-padded"
  std::string kernel;  // in words: "branch on threadIdx.x % 2", "stride 32", "tiled", ...
  int stride = 0;      // coalescing: floats between neighbouring threads' loads
  // Divergence: lanes active per path a warp runs at the branch, as a percentage of 32, and the
  // paths run per warp reaching it (1 or 2).
  double activeLanePercent = 0, pathsPerWarp = 0;
  // Coalescing: distinct 128-byte lines and 32-byte sectors one warp load touches (mean).
  double linesPerLoad = 0, sectorsPerLoad = 0;
  // GEMM: the threads' loads of global memory (floats), and per output element; shared-memory
  // bank conflicts (passes beyond one per warp access) and the most passes one access took.
  long globalLoads = 0;
  double loadsPerOutput = 0;
  long bankConflicts = 0, worstPasses = 0;
};

struct GpuCountsResult {
  std::string experiment;  // divergence, coalescing, gemm
  long elements = 0;       // threads launched (divergence, coalescing); gemm: n
  std::vector<GpuCountRow> rows;
};

// The experiments a block may name.
const std::vector<std::string>& gpuCountExperiments();
// Throws std::invalid_argument for an experiment not in gpuCountExperiments().
GpuCountsResult runGpuCounts(const std::string& experiment);

}  // namespace paralab::teach
