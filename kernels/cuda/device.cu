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
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    if (d == 0) info.firstName = prop.name;
    const long long bytes = static_cast<long long>(prop.totalGlobalMem);
    if (info.memoryBytes == 0 || bytes < info.memoryBytes) info.memoryBytes = bytes;
  }
  return info;
}

}  // namespace paralab::kernels
