// The kernels of the GPU teaching experiments, shared by teach.cu (timed on a GPU) and
// teach_count.cu (counted on the host): a branch on the lane or on the warp, a copy with a
// stride. Their counted operations are marked (cuda/counted.h). See
// tests/kernels/tst_cuda_count.cpp and tests/kernels/tst_cuda_kernels.cpp.
#pragma once
#include "cuda/counted.h"

namespace paralab::kernels {
namespace {

// The two paths do different arithmetic (the compiler cannot merge them into one loop with a
// selected constant), the same amount of it. kByWarp: (threadIdx.x / 32) % 2 decides, so every
// warp goes one way; else threadIdx.x % 2, which splits every warp.
template <bool kByWarp>
__global__ void branch_kernel(float* data, long n, int iters) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool left = kByWarp ? (threadIdx.x / 32) % 2 == 0 : threadIdx.x % 2 == 0;
  float x = data[i];
  if (PARALAB_COUNTED_BRANCH(left))
    for (int k = 0; k < iters; ++k) x = x * 0.999f + 0.5f;
  else
    for (int k = 0; k < iters; ++k) x = sqrtf(x * x + 1.f);
  data[i] = x;
}

// Thread i copies element src(i): i itself, or with a stride, a permutation that sends
// neighbouring threads `stride` floats apart (a transpose of an (n/stride) x stride view).
// Both read and write every element exactly once.
template <class T = float>
__global__ void copy_kernel(T* out, const T* in, long n, int stride) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const long rowsOfView = n / stride;
  const long src = stride == 1 ? i : (i % rowsOfView) * stride + i / rowsOfView;
  out[i] = PARALAB_COUNTED_LOAD(&in[src]);
}

}  // namespace
}  // namespace paralab::kernels
