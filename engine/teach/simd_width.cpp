// The FMA probes behind the SIMD-width benchmark and the GEMM ladder's peak line (see
// simd_width.h, gemm_ladder.h). See tests/engine/tst_teach_bench.cpp.
#include "teach/simd_width.h"

#include <immintrin.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "teach/timing.h"

namespace paralab::teach {

namespace {

// One probe per vector width, the same loop written once: 12 independent accumulators hide the
// FMA latency (4 cycles on 2 ports needs >= 8 in flight), and each FMA on a W-lane vector is 2W
// flops. Each is compiled for its own instruction set (`target`) and called only where the CPU
// has it. Returns the flops done.
#define PARALAB_FMA_PROBE(name, isa, Vec, set1, fmadd, add, storeu, lanes) \
  __attribute__((target(isa))) double name(long iters, float* sink) {      \
    Vec acc[12];                                                           \
    for (int i = 0; i < 12; ++i) acc[i] = set1(float(i));                  \
    const Vec a = set1(0.999999f), b = set1(1e-7f);                        \
    for (long it = 0; it < iters; ++it)                                    \
      for (int i = 0; i < 12; ++i) acc[i] = fmadd(acc[i], a, b);           \
    for (int i = 1; i < 12; ++i) acc[0] = add(acc[0], acc[i]);             \
    float out[16];                                                         \
    storeu(out, acc[0]);                                                   \
    *sink = out[0];                                                        \
    return double(iters) * 12 * 2 * (lanes);                               \
  }
// Scalar: vfmadd231ss, one lane of an SSE register (what a compiler emits for a plain loop).
PARALAB_FMA_PROBE(fma1, "fma", __m128, _mm_set1_ps, _mm_fmadd_ss, _mm_add_ss, _mm_storeu_ps, 1)
PARALAB_FMA_PROBE(fma4, "fma", __m128, _mm_set1_ps, _mm_fmadd_ps, _mm_add_ps, _mm_storeu_ps, 4)
PARALAB_FMA_PROBE(fma8, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
                  _mm256_storeu_ps, 8)
PARALAB_FMA_PROBE(fma16, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
                  _mm512_storeu_ps, 16)
#undef PARALAB_FMA_PROBE

struct Probe {
  int lanes;
  const char* isa;
  const char* cpuFlag;  // for __builtin_cpu_supports
  double (*run)(long, float*);
};
constexpr Probe kProbes[] = {{1, "scalar", "fma", fma1},
                             {4, "SSE", "fma", fma4},
                             {8, "AVX2", "avx2", fma8},
                             {16, "AVX-512", "avx512f", fma16}};

bool cpuHas(const char* flag) {
  __builtin_cpu_init();
  // __builtin_cpu_supports takes a string literal only.
  if (std::string(flag) == "fma") return __builtin_cpu_supports("fma");
  if (std::string(flag) == "avx2")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return __builtin_cpu_supports("avx512f");
}

// GFLOP/s of `p`: the median of `repeats` runs of `iters` rounds of 12 FMAs.
double probeGflops(const Probe& p, int repeats, long iters) {
  float sink = 0;
  double flops = 0;
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) t.push_back(secondsOf([&] { flops = p.run(iters, &sink); }));
  return flops / median(t) * 1e-9;
}

}  // namespace

namespace {
// The probe of the peak: the widest vector the step's code runs, ParaLab's kernels at their
// level (PARALAB_SIMD may force a lower one, as on a CPU without AVX-512) or OpenBLAS's kernel
// family, whichever is wider. Forced to avx2 with OpenBLAS's Haswell kernels, the peak is
// AVX2's, as on an AVX2 CPU.
const Probe* peakProbe() {
  const int lanes = std::max(kernels::simdWidthFloats(kernels::simdLevel()),
                             kernels::vendor_blas_uses_avx512() ? 16 : 8);
  const Probe* widest = nullptr;
  for (const Probe& p : kProbes)
    if (cpuHas(p.cpuFlag) && p.lanes <= lanes) widest = &p;
  return widest;
}
}  // namespace

int fmaPeakLanes() {
  const Probe* p = peakProbe();
  return p ? p->lanes : 0;
}

double measuredFmaPeakGflops() {
  const Probe* p = peakProbe();
  return p ? probeGflops(*p, 5, 20'000'000) : 0;
}

double SimdWidthResult::gflopsAt(int lanes) const {
  for (const SimdWidthPoint& p : points)
    if (p.lanes == lanes) return p.gflops;
  return 0;
}

SimdWidthResult runSimdWidth(int repeats, const BenchProgress& progress) {
  if (repeats < 1 || repeats > 20) throw std::invalid_argument("repeats: 1..20");
  SimdWidthResult r;
  int done = 0;
  const int total = int(std::size(kProbes));
  for (const Probe& p : kProbes) {
    SimdWidthPoint point{p.lanes, p.isa, 0, ""};
    if (!cpuHas(p.cpuFlag))
      point.skipped = std::string("this CPU has no ") + p.isa + " FMA instructions";
    else
      // The same number of FMA instructions at every width: the time shows what a lane buys.
      point.gflops = probeGflops(p, repeats, 5'000'000);
    r.points.push_back(point);
    if (progress && !progress(++done, total)) {
      r.cancelled = true;
      break;
    }
  }
  return r;
}

}  // namespace paralab::teach
