// Teaching experiments on the GPU: each runs a small measurement (CUDA events) and returns
// what it saw. Warp divergence: a branch on the thread index splits every warp, a branch on
// the warp index splits none. Coalescing: the same copy with neighbouring threads reading
// neighbouring floats, or floats `stride` apart. Throw std::runtime_error without a GPU (or
// without CUDA). See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench teach`.
#pragma once

namespace paralab::kernels {

struct WarpDivergenceResult {
  long elements = 0;
  double divergentMs = 0;  // branch on threadIdx.x % 2: both paths run, one after the other
  double uniformMs = 0;    // branch on (threadIdx.x / 32) % 2: each warp runs one path
  double slowdown() const { return uniformMs > 0 ? divergentMs / uniformMs : 0; }
};
WarpDivergenceResult warp_divergence_experiment(long elements = 1L << 24, int repeats = 5);

struct CoalescingResult {
  long elements = 0;  // floats copied (read once and written once)
  int stride = 0;     // floats between the addresses neighbouring threads read
  double coalescedMs = 0, stridedMs = 0;
  double coalescedGBs = 0, stridedGBs = 0;  // (read + written bytes) / time, 1e9 B/s
};
CoalescingResult coalescing_experiment(long elements = 1L << 25, int stride = 32, int repeats = 5);

}  // namespace paralab::kernels
