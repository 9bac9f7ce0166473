// The vector kernels (cpu/vec_kernels.inc) compiled for AVX2 + FMA (8 floats a vector), chosen at
// run time where the CPU has them. Its compile flags are set in kernels/CMakeLists.txt. See
// tests/kernels/tst_simd_levels.cpp.
#define PARALAB_VEC_NS vec_avx2
#define PARALAB_VEC_WIDTH 8
#include "cpu/vec_kernels.inc"
