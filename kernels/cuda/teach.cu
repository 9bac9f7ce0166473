// The GPU teaching experiments (see teach.h). A warp executes one instruction for its 32
// threads; when they disagree at a branch both sides run with the other lanes masked off (CUDA
// C++ Programming Guide, "SIMT Architecture"). Global loads are served in 32-byte sectors; a
// warp reading 32 neighbouring floats needs 4, one reading floats 32 apart needs 32 ("Device
// Memory Accesses"). See tests/kernels/tst_cuda_kernels.cpp and `paralab-bench teach`.
#include <algorithm>
#include <vector>

#include "cuda/check.h"
#include "cuda/teach.h"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kIters = 64;  // dependent steps per path: enough work that the branch dominates

// The two paths do different arithmetic (the compiler cannot merge them into one loop with a
// selected constant), the same amount of it.
template <bool kByWarp>
__global__ void branch_kernel(float* data, long n, int iters) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool left = kByWarp ? (threadIdx.x / 32) % 2 == 0 : threadIdx.x % 2 == 0;
  float x = data[i];
  if (left)
    for (int k = 0; k < iters; ++k) x = x * 0.999f + 0.5f;
  else
    for (int k = 0; k < iters; ++k) x = sqrtf(x * x + 1.f);
  data[i] = x;
}

// Thread i copies element src(i): i itself, or with a stride, a permutation that sends
// neighbouring threads `stride` floats apart (a transpose of an (n/stride) x stride view).
// Both read and write every element exactly once.
__global__ void copy_kernel(float* out, const float* in, long n, int stride) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const long rowsOfView = n / stride;
  const long src = stride == 1 ? i : (i % rowsOfView) * stride + i / rowsOfView;
  out[i] = in[src];
}

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
      copy_kernel<<<blocks, kThreads>>>(out.p, in.p, r.elements, s);
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
