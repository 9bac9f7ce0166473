// Built instead of attention_blocks.cu when ParaLab is configured without CUDA: every GPU
// blockwise attention kernel reports that it is not there (see cuda/attention_blocks.h).
#include <stdexcept>
#include <string>

#include "cuda/attention_blocks.h"

namespace paralab::kernels {

[[noreturn]] static void noCuda(const char* what) {
  throw std::runtime_error(std::string(what) + ": ParaLab was built without CUDA");
}

void attention_blocks_init_cuda(float*, float*, float*, int, int, int, int, void*) {
  noCuda("attention_blocks_init_cuda");
}
long attention_block_forward_cuda(float*, float*, float*, const float*, int, const float*,
                                  const float*, int, int, int, int, int, int, int, int, void*) {
  noCuda("attention_block_forward_cuda");
}
void attention_blocks_finish_cuda(float*, float*, const float*, const float*, const float*, int,
                                  int, int, int, void*) {
  noCuda("attention_blocks_finish_cuda");
}
void attention_blocks_delta_cuda(float*, const float*, const float*, int, int, int, int, void*) {
  noCuda("attention_blocks_delta_cuda");
}
long attention_block_backward_cuda(float*, float*, float*, const float*, const float*,
                                   const float*, const float*, int, const float*, const float*,
                                   int, int, int, int, int, int, int, int, void*) {
  noCuda("attention_block_backward_cuda");
}
void rows_copy_cuda(float*, int, const float*, int, long, int, void*) { noCuda("rows_copy_cuda"); }
void rows_add_cuda(float*, int, const float*, int, long, int, void*) { noCuda("rows_add_cuda"); }

}  // namespace paralab::kernels
