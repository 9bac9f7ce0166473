// What `#include <mma.h>` finds on the host: nvcuda::wmma for the shapes the tensor-core GEMMs
// use (CUDA C++ Programming Guide, "Warp Matrix Functions"), with fp32 accumulators, at the
// hardware's precision. TF32 m16n16k8: __float_to_tf32 rounds to 10 mantissa bits (to nearest,
// ties away from zero, as cvt.rna.tf32.f32), the multiply reads only those bits of its
// operands. bf16 and fp16 m16n16k16 (__nv_bfloat16, __half: cuda_bf16.h, cuda_fp16.h): the
// operands are 16-bit values. Either way the products are exact and summed in fp32.
// Fragments are spread over the warp's lanes as the hardware spreads them (PTX ISA, "Matrix
// Fragments for mma.m16n8k8", .tf32, and "for mma.m16n8k16", .bf16/.f16; the 16 x 16 tile is
// two such 16 x 8 halves): a lane holds 4 elements of A and 4 of B (TF32) or 8 and 8 (16-bit),
// 8 of C. So mma_sync is a warp collective (the last lane to arrive multiplies for all 32), and
// the lanes of a warp store different parts of C: a missing __syncwarp() before another lane
// reads them back is a hazard the racecheck reports.
// See tests/kernels/tst_cuda_host.cpp and tst_cuda_gemm_16bit.cpp.
#pragma once
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
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
struct fragment<matrix_a, 16, 16, 8, precision::tf32, Layout> {  // this lane's 4 of A (16 x 8)
  static constexpr int num_elements = 4;
  float x[num_elements];
};
template <class Layout>
struct fragment<matrix_b, 16, 16, 8, precision::tf32, Layout> {  // this lane's 4 of B (8 x 16)
  static constexpr int num_elements = 4;
  float x[num_elements];
};
template <>
struct fragment<accumulator, 16, 16, 8, float> {  // this lane's 8 of C (16 x 16)
  static constexpr int num_elements = 8;
  float x[num_elements];
};
using Accumulator = fragment<accumulator, 16, 16, 8, float>;

// The 16-bit shape, m16n16k16: A and B are 16 x 16 tiles of bf16 or fp16.
template <class T>
concept Half16 = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;
template <Half16 T, class Layout>
struct fragment<matrix_a, 16, 16, 16, T, Layout> {  // this lane's 8 of A (16 x 16)
  static constexpr int num_elements = 8;
  T x[num_elements];
};
template <Half16 T, class Layout>
struct fragment<matrix_b, 16, 16, 16, T, Layout> {  // this lane's 8 of B (16 x 16)
  static constexpr int num_elements = 8;
  T x[num_elements];
};
template <>
struct fragment<accumulator, 16, 16, 16, float> {  // this lane's 8 of C (16 x 16), as in k8
  static constexpr int num_elements = 8;
  float x[num_elements];
};

namespace detail {

// Where element e of lane l lies in its tile: g = l / 4 is the lane's group, t = l % 4 its
// place in the group. A: rows g, g + 8 of columns t, t + 4. B: rows t, t + 4 of columns g, g + 8.
// C: rows g, g + 8, columns 2t, 2t + 1 of each 8-column half.
struct Place {
  int row, col;
};
inline Place inA(unsigned l, int e) { return {int(l / 4) + 8 * (e % 2), int(l % 4) + 4 * (e / 2)}; }
inline Place inB(unsigned l, int e) { return {int(l % 4) + 4 * (e % 2), int(l / 4) + 8 * (e / 2)}; }
// 16-bit A (16 x 16): rows g, g + 8 of columns 2t, 2t + 1, then the same 8 columns on.
// B (16 x 16): rows 2t, 2t + 1, 2t + 8, 2t + 9 of column g, then of column g + 8.
inline Place inA16(unsigned l, int e) {
  return {int(l / 4) + 8 * (e / 2 % 2), 2 * int(l % 4) + e % 2 + 8 * (e / 4)};
}
inline Place inB16(unsigned l, int e) {
  return {2 * int(l % 4) + e % 2 + 8 * (e / 2 % 2), int(l / 4) + 8 * (e / 4)};
}
inline Place inC(unsigned l, int e) {
  return {int(l / 4) + 8 * (e / 2 % 2), 8 * (e / 4) + 2 * int(l % 4) + e % 2};
}

inline unsigned lane() { return ::paralab::cuda_host::self().lane(); }

template <class P>
const void* address(const P& p) {
  if constexpr (std::is_pointer_v<P>)
    return p;
  else
    return p.get();
}

// WMMA's requirements: a 256-bit aligned pointer, ldm a multiple of 16 bytes (4 floats, 8
// 16-bit values).
template <class P>
void check(const char* call, const P& p, unsigned ldm, unsigned elementBytes = 4) {
  if (reinterpret_cast<uintptr_t>(address(p)) % 32)
    ::paralab::cuda_host::fail(std::string(call) + ": the pointer is not 32-byte aligned");
  if (ldm * elementBytes % 16)
    ::paralab::cuda_host::fail(std::string(call) + ": ldm " + std::to_string(ldm) +
                               " is not a multiple of " + std::to_string(16 / elementBytes) +
                               (elementBytes == 4 ? " floats" : " 16-bit values"));
}

// Element (r, c) of the tile at p with leading dimension ldm, stored by rows or by columns.
template <class P>
decltype(auto) at(P p, unsigned ldm, bool rowMajor, Place x) {
  return p[rowMajor ? x.row * ldm + x.col : x.col * ldm + x.row];
}

// The multiply reads the top 19 bits of an operand: the rest is dropped, not rounded.
inline float operand(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & ~0x1fffu);
}

struct Operands {  // one lane's part of an mma_sync
  float* d;
  const float *a, *b, *c;
};

