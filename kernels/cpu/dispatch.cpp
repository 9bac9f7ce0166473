// Run-time choice of the kernels' vector level (see dispatch.h). See
// tests/kernels/tst_simd_levels.cpp; `PARALAB_SIMD=avx2 paralab-bench gpt` forces a level.
//
// Why a table of function pointers over three compiles of one source (cpu/vec_kernels.inc, built
// by vec_baseline.cpp, vec_avx2.cpp and vec_avx512.cpp with their own -m flags, each in its own
// namespace) rather than GCC's target_clones: target_clones binds through an ifunc resolver that
// the loader runs before main, so no setting can force a lower level, a test cannot run every
// level in one process, nothing can report which clone runs, and the resolver breaks under
// ThreadSanitizer. Highway would do the same job through a new dependency; the kernels here are
// plain loops that GCC vectorises at each width (#pragma omp simd for the reductions).
#include "cpu/dispatch.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace paralab::kernels {

namespace vec_baseline {
extern const VecKernels kTable;
}
#if PARALAB_VEC_X86
namespace vec_avx2 {
extern const VecKernels kTable;
}
namespace vec_avx512 {
extern const VecKernels kTable;
}
#endif

namespace {

constexpr const char* kNames[] = {"baseline", "avx2", "avx512"};

SimdLevel detectCpu() {
#if PARALAB_VEC_X86
  __builtin_cpu_init();  // may run before libgcc's own constructor has filled the features
  // libgcc checks that the operating system saves the AVX and AVX-512 registers (XCR0) too.
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq");
  return avx512 ? SimdLevel::Avx512 : avx2 ? SimdLevel::Avx2 : SimdLevel::Baseline;
#else
  return SimdLevel::Baseline;
#endif
}

const VecKernels* tableOf(SimdLevel level) {
#if PARALAB_VEC_X86
  if (level == SimdLevel::Avx512) return &vec_avx512::kTable;
  if (level == SimdLevel::Avx2) return &vec_avx2::kTable;
#endif
  (void)level;
  return &vec_baseline::kTable;
}

// The CPU's best, or PARALAB_SIMD's level; bad input stops the program (exit 2).
SimdLevel levelAtStart() {
  const SimdLevel cpu = simdLevelCpu();
  const char* forced = std::getenv("PARALAB_SIMD");
  if (!forced || !*forced) return cpu;
  SimdLevel level;
  if (!simdLevelFromName(forced, &level)) {
    std::fprintf(stderr, "PARALAB_SIMD: '%s' is not a level (allowed: baseline, avx2, avx512)\n",
                 forced);
    std::exit(2);
  }
  if (level > cpu) {
    std::fprintf(stderr, "PARALAB_SIMD: %s is above this CPU's level (allowed: baseline%s%s)\n",
                 forced, cpu >= SimdLevel::Avx2 ? ", avx2" : "",
                 cpu >= SimdLevel::Avx512 ? ", avx512" : "");
    std::exit(2);
  }
  return level;
}

std::atomic<SimdLevel>& current() {
  static std::atomic<SimdLevel> level{levelAtStart()};
  return level;
}

// Reads PARALAB_SIMD when the program starts, so bad input stops it before any work.
const SimdLevel kLevelAtStart = current().load();

}  // namespace

SimdLevel simdLevelCpu() {
  static const SimdLevel cpu = detectCpu();
  return cpu;
}

bool cpuHasAvx512Bf16() {
#if PARALAB_VEC_X86
  static const bool has = detectCpu() == SimdLevel::Avx512 && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

SimdLevel simdLevel() { return current().load(std::memory_order_relaxed); }

const char* simdLevelName(SimdLevel level) { return kNames[int(level)]; }

int simdWidthFloats(SimdLevel level) {
  return level == SimdLevel::Avx512 ? 16 : level == SimdLevel::Avx2 ? 8 : 4;
}

bool simdLevelFromName(const char* name, SimdLevel* level) {
  for (int i = 0; i < 3; ++i)
    if (!std::strcmp(name, kNames[i])) {
      *level = SimdLevel(i);
      return true;
    }
  return false;
}

bool setSimdLevel(SimdLevel level) {
  if (level > simdLevelCpu()) return false;
  current().store(level);
  return true;
}

const VecKernels& vec() { return *tableOf(simdLevel()); }

const VecKernels& vecAt(SimdLevel level) { return *tableOf(level); }

}  // namespace paralab::kernels
