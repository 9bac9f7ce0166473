// Checks every CUDA runtime call and kernel launch: on failure, throws std::runtime_error
// naming the call, its file:line and cudaGetErrorString. Included by the .cu files only.
// Example: PARALAB_CUDA_CHECK(cudaMalloc(&p, bytes)); kernel<<<g, b>>>(...); PARALAB_CUDA_CHECK_LAUNCH();
#pragma once
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace paralab::kernels::detail {

[[noreturn]] inline void cudaFail(const char* call, const char* file, int line, cudaError_t err) {
  // A failed runtime call leaves its error as the "last error" too: clear it, or the next
  // launch's check would report this call's error again under that kernel's name.
  (void)cudaGetLastError();
  const char* base = std::strrchr(file, '/');  // "gemm_tiled.cu:88", not the build machine's path
  throw std::runtime_error(std::string(base ? base + 1 : file) + ":" + std::to_string(line) +
                           ": " + call + ": " + cudaGetErrorString(err));
}

}  // namespace paralab::kernels::detail

#define PARALAB_CUDA_CHECK(call)                                                  \
  do {                                                                            \
    const cudaError_t paralabErr_ = (call);                                       \
    if (paralabErr_ != cudaSuccess)                                               \
      ::paralab::kernels::detail::cudaFail(#call, __FILE__, __LINE__, paralabErr_); \
  } while (0)

// After a <<<...>>> launch: a bad configuration (too many threads, too much shared memory, no
// kernel image for this GPU) is reported here, not by the launch itself.
#define PARALAB_CUDA_CHECK_LAUNCH() PARALAB_CUDA_CHECK(cudaGetLastError())
