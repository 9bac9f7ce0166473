// What `#include <cuda_bf16.h>` finds on the host: __nv_bfloat16, 16 bits in memory, converted
// from fp32 by round to nearest, ties to even (as __float2bfloat16 and cvt.rn.bf16.f32) through
// the kernels' one rounding (cpu/half.h), and widened exactly. The 16-bit WMMA shapes (mma.h)
// read it. See tests/kernels/tst_cuda_gemm_16bit.cpp.
#pragma once
#include <bit>
#include <cstdint>

#include "cpu/half.h"

struct __nv_bfloat16 {
  uint16_t bits = 0;  // fp32's top 16 bits: sign, 8 exponent bits, 7 mantissa bits

  __nv_bfloat16() = default;
  __nv_bfloat16(float x)  // NOLINT: implicit, as CUDA's
      : bits(uint16_t(std::bit_cast<uint32_t>(::paralab::kernels::roundToBf16(x)) >> 16)) {}
  operator float() const { return std::bit_cast<float>(uint32_t(bits) << 16); }
};
static_assert(sizeof(__nv_bfloat16) == 2);

inline __nv_bfloat16 __float2bfloat16(float x) { return __nv_bfloat16(x); }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16(x); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
