// The CUDA runtime calls of the host execution layer (cuda/host/include/cuda_runtime.h), carried
// out by the emulated GPU (emulated.h): what the .cu files' launchers and tst_cuda_kernels call.
// A call returns CUDA's error code where CUDA would; a kernel's own failure (a hazard, an
// out-of-bounds access: cuda_host::KernelError) is thrown from the call that waits for it.
// See tests/kernels/tst_cuda_host.cpp.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "cuda/device.h"
#include "cuda/emulated.h"
#include "cuda/runtime.h"

namespace {

namespace emu = paralab::kernels::emu;
namespace gpu = paralab::gpu;

// Runs `call`; the emulated runtime's exceptions become `error`, a kernel's failure goes on.
// As in CUDA, a failed call's error is also the one cudaGetLastError() returns next.
template <class F>
cudaError_t returning(cudaError_t error, F&& call) {
  try {
    call();
    return cudaSuccess;
  } catch (const paralab::cuda_host::KernelError&) {
    throw;
  } catch (const std::exception&) {
    return paralab::cuda_host::t_lastError = error;
  }
}

void* asStream(cudaStream_t s) { return static_cast<void*>(s); }
void* asEvent(cudaEvent_t e) { return static_cast<void*>(e); }

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  *count = paralab::kernels::cuda_query_devices().count;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= paralab::kernels::cuda_query_devices().count)
    return cudaErrorInvalidDevice;
  *prop = {};
  std::snprintf(prop->name, sizeof prop->name, "%s",
                paralab::kernels::cuda_query_devices().firstName.c_str());
  prop->sharedMemPerBlock = paralab::cuda_host::kStaticSharedLimit;
  prop->sharedMemPerBlockOptin = paralab::cuda_host::kDynamicSharedLimit;
  prop->totalGlobalMem = size_t(paralab::kernels::cuda_query_devices().memoryBytes);
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024, prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff, prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->major = 9, prop->minor = 0;  // the limits above are an H100's
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = gpu::currentDevice();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  return returning(cudaErrorInvalidDevice, [&] { gpu::setDevice(device); });
}
cudaError_t cudaDeviceSynchronize() {
  emu::synchronize();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = gpu::malloc(int64_t(bytes));
  return *p ? cudaSuccess : paralab::cuda_host::t_lastError = cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  return returning(cudaErrorInvalidValue, [&] { gpu::free(p); });
}

// Copies in any direction (the kind is not needed: the address says where it is), on the
// default stream; the synchronous ones wait for it.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  gpu::copyAsync(dst, src, int64_t(bytes), asStream(stream));
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
  gpu::streamSync(nullptr);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  if (bytes)
    emu::enqueue(asStream(stream), [p, value, bytes] { std::memset(emu::host(p), value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  cudaMemsetAsync(p, value, bytes, nullptr);
  gpu::streamSync(nullptr);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = static_cast<cudaStream_t>(gpu::streamCreate());
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  return cudaStreamCreate(stream);  // every emulated stream is independent of the default one
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  gpu::streamDestroy(asStream(stream));
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  gpu::streamSync(asStream(stream));
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return emu::idle(asStream(stream)) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  *event = static_cast<cudaEvent_t>(gpu::eventCreate(!(flags & cudaEventDisableTiming)));
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  gpu::eventDestroy(asEvent(event));
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  gpu::eventRecord(asEvent(event), asStream(stream));
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  gpu::eventSync(asEvent(event));
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return returning(cudaErrorNotReady,
                   [&] { *ms = gpu::eventElapsedMs(asEvent(start), asEvent(end)); });
}
