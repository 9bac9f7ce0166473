// The GPU teaching experiments counted on the host: each kernel's source executed by the host
// executor (cuda/host/count.h), which counts what a GPU profiler reports — lanes active at a
// branch, 128-byte lines and 32-byte sectors per warp load, global loads, shared-memory passes.
// Counted, not timed: exact on any machine, the same on every run. Runs on the CPU, with or
// without CUDA. See tests/kernels/tst_cuda_count.cpp and `paralab-bench teach`.
#pragma once
#include <string>
#include <vector>

namespace paralab::kernels {

// Over one launch of one kernel; a "warp instruction" is one warp reaching one counted site.
struct KernelCounts {
  std::string kernel;    // "branch on threadIdx.x % 2", "stride 32", "tiled", ...
  int stride = 0;        // coalescing: floats between neighbouring threads' loads
  long branchWarps = 0;  // warp instructions at the counted branch
  long pathsIssued = 0;  // paths those warps ran (2 for a warp whose lanes disagree)
  long activeLanes = 0;  // lanes active, summed over the paths issued
  long loadRequests = 0;   // warp load instructions of global memory
  long threadLoads = 0;    // the lanes' loads (one float each)
  long lines = 0;          // 128-byte lines the warp loads touched, summed
  long sectors = 0;        // 32-byte sectors, summed
  long sharedRequests = 0;    // warp instructions reading or writing shared memory
  long sharedWavefronts = 0;  // the passes they took (one per distinct word in the busiest bank)
  long worstWavefronts = 0;   // the most passes one took: 1 conflict-free, 32 a 32-way conflict

  // Percent of a warp's 32 lanes active per path it runs at the branch.
  double activeLanePercent() const {
    return pathsIssued ? 100.0 * double(activeLanes) / (32.0 * double(pathsIssued)) : 0;
  }
  double linesPerLoad() const { return loadRequests ? double(lines) / double(loadRequests) : 0; }
  double sectorsPerLoad() const {
    return loadRequests ? double(sectors) / double(loadRequests) : 0;
  }
  long bankConflicts() const { return sharedWavefronts - sharedRequests; }  // extra passes
};

// branch_kernel on `elements` floats, blocks of 256 threads: the branch on threadIdx.x % 2,
// then on (threadIdx.x / 32) % 2.
std::vector<KernelCounts> count_warp_divergence(long elements = 4096);

// copy_kernel on `elements` floats (rounded down to whole rows of the widest stride's view) at
// each stride: lines and sectors per warp load of the source.
std::vector<KernelCounts> count_coalescing(const std::vector<int>& strides = {1, 2, 4, 8, 16, 32},
                                           long elements = 32768);

// C = A·B, n × n (n a multiple of 32), blocks of 32 × 32 threads: "naive" (every operand from
// global memory), "tiled" (32 × 32 tiles of A and B staged in shared memory, a warp's lanes
// along a row of C), "tiled, lanes down a column" (the same tiles, a warp's lanes down a column
// of C: each reads a column of the A tile) and that with the tile rows padded to 33 floats.
std::vector<KernelCounts> count_gemm(int n = 64);

}  // namespace paralab::kernels
