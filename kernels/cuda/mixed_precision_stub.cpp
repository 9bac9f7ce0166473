// Built instead of mixed_precision.cu when ParaLab is configured without CUDA: each launcher
// reports that it is not there (see cuda/mixed_precision.h).
#include <stdexcept>

#include "cuda/mixed_precision.h"

namespace paralab::kernels {

void round_half_cuda(float*, long, bool, unsigned long long*, void*) {
  throw std::runtime_error("round_half_cuda: ParaLab was built without CUDA");
}
void unscale_check_cuda(float*, long, float, int*, void*) {
  throw std::runtime_error("unscale_check_cuda: ParaLab was built without CUDA");
}

}  // namespace paralab::kernels
