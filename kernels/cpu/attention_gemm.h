// How the float attention kernels (cpu/attention.h, cpu/attention_blocks.h) run: per sequence and
// head, every product is a GEMM (the caller's rung of cpu/gemm.h) over blocks of query rows, and
// only the key blocks on or below the diagonal are multiplied; the dispatched row kernels
// (cpu/dispatch.h) do the softmax between. See tests/kernels/tst_attention_gemm.cpp.
#pragma once

#include <cstddef>

#include "cpu/gemm.h"

namespace paralab::kernels {

// Query rows per block. Query block [i0, i0 + R) sees keys 0 .. i0 + R - 1 (whole attention), so
// the GEMMs cover T (T + R) / 2 score entries of the T^2: the blocks above the diagonal are never
// computed, and inside a diagonal block the R (R - 1) / 2 masked entries are computed and zeroed.
//   forward   S_I = Q_I K_{<n}^T / sqrt(hs)   (M = R, N = n, K = hs)
//             O_I = P_I V_{<n}                 (M = R, N = hs, K = n)
//   backward  dP_I = dO_I V_{<n}^T,  dQ_I = dS_I K_{<n} / sqrt(hs)   (over query blocks)
//             dK_J = dS_{>=j0, J}^T Q_{>=j0},  dV_J = P_{>=j0, J}^T dO_{>=j0}   (key blocks J)
// The blockwise kernels do the same with the positions of their chunk and block.
constexpr int kAttentionRowBlock = 32;

// The GEMM attention runs on: `gemm`, or the vendor BLAS when it is null.
inline GemmFn attentionGemm(GemmFn gemm) { return gemm ? gemm : gemm_vendor<float>; }

// Scratch of at least `floats` floats, kept per thread between calls (slot 0 or 1: two buffers
// in use at once).
float* attentionWork(int slot, size_t floats);

}  // namespace paralab::kernels
