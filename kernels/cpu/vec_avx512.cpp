// The vector kernels (cpu/vec_kernels.inc) compiled for AVX-512 F/VL/BW/DQ (16 floats a vector),
// chosen at run time where the CPU has them. Its compile flags are set in kernels/CMakeLists.txt.
// See tests/kernels/tst_simd_levels.cpp.
#define PARALAB_VEC_NS vec_avx512
#define PARALAB_VEC_WIDTH 16
#include "cpu/vec_kernels.inc"
