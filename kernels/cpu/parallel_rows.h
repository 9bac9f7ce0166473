// Splits a rank's own elementwise and row-wise kernels (LayerNorm, GELU, bias, residual adds, the
// loss, Adam) over the rank's threads: the count set with the vendor BLAS's (cpu/gemm.h), so its
// GEMMs and the rest of its step use the same threads. Each piece is whole rows (or whole
// columns, for sums over rows), so the result is bit for bit the one thread's.
// See tests/kernels/tst_parallel_rows.cpp and `paralab-bench gpt --threads 2`.
#pragma once

#include <functional>

namespace paralab::kernels {

// Threads a rank's kernels split over, the caller included (1 until set).
int rank_threads();
// Sets it (n < 1 counts as 1); vendor_blas_set_threads calls this. A split already running keeps
// the threads it started with.
void rank_threads_set(int n);

// Calls f(begin, end) over pieces that cover [0, n) in order, on the rank's threads: every
// piece's begin is a multiple of `grain` (the last piece ends at n), and `minPiece` is the least
// work worth a piece of its own (in the units of n). With one thread, or n < 2 minPiece, f(0, n)
// runs on the caller alone.
void parallel_for(long n, long grain, long minPiece, const std::function<void(long, long)>& f);

}  // namespace paralab::kernels
