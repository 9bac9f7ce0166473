// Built instead of device.cu when ParaLab is configured without CUDA.
#include "cuda/device.h"

namespace paralab::kernels {

GpuInfo cuda_query_devices() { return {0, "ParaLab was built without CUDA", ""}; }

}  // namespace paralab::kernels
