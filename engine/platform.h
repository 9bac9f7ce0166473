// Process-level set-up shared by every ParaLab executable.
#pragma once

namespace paralab {

// OpenBLAS 0.3.21 (Debian 12) does not know recent AMD cores (Zen 4/5) and falls back to its
// AVX2 "Haswell" kernels, about half the GEMM rate of its AVX-512 "SkylakeX" kernels on the
// same CPU (measured: see README, `paralab-bench gemm`). The kernel family is chosen when the
// library loads, from OPENBLAS_CORETYPE, so when the CPU has AVX-512 and the variable is unset
// we set it and re-execute the program once. OPENBLAS_CORETYPE set by the user always wins.
void useFastBlasKernels(int argc, char** argv);

}  // namespace paralab
