// The vector kernels (cpu/vec_kernels.inc) compiled for baseline x86-64 (SSE2, 4 floats a vector):
// the level every x86-64 CPU runs. Its compile flags are set in kernels/CMakeLists.txt. See
// tests/kernels/tst_simd_levels.cpp.
#define PARALAB_VEC_NS vec_baseline
#define PARALAB_VEC_WIDTH 4
#include "cpu/vec_kernels.inc"
