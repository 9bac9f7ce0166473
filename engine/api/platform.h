// Process-level set-up shared by every ParaLab executable.
#pragma once

namespace paralab {

// OpenBLAS chooses its kernel family once, when it loads: from OPENBLAS_CORETYPE if that is
// set, else by detecting the CPU. Where the family it ended up with is an AVX2 one (Haswell,
// Zen) on a CPU with AVX-512 — an inherited OPENBLAS_CORETYPE=Haswell, or a CPU the library
// is too old to know — its GEMM runs at about half the rate of the AVX-512 "SkylakeX"
// kernels (measured: README, `paralab-bench gemm`). Then we set OPENBLAS_CORETYPE=SkylakeX
// and re-execute the program once. PARALAB_KEEP_BLAS_CORETYPE=1 keeps what was chosen.
void useFastBlasKernels(int argc, char** argv);

}  // namespace paralab
