// What `#include <cuda_runtime.h>` finds when a .cu file is compiled as host C++ (for the
// tests only; see kernels/CMakeLists.txt, paralab_cuda_on_host): the qualifiers, the built-in
// variables, barriers, warp shuffles and atomics, and the runtime calls the kernels' launchers
// make, carried out by the emulated GPU (cuda/emulated.h). Host execution of the kernel source:
// correctness only, no speed, blocks one after another. See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/host/launch.h"
#include "cuda/host/shared.h"
#include "cuda/host/types.h"

// [SECTION] Qualifiers: on the host every function is a host function.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

// [SECTION] Built-in variables: the running fibre's thread and block (grid.h).
#define threadIdx (::paralab::cuda_host::self().idx)
#define blockIdx (::paralab::cuda_host::self().block->idx)
#define blockDim (::paralab::cuda_host::self().block->dim)
#define gridDim (::paralab::cuda_host::self().block->grid)
inline constexpr int warpSize = 32;

// [SECTION] Barriers and warp shuffles (CUDA C++ Programming Guide, "Warp Shuffle Functions"):
// every lane of `mask` must make the same call; each receives the value of its source lane.
// With width < 32 the warp is cut into groups of `width` lanes; a source outside the caller's
// group (after it) gives the caller its own value.
inline void __syncthreads() { ::paralab::cuda_host::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::paralab::cuda_host::warpExchange(::paralab::cuda_host::WarpOp::Syncwarp, mask, 0, -1);
}

namespace paralab::cuda_host {
// Lane `source` of the caller's group of `width` lanes, or -1 for the caller's own value.
template <class T>
T shuffle(WarpOp op, unsigned mask, T v, int source, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  if (width <= 0 || width > 32 || (width & (width - 1)))
    fail(std::string(name(op)) + ": width " + std::to_string(width) +
         " is not a power of two <= 32");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warpExchange(op, mask, bits, source);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
inline int lane() { return int(self().lane()); }
inline int group(int width) { return lane() & ~(width - 1); }  // the caller's group's lane 0
}  // namespace paralab::cuda_host

template <class T>
T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
  using namespace paralab::cuda_host;
  return shuffle(WarpOp::Shfl, mask, v, group(width) + (srcLane & (width - 1)), width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace paralab::cuda_host;
  const int s = lane() - int(delta);
  return shuffle(WarpOp::ShflUp, mask, v, s < group(width) ? -1 : s, width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  using namespace paralab::cuda_host;
  const int s = lane() + int(delta);
  return shuffle(WarpOp::ShflDown, mask, v, s >= group(width) + width ? -1 : s, width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  using namespace paralab::cuda_host;
  const int s = lane() ^ laneMask;
  return shuffle(WarpOp::ShflXor, mask, v, s >= group(width) + width ? -1 : s, width);
}

// [SECTION] Atomics on global memory: blocks run one after another, but kernels on two
// streams may run at once on two OS threads (the emulated GPU's ranks), so they are real ones.
template <class T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}

// [SECTION] The device's min and max, as CUDA declares them for every arithmetic type.
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// [SECTION] The runtime API, as far as ParaLab's .cu files and tests call it. Defined by the
// emulated GPU (cuda/emulated_api.cpp): device memory behind guard pages, streams that run
// their work when the host waits.
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0, cudaEventDisableTiming = 2;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin;
  int warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], major, minor;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaMalloc(void** p, size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

// A bad launch configuration is reported here, after the launch, as by the CUDA runtime.
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = ::paralab::cuda_host::t_lastError;
  ::paralab::cuda_host::t_lastError = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return ::paralab::cuda_host::t_lastError; }

// The opt-in to more than 48 KiB of dynamic shared memory (up to 227 KiB, as on an H100).
template <class T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      size_t(value) > ::paralab::cuda_host::kDynamicSharedLimit)
    return cudaErrorInvalidValue;
  std::lock_guard lock(::paralab::cuda_host::g_attributesMutex);
  ::paralab::cuda_host::g_maxDynamicShared[reinterpret_cast<const void*>(kernel)] = size_t(value);
  return cudaSuccess;
}