// D = A B + C for the whole warp, from the 32 lanes' parts: 8 exact products per element,
// summed in fp32 in k order onto C.
inline void multiply(const uint64_t (&lanes)[32]) {
  float A[16][8], B[8][16], C[16][16];
  for (unsigned l = 0; l < 32; ++l) {
    const auto& o = *reinterpret_cast<const Operands*>(lanes[l]);
    for (int e = 0; e < 4; ++e) {
      A[inA(l, e).row][inA(l, e).col] = operand(o.a[e]);
      B[inB(l, e).row][inB(l, e).col] = operand(o.b[e]);
    }
    for (int e = 0; e < 8; ++e) C[inC(l, e).row][inC(l, e).col] = o.c[e];
  }
  for (unsigned l = 0; l < 32; ++l)  // d may be c: C is read in full first
    for (int e = 0; e < 8; ++e) {
      const Place x = inC(l, e);
      float sum = C[x.row][x.col];
      for (int k = 0; k < 8; ++k) sum += A[x.row][k] * B[k][x.col];
      reinterpret_cast<const Operands*>(lanes[l])->d[e] = sum;
    }
}

template <class T>
struct Operands16 {  // one lane's part of a 16-bit mma_sync
  float* d;
  const T *a, *b;
  const float* c;
};

// D = A B + C for the whole warp, 16-bit A and B widened exactly: 16 exact products per
// element (an 8-bit by 8-bit or 11-bit by 11-bit significand fits fp32's 24), summed in fp32 in
// k order onto C.
template <class T>
void multiply16(const uint64_t (&lanes)[32]) {
  float A[16][16], B[16][16], C[16][16];
  for (unsigned l = 0; l < 32; ++l) {
    const auto& o = *reinterpret_cast<const Operands16<T>*>(lanes[l]);
    for (int e = 0; e < 8; ++e) {
      A[inA16(l, e).row][inA16(l, e).col] = float(o.a[e]);
      B[inB16(l, e).row][inB16(l, e).col] = float(o.b[e]);
      C[inC(l, e).row][inC(l, e).col] = o.c[e];
    }
  }
  for (unsigned l = 0; l < 32; ++l)  // d may be c: C is read in full first
    for (int e = 0; e < 8; ++e) {
      const Place x = inC(l, e);
      float sum = C[x.row][x.col];
      for (int k = 0; k < 16; ++k) sum += A[x.row][k] * B[k][x.col];
      reinterpret_cast<const Operands16<T>*>(lanes[l])->d[e] = sum;
    }
}

}  // namespace detail

template <class Use, Half16 T, class Layout, class P>  // 16-bit A or B
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, P p, unsigned ldm) {
  detail::check("load_matrix_sync", p, ldm, 2);
  const unsigned l = detail::lane();
  for (int e = 0; e < f.num_elements; ++e)
    f.x[e] = detail::at(p, ldm, std::is_same_v<Layout, row_major>,
                        std::is_same_v<Use, matrix_a> ? detail::inA16(l, e) : detail::inB16(l, e));
}

template <class Use, class Layout, class P>  // A or B
void load_matrix_sync(fragment<Use, 16, 16, 8, precision::tf32, Layout>& f, P p, unsigned ldm) {
  detail::check("load_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  for (int e = 0; e < f.num_elements; ++e)
    f.x[e] = detail::at(p, ldm, std::is_same_v<Layout, row_major>,
                        std::is_same_v<Use, matrix_a> ? detail::inA(l, e) : detail::inB(l, e));
}

template <int K, class P>  // an accumulator of either shape (k8, k16): the same layout
void load_matrix_sync(fragment<accumulator, 16, 16, K, float>& c, P p, unsigned ldm,
                      layout_t layout) {
  detail::check("load_matrix_sync", p, ldm);
  for (int e = 0; e < c.num_elements; ++e)
    c.x[e] = detail::at(p, ldm, layout == mem_row_major, detail::inC(detail::lane(), e));
}

template <int K, class P>
void store_matrix_sync(P p, const fragment<accumulator, 16, 16, K, float>& c, unsigned ldm,
                       layout_t layout) {
  detail::check("store_matrix_sync", p, ldm);
  for (int e = 0; e < c.num_elements; ++e)
    detail::at(p, ldm, layout == mem_row_major, detail::inC(detail::lane(), e)) = c.x[e];
}

template <class F>
void fill_fragment(F& f, float value) {
  for (auto& v : f.x) v = value;  // a 16-bit fragment: value rounded to its type
}

// d = a b + c, a warp collective: every lane offers its parts, the last to arrive multiplies.
template <class LA, class LB>
void mma_sync(Accumulator& d, const fragment<matrix_a, 16, 16, 8, precision::tf32, LA>& a,
              const fragment<matrix_b, 16, 16, 8, precision::tf32, LB>& b, const Accumulator& c) {
  const detail::Operands mine{d.x, a.x, b.x, c.x};  // on this lane's stack until all return
  ::paralab::cuda_host::warpExchange(::paralab::cuda_host::WarpOp::Mma, 0xffffffffu,
                                     reinterpret_cast<uint64_t>(&mine), -1, detail::multiply);
}

// d = a b + c with 16-bit a and b, a warp collective as above.
template <Half16 T, class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
              const fragment<matrix_a, 16, 16, 16, T, LA>& a,
              const fragment<matrix_b, 16, 16, 16, T, LB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  const detail::Operands16<T> mine{d.x, a.x, b.x, c.x};
  ::paralab::cuda_host::warpExchange(::paralab::cuda_host::WarpOp::Mma, 0xffffffffu,
                                     reinterpret_cast<uint64_t>(&mine), -1, detail::multiply16<T>);
}

}  // namespace nvcuda::wmma
