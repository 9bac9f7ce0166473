// Built instead of the gemm_*.cu files when ParaLab is configured without CUDA: every GPU GEMM
// reports that it is not there (see cuda/gemm.h), so callers link the same everywhere.
#include <stdexcept>

#include "cuda/gemm.h"

namespace paralab::kernels {

#define PARALAB_GEMM_CUDA_STUB(name)                                                        \
  void name(bool, bool, int, int, int, float, const float*, int, const float*, int, float,  \
            float*, int, void*) {                                                           \
    throw std::runtime_error(#name ": ParaLab was built without CUDA");                     \
  }
PARALAB_GEMM_CUDA_STUB(gemm_cuda_naive)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_coalesced)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_tiled)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_tensor_core)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_vendor)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_vendor_tf32)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_tensor_core_bf16)
PARALAB_GEMM_CUDA_STUB(gemm_cuda_tensor_core_fp16)
#undef PARALAB_GEMM_CUDA_STUB

}  // namespace paralab::kernels
