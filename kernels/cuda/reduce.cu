// The communicators' device kernels and CUDA plumbing (see reduce.h).
// See tests/engine/tst_comm_thread.cpp (deviceAllReduce, skipped without a GPU).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/reduce.h"

namespace paralab::kernels {

namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

// Up to kMaxSources pointers travel by value in the kernel's parameters (4 KB limit).
constexpr int kMaxSources = 32;
struct Sources {
  const float* p[kMaxSources];
};

// One thread per element, grid-stride: dst[i] = (s0 op s1 op ...) / divisor.
// Sources are combined in index order, as the host path does, so exact inputs give the same
// bits on both; float add and IEEE division round the same on the GPU as on the CPU.
template <bool kMax>
__global__ void reduce_device_kernel(float* dst, Sources src, int nsrc, int64_t count,
                                     float divisor, bool accumulate) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    float acc = accumulate ? dst[i] : src.p[0][i];
    for (int k = accumulate ? 0 : 1; k < nsrc; ++k) {
      const float v = src.p[k][i];
      acc = kMax ? fmaxf(acc, v) : acc + v;
    }
    dst[i] = divisor != 1.0f ? acc / divisor : acc;
  }
}

}  // namespace

void reduce_device(float* dst, const float* const* srcs, int nsrc, int64_t count,
                   DeviceReduce op, float divisor, void* stream) {
  if (count <= 0 || nsrc <= 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const int threads = 256;
  const int64_t want = (count + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 4096 ? want : 4096);
  // More sources than fit in one launch: fold them in batches, the later ones accumulating
  // into dst (still in source order). The divisor applies once, on the last batch.
  for (int first = 0; first < nsrc; first += kMaxSources) {
    const int n = nsrc - first < kMaxSources ? nsrc - first : kMaxSources;
    Sources src{};
    for (int k = 0; k < n; ++k) src.p[k] = srcs[first + k];
    const bool last = first + n == nsrc;
    const float div = last ? divisor : 1.0f;
    if (op == DeviceReduce::Max)
      reduce_device_kernel<true><<<blocks, threads, 0, s>>>(dst, src, n, count, div, first > 0);
    else
      reduce_device_kernel<false><<<blocks, threads, 0, s>>>(dst, src, n, count, div, first > 0);
    check(cudaGetLastError(), "reduce_device launch");
  }
}

void reduce_device_copy(void* dst, const void* src, int64_t bytes, void* stream) {
  if (bytes <= 0 || dst == src) return;
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault,
                        static_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync");
}

void* reduce_stream_create() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

void reduce_stream_destroy(void* stream) {
  if (stream) cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

void reduce_stream_sync(void* stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

bool reduce_stream_query(void* stream) {
  const cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (err == cudaErrorNotReady) return false;
  check(err, "cudaStreamQuery");
  return true;
}

void* reduce_device_alloc(int64_t bytes) {
  void* p = nullptr;
  if (bytes > 0) check(cudaMalloc(&p, static_cast<size_t>(bytes)), "cudaMalloc");
  return p;
}

void reduce_device_free(void* p) {
  if (p) cudaFree(p);
}

int reduce_current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void reduce_set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

}  // namespace paralab::kernels
