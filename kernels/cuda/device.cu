// Asks the CUDA runtime for devices (see device.h).
#include <cuda_runtime.h>

#include "cuda/device.h"

namespace paralab::kernels {

GpuInfo cuda_query_devices() {
  GpuInfo info;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    info.reason = err == cudaErrorInsufficientDriver ? "no CUDA driver is installed (or it is too old)"
                  : err == cudaErrorNoDevice         ? "no GPU is present"
                                                     : cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return info;
  }
  info.count = n;
  if (n == 0) {
    info.reason = "no GPU is present";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) info.firstName = prop.name;
  return info;
}

}  // namespace paralab::kernels
