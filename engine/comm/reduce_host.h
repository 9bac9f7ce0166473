// The host reduction every CPU communicator path uses (ThreadComm, MpiComm's naive and ring):
// dst[i] = srcs[0][i] op srcs[1][i] op ... in source order, then / divisor (an average); the
// thread all-reduce writes that one sum into every rank's buffer at once.
// See tests/engine/tst_comm_thread.cpp and tst_comm_mpi.cpp (results against a serial sum).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "comm/communicator.h"  // ReduceOp
#include "cpu/dispatch.h"       // the sum at the CPU's vector level

namespace paralab {

// Works in blocks that stay in L1: acc = s0 op s1 op ..., then every dsts[k] = acc / divisor.
// A destination is written only after every source's block was read, so it may alias a source.
inline void reduceHostInto(float* const* dsts, int ndst, const float* const* srcs, int nsrc,
                           int64_t count, ReduceOp op, float divisor) {
  constexpr int64_t kBlock = 2048;  // floats: 8 KiB
  alignas(64) float acc[kBlock];
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t len = std::min(kBlock, count - b);
    const float* s0 = srcs[0] + b;
    if (nsrc == 1) std::memcpy(acc, s0, static_cast<size_t>(len) * 4);
    for (int k = 1; k < nsrc; ++k) {
      const float* s = srcs[k] + b;
      const float* a = k == 1 ? s0 : acc;  // the first pass reads both sources directly
      if (op == ReduceOp::Max)
        for (int64_t i = 0; i < len; ++i) acc[i] = s[i] > a[i] ? s[i] : a[i];
      else
        kernels::vec().addArrays(acc, a, s, len);
    }
    if (divisor != 1.0f)
      for (int64_t i = 0; i < len; ++i) acc[i] /= divisor;
    for (int k = 0; k < ndst; ++k) std::memcpy(dsts[k] + b, acc, static_cast<size_t>(len) * 4);
  }
}

// dst = srcs[0] op srcs[1] op ... in source order, / divisor; dst may alias a source.
inline void reduceHost(float* dst, const float* const* srcs, int nsrc, int64_t count,
                       ReduceOp op, float divisor) {
  reduceHostInto(&dst, 1, srcs, nsrc, count, op, divisor);
}

}  // namespace paralab
