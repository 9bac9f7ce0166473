// Small kernels that exercise the host execution layer one feature at a time: built-in indices,
// a block barrier, warp shuffles with masks and widths, atomics, WMMA, dynamic shared memory,
// and kernels that are wrong on purpose (a deadlock, a diverged warp, a missing __syncwarp(),
// a host pointer). Compiled for the host only (paralab_cuda_on_host); see tst_cuda_host.cpp.
#include <mma.h>

#include "host_kernels.h"

namespace paralab::test {

namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void indices_kernel(int* out) {
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int* o = out + 12 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
  const unsigned v[12] = {blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                          blockDim.x, blockDim.y, blockDim.z, gridDim.x,   gridDim.y,   gridDim.z};
  for (int k = 0; k < 12; ++k) o[k] = int(v[k]);
}

// Thread i writes element i, then reads element n - 1 - i, another thread's.
template <bool kBarrier>
__global__ void reverse_kernel(float* data, int n) {
  __shared__ float buffer[1024];
  const int i = threadIdx.x;
  if (i < n) buffer[i] = data[i];
  if (kBarrier) __syncthreads();
  if (i < n) data[i] = buffer[n - 1 - i];
}

// Per warp: a butterfly sum (every lane gets the total) and a tree sum down to lane 0.
__global__ void warp_sums_kernel(float* out, const float* in) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  float x = in[i], d = in[i];
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFull, x, o);
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(kFull, d, o);
  out[2 * i] = x;
  out[2 * i + 1] = lane == 0 ? d : 0.f;
}

// Only lanes 0-15 shuffle (mask 0xffff); 16-31 never call it and keep their value.
__global__ void half_warp_kernel(float* out, const float* in) {
  const int lane = threadIdx.x;
  float x = in[lane];
  if (lane < 16)
    for (int o = 8; o > 0; o >>= 1) x += __shfl_xor_sync(0x0000ffffu, x, o);
  out[lane] = x;
}

// Each half-warp sums its 16 lanes under a mask of its own, both collectives at once.
__global__ void halves_kernel(float* out, const float* in) {
  const int lane = threadIdx.x;
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  float x = in[lane];
  for (int o = 8; o > 0; o >>= 1) x += __shfl_xor_sync(mask, x, o);
  out[lane] = x;
}

// Groups of 8 lanes: up, down and broadcast stay inside the group.
__global__ void width_kernel(int* out) {
  const int lane = threadIdx.x;
  out[3 * lane] = __shfl_up_sync(kFull, lane, 1, 8);
  out[3 * lane + 1] = __shfl_down_sync(kFull, lane, 3, 8);
  out[3 * lane + 2] = __shfl_sync(kFull, lane, 5, 8);
}

__global__ void histogram_kernel(int* bins, const int* values, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[values[i]], 1);
}

// One warp: D = A B + C for A 16 x 8, B 8 x 16 (row-major, inputs rounded to TF32), C 16 x 16.
__global__ void wmma_kernel(float* d, const float* a, const float* b, const float* c) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  for (int x = 0; x < fa.num_elements; ++x) fa.x[x] = wmma::__float_to_tf32(fa.x[x]);
  for (int x = 0; x < fb.num_elements; ++x) fb.x[x] = wmma::__float_to_tf32(fb.x[x]);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// A 16 x 16 fragment stored to shared memory and read back in another order by each lane, with
// or without the __syncwarp() between (the tensor-core rung's epilogue).
template <bool kSyncwarp>
__global__ void wmma_epilogue_kernel(float* out) {
  using namespace nvcuda;
  __shared__ __align__(32) float scratch[256];
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 1.f);
  wmma::store_matrix_sync(&scratch[0], acc, 16, wmma::mem_row_major);
  if (kSyncwarp) __syncwarp();
  for (int x = threadIdx.x; x < 256; x += 32) out[x] = scratch[x];
}

__global__ void empty_kernel() {}

__global__ void dynamic_shared_kernel(float* out, int n) {
  extern __shared__ float buffer[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = float(i);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buffer[n - 1 - i];
}

// Lanes 0-15 of warp 0 wait at the barrier, 16-31 in a full-warp shuffle: neither can finish.
__global__ void deadlock_kernel(float* out) {
  float x = 1.f;
  if (threadIdx.x % 32 < 16)
    __syncthreads();
  else
    x = __shfl_xor_sync(kFull, x, 1);
  out[threadIdx.x] = x;
}

// Half the warp calls one shuffle, half another.
__global__ void diverged_kernel(float* out) {
  float x = 1.f;
  if (threadIdx.x < 16)
    x = __shfl_xor_sync(kFull, x, 1);
  else
    x = __shfl_down_sync(kFull, x, 1);
  out[threadIdx.x] = x;
}

__global__ void read_kernel(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }

}  // namespace

void host_indices(int* out, dim3 grid, dim3 block) { indices_kernel<<<grid, block>>>(out); }
void host_reverse(float* data, int n, bool barrier) {
  if (barrier)
    reverse_kernel<true><<<1, n>>>(data, n);
  else
    reverse_kernel<false><<<1, n>>>(data, n);
}
void host_warp_sums(float* out, const float* in, int n) {
  warp_sums_kernel<<<n / 64, 64>>>(out, in);
}
void host_half_warp(float* out, const float* in) { half_warp_kernel<<<1, 32>>>(out, in); }
void host_halves(float* out, const float* in) { halves_kernel<<<1, 32>>>(out, in); }
void host_width(int* out) { width_kernel<<<1, 32>>>(out); }
void host_histogram(int* bins, const int* values, int n) {
  histogram_kernel<<<3, 128>>>(bins, values, n);
}
void host_wmma(float* d, const float* a, const float* b, const float* c) {
  wmma_kernel<<<1, 32>>>(d, a, b, c);
}
void host_wmma_epilogue(float* out, bool syncwarp) {
  if (syncwarp)
    wmma_epilogue_kernel<true><<<1, 32>>>(out);
  else
    wmma_epilogue_kernel<false><<<1, 32>>>(out);
}
void host_empty(dim3 grid, dim3 block, size_t sharedBytes) {
  empty_kernel<<<grid, block, sharedBytes>>>();
}
void host_dynamic_shared(float* out, int n, bool optIn) {
  if (optIn)
    cudaFuncSetAttribute(dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         int(n * sizeof(float)));
  dynamic_shared_kernel<<<1, 256, n * sizeof(float)>>>(out, n);
}
void host_deadlock(float* out) { deadlock_kernel<<<1, 64>>>(out); }
void host_diverged(float* out) { diverged_kernel<<<1, 32>>>(out); }
void host_read(float* out, const float* in) { read_kernel<<<1, 32>>>(out, in); }

}  // namespace paralab::test
