// Run-time choice of vector width for plain loops: a function marked PARALAB_SIMD_CLONES is
// compiled for AVX-512 (x86-64-v4), AVX2 (v3) and baseline x86-64, and the best one the CPU
// supports is bound when the program loads (GCC target_clones + ifunc).
#pragma once

// Not under ThreadSanitizer: GCC instruments the ifunc resolver, which the loader runs before
// the TSan runtime exists, and the program dies before main (`make test-tsan`).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__SANITIZE_THREAD__)
#define PARALAB_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PARALAB_SIMD_CLONES
#endif
