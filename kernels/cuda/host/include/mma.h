// What `#include <mma.h>` finds on the host: nvcuda::wmma for the shape the tensor-core rung
// uses, TF32 m16n16k8 with fp32 accumulators (CUDA C++ Programming Guide, "Warp Matrix
// Functions"), at the hardware's precision: __float_to_tf32 rounds to 10 mantissa bits (to
// nearest, ties away from zero, as cvt.rna.tf32.f32), the multiply reads only those bits of its
// operands, products are exact and summed in fp32.
// Fragments: the element layout is unspecified, so code may only loop over x[num_elements].
// Here each lane holds the whole A and B tiles (the hardware spreads them over the warp) and
// its 8 elements of the 16 x 16 accumulator in the hardware's spread (PTX ISA, the mma.m16n8k8
// fragment layout), so the lanes of a warp store different parts of C: a missing __syncwarp()
// between a store_matrix_sync and another lane's read is a hazard the racecheck reports.
// See tests/kernels/tst_cuda_host.cpp.
#pragma once
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_runtime.h"

namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

// fp32 -> TF32: keep the sign, the 8-bit exponent and 10 mantissa bits; the 13 bits below are
// rounded off (adding half of the last kept bit carries into it: ties away from zero).
inline float __float_to_tf32(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // infinity and NaN stay as they are
  return std::bit_cast<float>((bits + 0x1000u) & ~0x1fffu);
}

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment;

template <class Layout>
struct fragment<matrix_a, 16, 16, 8, precision::tf32, Layout> {  // A: 16 x 8, row r at x[8 r]
  static constexpr int num_elements = 16 * 8;
  float x[num_elements];
};
template <class Layout>
struct fragment<matrix_b, 16, 16, 8, precision::tf32, Layout> {  // B: 8 x 16, row r at x[16 r]
  static constexpr int num_elements = 8 * 16;
  float x[num_elements];
};
template <>
struct fragment<accumulator, 16, 16, 8, float> {  // this lane's 8 elements of C
  static constexpr int num_elements = 8;
  float x[num_elements];
};
using Accumulator = fragment<accumulator, 16, 16, 8, float>;

namespace detail {

// Element e of lane l's accumulator is C[row][col]: lanes 4g..4g+3 hold rows g and g + 8,
// two neighbouring columns each in both 8-column halves.
inline int row(unsigned lane, int e) { return int(lane / 4) + 8 * (e / 2 % 2); }
inline int col(unsigned lane, int e) { return 8 * (e / 4) + 2 * int(lane % 4) + e % 2; }
inline unsigned lane() { return ::paralab::cuda_host::self().lane(); }

// The multiply reads the top 19 bits of an operand: the rest is dropped, not rounded.
inline float operand(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & ~0x1fffu);
}

template <class P>
const void* address(const P& p) {
  if constexpr (std::is_pointer_v<P>)
    return p;
  else
    return p.get();
}

// WMMA's requirements: a 256-bit aligned pointer, ldm a multiple of 16 bytes.
template <class P>
void check(const char* call, const P& p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(address(p)) % 32)
    ::paralab::cuda_host::fail(std::string(call) + ": the pointer is not 32-byte aligned");
  if (ldm % 4)
    ::paralab::cuda_host::fail(std::string(call) + ": ldm " + std::to_string(ldm) +
                               " is not a multiple of 4 floats");
}

}  // namespace detail

template <class Layout, class P>
void load_matrix_sync(fragment<matrix_a, 16, 16, 8, precision::tf32, Layout>& a, P p,
                      unsigned ldm) {
  detail::check("load_matrix_sync", p, ldm);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 8; ++c)
      a.x[r * 8 + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}

template <class Layout, class P>
void load_matrix_sync(fragment<matrix_b, 16, 16, 8, precision::tf32, Layout>& b, P p,
                      unsigned ldm) {
  detail::check("load_matrix_sync", p, ldm);
  for (unsigned r = 0; r < 8; ++r)
    for (unsigned c = 0; c < 16; ++c)
      b.x[r * 16 + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}

template <class P>
void load_matrix_sync(Accumulator& acc, P p, unsigned ldm, layout_t layout) {
  detail::check("load_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  for (int e = 0; e < Accumulator::num_elements; ++e) {
    const unsigned r = detail::row(l, e), c = detail::col(l, e);
    acc.x[e] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
  }
}

template <class P>
void store_matrix_sync(P p, const Accumulator& acc, unsigned ldm, layout_t layout) {
  detail::check("store_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  for (int e = 0; e < Accumulator::num_elements; ++e) {
    const unsigned r = detail::row(l, e), c = detail::col(l, e);
    p[layout == mem_row_major ? r * ldm + c : c * ldm + r] = acc.x[e];
  }
}

template <class F>
void fill_fragment(F& f, float value) {
  for (float& v : f.x) v = value;
}

// d = a b + c for this lane's 8 elements (d may be c): 8 exact TF32 products each, summed in
// fp32 in k order.
template <class LA, class LB>
void mma_sync(Accumulator& d, const fragment<matrix_a, 16, 16, 8, precision::tf32, LA>& a,
              const fragment<matrix_b, 16, 16, 8, precision::tf32, LB>& b, const Accumulator& c) {
  const unsigned l = detail::lane();
  for (int e = 0; e < Accumulator::num_elements; ++e) {
    const int r = detail::row(l, e), col = detail::col(l, e);
    float sum = c.x[e];
    for (int k = 0; k < 8; ++k)
      sum += detail::operand(a.x[r * 8 + k]) * detail::operand(b.x[k * 16 + col]);
    d.x[e] = sum;
  }
}

}  // namespace nvcuda::wmma
