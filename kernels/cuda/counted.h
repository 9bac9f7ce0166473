// The marks of the operations a teaching kernel has counted when the host runs it
// (cuda/host/count.h): a global load and a branch condition. Compiled by nvcc they are the plain
// load and the plain condition, so the GPU runs the same source unmarked. See
// tests/kernels/tst_cuda_count.cpp.
#pragma once

#if defined(__CUDACC__)
#define PARALAB_COUNTED_LOAD(p) (*(p))
#define PARALAB_COUNTED_BRANCH(condition) (condition)
#else
#include "cuda/host/count.h"
#define PARALAB_COUNTED_LOAD(p) ::paralab::cuda_host::countLoad(__LINE__, (p))
#define PARALAB_COUNTED_BRANCH(condition) ::paralab::cuda_host::countBranch(__LINE__, (condition))
#endif
