// Built instead of attention.cu when ParaLab is configured without CUDA: every GPU attention and
// embedding kernel reports that it is not there (see cuda/attention.h).
#include <stdexcept>
#include <string>

#include "cuda/attention.h"

namespace paralab::kernels {

[[noreturn]] static void noCuda(const char* what) {
  throw std::runtime_error(std::string(what) + ": ParaLab was built without CUDA");
}

void attention_probs_cuda(float*, const float*, int, int, int, int, void*) {
  noCuda("attention_probs_cuda");
}
void attention_forward_cuda(float*, float*, const float*, int, int, int, int, void*) {
  noCuda("attention_forward_cuda");
}
void attention_forward_tiled_cuda(float*, float*, const float*, int, int, int, int, void*) {
  noCuda("attention_forward_tiled_cuda");
}
void attention_backward_cuda(float*, float*, const float*, const float*, const float*, int, int,
                             int, int, void*) {
  noCuda("attention_backward_cuda");
}
void embedding_forward_cuda(float*, const int*, const float*, const float*, int, int, int, void*) {
  noCuda("embedding_forward_cuda");
}
void embedding_backward_cuda(float*, float*, const float*, const int*, int, int, int, void*) {
  noCuda("embedding_backward_cuda");
}

}  // namespace paralab::kernels
