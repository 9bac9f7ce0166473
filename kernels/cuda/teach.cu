// The GPU teaching experiments (see teach.h). A warp executes one instruction for its 32
// threads; when they disagree at a branch both sides run with the other lanes masked off (CUDA
// C++ Programming Guide, "SIMT Architecture"). Global loads are served in 32-byte sectors; a
// warp reading 32 neighbouring floats needs 4, one reading floats 32 apart needs 32 ("Device
// Memory Accesses"). The kernels are in teach_kernels.cuh, which teach_count.cu counts on the
// host. See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench teach`.
#include <algorithm>
#include <vector>

#include "cuda/check.h"
#include "cuda/teach.h"
#include "cuda/teach_kernels.cuh"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kIters = 64;  // dependent steps per path: enough work that the branch dominates

// Median milliseconds of `repeats` launches after one warm-up, timed with CUDA events.
template <class Launch>
double medianMs(int repeats, Launch&& launch) {
  cudaEvent_t start, stop;
  PARALAB_CUDA_CHECK(cudaEventCreate(&start));
  PARALAB_CUDA_CHECK(cudaEventCreate(&stop));
  launch();
  std::vector<float> ms;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    PARALAB_CUDA_CHECK(cudaEventRecord(start));
    launch();
    PARALAB_CUDA_CHECK(cudaEventRecord(stop));
    PARALAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    PARALAB_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Device memory freed on every way out, exceptions included.
struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(long n) { PARALAB_CUDA_CHECK(cudaMalloc(&p, sizeof(float) * size_t(n))); }
  ~DeviceFloats() { cudaFree(p); }
};

}  // namespace

WarpDivergenceResult warp_divergence_experiment(long elements, int repeats) {
  WarpDivergenceResult r;
  r.elements = std::max(long(kThreads), elements);
  DeviceFloats data(r.elements);
  PARALAB_CUDA_CHECK(cudaMemset(data.p, 0, sizeof(float) * size_t(r.elements)));
  const unsigned blocks = unsigned((r.elements + kThreads - 1) / kThreads);
  r.divergentMs = medianMs(repeats, [&] {
    branch_kernel<false><<<blocks, kThreads>>>(data.p, r.elements, kIters);
    PARALAB_CUDA_CHECK_LAUNCH();
  });
  r.uniformMs = medianMs(repeats, [&] {
    branch_kernel<true><<<blocks, kThreads>>>(data.p, r.elements, kIters);
    PARALAB_CUDA_CHECK_LAUNCH();
  });
  return r;
}

CoalescingResult coalescing_experiment(long elements, int stride, int repeats) {
  CoalescingResult r;
  r.stride = std::max(1, stride);
  r.elements = std::max(long(r.stride), elements / r.stride * r.stride);  // whole rows of the view
  DeviceFloats in(r.elements), out(r.elements);
  PARALAB_CUDA_CHECK(cudaMemset(in.p, 0, sizeof(float) * size_t(r.elements)));
  const unsigned blocks = unsigned((r.elements + kThreads - 1) / kThreads);
  auto run = [&](int s) {
    return medianMs(repeats, [&] {
      copy_kernel<float><<<blocks, kThreads>>>(out.p, in.p, r.elements, s);
      PARALAB_CUDA_CHECK_LAUNCH();
    });
  };
  r.coalescedMs = run(1);
  r.stridedMs = run(r.stride);
  const double bytes = 2.0 * sizeof(float) * double(r.elements);
  r.coalescedGBs = bytes / (r.coalescedMs * 1e-3) * 1e-9;
  r.stridedGBs = bytes / (r.stridedMs * 1e-3) * 1e-9;
  return r;
}

}  // namespace paralab::kernels
