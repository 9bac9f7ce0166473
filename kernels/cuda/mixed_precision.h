// Mixed precision's elementwise work on the GPU (--precision bf16|fp16 with --device cuda):
// rounding values to 16 bits where the engine stores them, and fp16's unscale-and-check of the
// summed gradients (train/precision.h). Device pointers, a stream (nullptr: the default);
// launchers enqueue and return and throw std::runtime_error on a CUDA error.
// See tests/kernels/tst_cuda_gemm_16bit.cpp and tests/engine/tst_cuda_precision.cpp.
#pragma once

namespace paralab::kernels {

// Rounds n values in place to bf16 (fp16 false) or fp16, to nearest, ties to even: bit for bit
// cpu/half.h's round_to_half. Adds the entries flushed to zero (nonzero before, zero after) to
// *flushed (device memory; null: not counted).
void round_half_cuda(float* values, long n, bool fp16, unsigned long long* flushed,
                     void* stream = nullptr);
// g[i] *= scale for i < n; sets *found (device memory) to 1 where a result is inf or NaN, and
// leaves it alone elsewhere.
void unscale_check_cuda(float* g, long n, float scale, int* found, void* stream = nullptr);

}  // namespace paralab::kernels
