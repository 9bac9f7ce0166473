// The CUDA runtime calls the engine makes (see runtime.h), or their "built without CUDA" stand-ins.
// See tests/engine/tst_cuda_training.cpp.
#include "cuda/runtime.h"

#include <stdexcept>
#include <string>

#if PARALAB_HAVE_CUDA
#include "cuda/check.h"  // PARALAB_CUDA_CHECK: throws naming the call, file:line and the error

namespace paralab::gpu {

static cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
static cudaEvent_t asEvent(void* e) { return static_cast<cudaEvent_t>(e); }

void setDevice(int gpu) { PARALAB_CUDA_CHECK(cudaSetDevice(gpu)); }

int currentDevice() {
  int d = 0;
  PARALAB_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void enablePeerAccess(int peer) {
  const int self = currentDevice();
  if (peer == self) return;
  int can = 0;
  PARALAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, self, peer));
  if (!can)
    throw std::runtime_error("GPU " + std::to_string(self) + " cannot access GPU " +
                             std::to_string(peer) + "'s memory (no peer access)");
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // another rank on this GPU enabled it first
    return;
  }
  PARALAB_CUDA_CHECK(err);
}

void* streamCreate() {
  cudaStream_t s = nullptr;
  PARALAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void streamDestroy(void* stream) {
  if (stream) (void)cudaStreamDestroy(asStream(stream));  // at teardown: nothing to report to
}

void streamSync(void* stream) { PARALAB_CUDA_CHECK(cudaStreamSynchronize(asStream(stream))); }

void* malloc(int64_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, static_cast<size_t>(bytes));
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  PARALAB_CUDA_CHECK(err);
  return p;
}

void free(void* p) {
  if (p) PARALAB_CUDA_CHECK(cudaFree(p));
}

void memsetAsync(void* p, int64_t bytes, void* stream) {
  if (bytes > 0)
    PARALAB_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<size_t>(bytes), asStream(stream)));
}

void copyAsync(void* dst, const void* src, int64_t bytes, void* stream) {
  if (bytes > 0 && dst != src)
    PARALAB_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, asStream(stream)));
}

void* eventCreate(bool timing) {
  cudaEvent_t e = nullptr;
  PARALAB_CUDA_CHECK(
      cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}

void eventDestroy(void* event) {
  if (event) (void)cudaEventDestroy(asEvent(event));
}

void eventRecord(void* event, void* stream) {
  PARALAB_CUDA_CHECK(cudaEventRecord(asEvent(event), asStream(stream)));
}

void eventSync(void* event) { PARALAB_CUDA_CHECK(cudaEventSynchronize(asEvent(event))); }

float eventElapsedMs(void* from, void* to) {
  float ms = 0;
  PARALAB_CUDA_CHECK(cudaEventElapsedTime(&ms, asEvent(from), asEvent(to)));
  return ms;
}

}  // namespace paralab::gpu

#else  // built without CUDA

namespace paralab::gpu {

[[noreturn]] static void none() { throw std::runtime_error("built without CUDA"); }

void setDevice(int) { none(); }
int currentDevice() { none(); }
void enablePeerAccess(int) { none(); }
void* streamCreate() { none(); }
void streamDestroy(void*) {}
void streamSync(void*) { none(); }
void* malloc(int64_t) { none(); }
void free(void*) {}
void memsetAsync(void*, int64_t, void*) { none(); }
void copyAsync(void*, const void*, int64_t, void*) { none(); }
void* eventCreate(bool) { none(); }
void eventDestroy(void*) {}
void eventRecord(void*, void*) { none(); }
void eventSync(void*) { none(); }
float eventElapsedMs(void*, void*) { none(); }

}  // namespace paralab::gpu

#endif
