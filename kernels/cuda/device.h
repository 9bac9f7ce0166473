// What GPUs this process can use, asked of the CUDA runtime (never the driver library
// directly, so it answers "no GPU" cleanly where no driver is installed).
// See tests/kernels/tst_cuda_device.cpp and `paralab-run --device cuda`.
#pragma once
#include <string>

namespace paralab::kernels {

struct GpuInfo {
  int count = 0;           // usable GPUs
  std::string reason;      // why count is 0 ("no CUDA driver", "no GPU", "built without CUDA")
  std::string firstName;   // e.g. "NVIDIA H100 80GB HBM3"
  bool emulated = false;   // the host emulation of the test programs (cuda/emulated.h)
  long long memoryBytes = 0;  // the smallest usable GPU's memory (0: unknown)
};

GpuInfo cuda_query_devices();

}  // namespace paralab::kernels
