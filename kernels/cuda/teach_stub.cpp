// Built instead of teach.cu when ParaLab is configured without CUDA (see cuda/teach.h).
#include <stdexcept>

#include "cuda/teach.h"

namespace paralab::kernels {

WarpDivergenceResult warp_divergence_experiment(long, int) {
  throw std::runtime_error("warp divergence needs a GPU: ParaLab was built without CUDA");
}
CoalescingResult coalescing_experiment(long, int, int) {
  throw std::runtime_error("coalescing needs a GPU: ParaLab was built without CUDA");
}

}  // namespace paralab::kernels
