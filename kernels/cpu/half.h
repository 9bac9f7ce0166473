// Rounding fp32 values to the 16-bit formats mixed precision stores: bfloat16 (8 exponent bits,
// 7 mantissa bits: fp32's range) and IEEE binary16 (5 and 10: largest finite 65504, subnormals
// down to 2^-24), round to nearest, ties to even, as a hardware conversion does (vcvtneps2bf16,
// vcvtps2ph). The values stay in fp32 containers, widened exactly. See
// tests/engine/tst_precision.cpp.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace paralab::kernels {

// The nearest bfloat16 to x (ties to even), as an fp32. NaN stays NaN; a value past bf16's
// largest finite (about 3.39e38) rounds to infinity.
inline float roundToBf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN pass unchanged
  u += 0x7fffu + ((u >> 16) & 1u);                 // ties to even on the 16 bits dropped
  return std::bit_cast<float>(u & 0xffff0000u);
}

// The nearest IEEE binary16 to x (ties to even), as an fp32: |x| at or past 65520 becomes
// infinity, below 2^-14 the grid is the subnormals' 2^-24, and |x| at or below 2^-25 (half the
// least subnormal: the tie goes to the even zero) is flushed to a zero of x's sign.
inline float roundToFp16(float x) {
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.f) return std::copysign(INFINITY, x);
  if (a < 0x1p-14f) {  // subnormal: a multiple of 2^-24, rounded ties-to-even by nearbyint
    const float q = std::nearbyint(a * 0x1p24f) * 0x1p-24f;
    return std::copysign(q, x);
  }
  // Normal: keep 10 of fp32's 23 mantissa bits, ties to even on the 13 dropped.
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0xfffu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & 0xffffe000u);
}

// Rounds n values in place (bf16 when `fp16` is false); returns the entries flushed: nonzero
// before, zero after (fp16's underflow; bf16 flushes only below fp32's own subnormals' reach).
inline int64_t round_to_half(float* values, int64_t n, bool fp16) {
  int64_t flushed = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float before = values[i];
    const float after = fp16 ? roundToFp16(before) : roundToBf16(before);
    flushed += (before != 0.f && after == 0.f);
    values[i] = after;
  }
  return flushed;
}

}  // namespace paralab::kernels
