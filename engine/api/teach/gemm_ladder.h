// The GEMM ladder, measured: GFLOP/s of every CPU rung (kernels/cpu/gemm.h) at square sizes,
// each against OpenBLAS timed in the same rounds and against the cores' FMA peak (a probe of
// independent fused multiply-adds, times the threads). `paralab-bench gemm` prints it as a
// table; a lesson's ```bench {"kind": "gemm-ladder"} step draws it. See
// tests/engine/tst_teach_bench.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace paralab::teach {

// Called after each measured piece: (done, total). Returning false stops the run early (the
// window's Cancel); what was measured by then is returned.
using BenchProgress = std::function<bool(int done, int total)>;

struct GemmLadderOptions {
  std::vector<int> sizes = {512};    // square M = N = K
  int threads = 1;                   // for threaded, tiled and OpenBLAS (naive and simd use one)
  int repeats = 5;                   // timed calls per rung and size at most (the median is kept)
  double maxSeconds = 1.5;           // a rung predicted slower than this per call skips the size
  std::vector<std::string> kernels;  // only these rungs (vendor always runs); empty: all
};

struct GemmRung {
  std::string kernel;   // "naive" | "simd" | "threaded" | "tiled" | "vendor"
  int n = 0;            // size M = N = K
  double gflops = 0;    // 2n³ / median seconds per call, 1e9 flop/s; 0 when skipped
  int calls = 0;        // timed calls behind the median
  std::string skipped;  // why it did not run at this size ("" it ran)
};

struct GemmLadderResult {
  int threads = 1;
  std::string blas;             // the vendor library, as it names itself
  double corePeakGflops = 0;    // FMA probe, one core: best of three
  double peakGflops = 0;        // corePeakGflops × threads: the reference ceiling
  std::vector<GemmRung> rungs;  // size by size, each in ladder order (slowest first)
  bool cancelled = false;
  // The vendor rung's rate at size n (0 when it was not measured).
  double vendorGflops(int n) const;
};

// FP32 FMA peak of one core, GFLOP/s: 12 independent FMA chains at the widest SIMD width the
// CPU has and the running code uses: ParaLab's kernels' level (PARALAB_SIMD can force a lower
// one) or OpenBLAS's kernel family (AVX2 or AVX-512), whichever is wider
// (teach/simd_width.cpp); 2 flops per lane per FMA; the median of 5 timed runs.
double measuredFmaPeakGflops();
// The floats per FMA instruction that peak is measured at (16, 8, ...; 0: the CPU has no FMA).
int fmaPeakLanes();

// Timed calls for a rung whose rate at the previous size was `lastRate` GFLOP/s (0: none yet)
// at a size of `flops`: fewer for slow rungs, 0 with `skipped` set where one call is predicted
// to take longer than `maxSeconds`. Shared with the GPU table of `paralab-bench gemm`.
int ladderRepeats(double lastRate, double flops, int repeats, double maxSeconds,
                  std::string* skipped);

// Runs the ladder: per size, rounds of one call per rung (a change in the machine's load hits
// every rung alike, so the ratios hold), after one untimed round. Sets the GEMM pool's and
// OpenBLAS's threads to options.threads. Throws std::invalid_argument naming a bad option.
GemmLadderResult runGemmLadder(const GemmLadderOptions& options,
                               const BenchProgress& progress = {});

}  // namespace paralab::teach
