// The GPU lessons counted on the host (see gpu_counts.h): the kernels' counts read into rows.
// See tests/engine/tst_teach_gpu_counts.cpp.
#include "teach/gpu_counts.h"

#include <stdexcept>

#include "cuda/teach_count.h"

namespace paralab::teach {

namespace {

constexpr long kDivergenceThreads = 4096;  // 128 warps
constexpr long kCopyFloats = 32768;        // 1,024 warps, whole rows at stride 32
constexpr int kGemmN = 64;                 // 2 × 2 blocks of 32 × 32 threads

GpuCountRow rowOf(const kernels::KernelCounts& k, int gemmN) {
  GpuCountRow r;
  r.kernel = k.kernel;
  r.stride = k.stride;
  r.activeLanePercent = k.activeLanePercent();
  r.pathsPerWarp = k.branchWarps ? double(k.pathsIssued) / double(k.branchWarps) : 0;
  r.linesPerLoad = k.linesPerLoad();
  r.sectorsPerLoad = k.sectorsPerLoad();
  r.globalLoads = k.threadLoads;
  r.loadsPerOutput = gemmN ? double(k.threadLoads) / (double(gemmN) * gemmN) : 0;
  r.bankConflicts = k.bankConflicts();
  r.worstPasses = k.worstWavefronts;
  return r;
}

}  // namespace

const std::vector<std::string>& gpuCountExperiments() {
  static const std::vector<std::string> names = {"divergence", "coalescing", "gemm"};
  return names;
}

GpuCountsResult runGpuCounts(const std::string& experiment) {
  GpuCountsResult result;
  result.experiment = experiment;
  std::vector<kernels::KernelCounts> counts;
  int gemmN = 0;
  if (experiment == "divergence") {
    result.elements = kDivergenceThreads;
    counts = kernels::count_warp_divergence(kDivergenceThreads);
  } else if (experiment == "coalescing") {
    result.elements = kCopyFloats;
    counts = kernels::count_coalescing({1, 2, 4, 8, 16, 32}, kCopyFloats);
  } else if (experiment == "gemm") {
    result.elements = gemmN = kGemmN;
    counts = kernels::count_gemm(kGemmN);
  } else {
    throw std::invalid_argument("experiment: divergence, coalescing or gemm, not '" +
                                experiment + "'");
  }
  const std::vector<std::string> keys =
      experiment == "divergence"
          ? std::vector<std::string>{"lane-parity", "warp-index"}
          : std::vector<std::string>{"naive", "tiled", "tiled-column", "tiled-column-padded"};
  for (size_t i = 0; i < counts.size(); ++i) {
    result.rows.push_back(rowOf(counts[i], gemmN));
    result.rows.back().key = experiment == "coalescing"
                                 ? "stride-" + std::to_string(counts[i].stride)
                                 : keys.at(i);
  }
  return result;
}

}  // namespace paralab::teach
