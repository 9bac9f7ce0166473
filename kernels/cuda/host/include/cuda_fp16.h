// What `#include <cuda_fp16.h>` finds on the host: __half, IEEE binary16 in memory, converted
// from fp32 by round to nearest, ties to even (as __float2half and cvt.rn.f16.f32; overflow to
// infinity, subnormals kept) through the kernels' one rounding (cpu/half.h), then packed into
// its 16 bits exactly, and widened exactly. The 16-bit WMMA shapes (mma.h) read it.
// See tests/kernels/tst_cuda_gemm_16bit.cpp.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "cpu/half.h"

namespace paralab::cuda_host {

// Packs an fp32 that binary16 holds exactly (what roundToFp16 returns) into binary16's bits:
// sign, 5 exponent bits (bias 15), 10 mantissa bits; exponent 0 holds the subnormals, k 2^-24.
inline uint16_t packFp16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const float a = std::fabs(x);
  if (std::isnan(x)) return uint16_t(sign | 0x7e00u);
  if (std::isinf(x)) return uint16_t(sign | 0x7c00u);
  if (a < 0x1p-14f) return uint16_t(sign | uint16_t(a * 0x1p24f));  // exact: a multiple of 2^-24
  const uint32_t exponent = ((u >> 23) & 0xffu) - 127u + 15u;
  return uint16_t(sign | (exponent << 10) | ((u >> 13) & 0x3ffu));
}

inline float unpackFp16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu,
                 mantissa = h & 0x3ffu;
  if (exponent == 0) return std::copysign(float(mantissa) * 0x1p-24f, std::bit_cast<float>(sign));
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15u + 127u) << 23) | (mantissa << 13));
}

}  // namespace paralab::cuda_host

struct __half {
  uint16_t bits = 0;

  __half() = default;
  __half(float x)  // NOLINT: implicit, as CUDA's
      : bits(::paralab::cuda_host::packFp16(::paralab::kernels::roundToFp16(x))) {}
  operator float() const { return ::paralab::cuda_host::unpackFp16(bits); }
};
static_assert(sizeof(__half) == 2);

inline __half __float2half(float x) { return __half(x); }
inline __half __float2half_rn(float x) { return __half(x); }
inline float __half2float(__half h) { return float(h); }
