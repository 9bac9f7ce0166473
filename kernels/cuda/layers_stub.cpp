// Built instead of layers.cu when ParaLab is configured without CUDA: every GPU layer reports
// that it is not there (see cuda/layers.h).
#include <stdexcept>
#include <string>

#include "cuda/layers.h"

namespace paralab::kernels {

[[noreturn]] static void noCuda(const char* what) {
  throw std::runtime_error(std::string(what) + ": ParaLab was built without CUDA");
}

void bias_add_cuda(float*, const float*, int, int, void*) { noCuda("bias_add_cuda"); }
void bias_backward_cuda(float*, const float*, int, int, void*) { noCuda("bias_backward_cuda"); }
void gelu_forward_cuda(float*, const float*, long, void*) { noCuda("gelu_forward_cuda"); }
void gelu_backward_cuda(float*, const float*, const float*, long, void*) {
  noCuda("gelu_backward_cuda");
}
void residual_add_cuda(float*, const float*, long, void*) { noCuda("residual_add_cuda"); }
void layernorm_forward_cuda(float*, float*, float*, const float*, const float*, const float*, int,
                            int, float, void*) {
  noCuda("layernorm_forward_cuda");
}
void layernorm_backward_cuda(float*, float*, float*, const float*, const float*, const float*,
                             const float*, const float*, int, int, void*) {
  noCuda("layernorm_backward_cuda");
}
void softmax_xent_cuda(float*, double*, int*, const float*, const int*, int, int, double, void*) {
  noCuda("softmax_xent_cuda");
}
void sgd_update_cuda(float*, const float*, long, float, void*) { noCuda("sgd_update_cuda"); }
void momentum_update_cuda(float*, float*, const float*, long, float, float, void*) {
  noCuda("momentum_update_cuda");
}
void adam_update_cuda(float*, float*, float*, const float*, long, float, float, float, float, long,
                      void*) {
  noCuda("adam_update_cuda");
}
void gather_rows_cuda(float*, const float*, const int*, long, int, void*) {
  noCuda("gather_rows_cuda");
}
void scatter_add_rows_cuda(float*, const float*, const int*, const float*, long, int,
                           void*) {
  noCuda("scatter_add_rows_cuda");
}
void dot_rows_cuda(float*, const float*, const int*, const float*, long, int, void*) {
  noCuda("dot_rows_cuda");
}
void scale_rows_cuda(float*, const float*, long, int, void*) { noCuda("scale_rows_cuda"); }

}  // namespace paralab::kernels
