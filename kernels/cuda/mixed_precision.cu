// Mixed precision's elementwise kernels (see mixed_precision.h): grid-stride loops, the 16-bit
// rounding by the hardware's own conversions (cvt.rn.bf16.f32, cvt.rn.f16.f32: ties to even,
// fp16's subnormals kept, overflow to infinity), which on the host are cpu/half.h's.
// See tests/kernels/tst_cuda_gemm_16bit.cpp (rounding) and tests/engine/tst_cuda_precision.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/check.h"
#include "cuda/mixed_precision.h"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;

unsigned blocksFor(long n) {  // cover n once, at most 65536 blocks (then the loop strides)
  const long b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

template <bool kFp16>
__global__ void round_half_kernel(float* values, long n, unsigned long long* flushed) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x) {
    const float before = values[i];
    const float after = kFp16 ? __half2float(__float2half_rn(before))
                              : __bfloat162float(__float2bfloat16_rn(before));
    values[i] = after;
    if (flushed && before != 0.f && after == 0.f) atomicAdd(flushed, 1ull);
  }
}

__global__ void unscale_check_kernel(float* g, long n, float scale, int* found) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x) {
    const float v = g[i] * scale;
    g[i] = v;
    // inf or NaN: not within fp32's largest finite. Every writer writes the same 1.
    if (!(fabsf(v) <= 3.40282347e38f)) *found = 1;
  }
}

}  // namespace

void round_half_cuda(float* values, long n, bool fp16, unsigned long long* flushed, void* stream) {
  if (n <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (fp16)
    round_half_kernel<true><<<blocksFor(n), kThreads, 0, s>>>(values, n, flushed);
  else
    round_half_kernel<false><<<blocksFor(n), kThreads, 0, s>>>(values, n, flushed);
  PARALAB_CUDA_CHECK_LAUNCH();
}

void unscale_check_cuda(float* g, long n, float scale, int* found, void* stream) {
  if (n <= 0) return;
  unscale_check_kernel<<<blocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      g, n, scale, found);
  PARALAB_CUDA_CHECK_LAUNCH();
}

}  // namespace paralab::kernels
