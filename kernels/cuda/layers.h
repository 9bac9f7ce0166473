// The rest of the training step on the GPU, float, device pointers, row-major [rows, cols]:
// the same formulas as cpu/layers.h and cpu/optim.h, plus the residual add and the MoE row
// gather/scatter, dot and scale. Every launcher enqueues on `stream` (a cudaStream_t; nullptr: the
// default stream), returns without waiting, and throws std::runtime_error on a CUDA error.
// Reductions run in a fixed order, so results repeat bit for bit (scatter_add_rows_cuda with
// repeated indices excepted, see there). See tests/kernels/tst_cuda_kernels.cpp.
#pragma once

namespace paralab::kernels {

// y[r, c] += b[c]
void bias_add_cuda(float* y, const float* b, int rows, int cols, void* stream = nullptr);
// db[c] += sum_r dy[r, c]
void bias_backward_cuda(float* db, const float* dy, int rows, int cols, void* stream = nullptr);

// GELU, tanh form, as cpu/layers.h: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void gelu_forward_cuda(float* y, const float* x, long n, void* stream = nullptr);
// dx = dy * gelu'(x); dx may be dy.
void gelu_backward_cuda(float* dx, const float* x, const float* dy, long n,
                        void* stream = nullptr);

// The residual stream: y[i] += x[i].
void residual_add_cuda(float* y, const float* x, long n, void* stream = nullptr);

// LayerNorm over each row (Ba et al. 2016), saving mean and rstd per row, as cpu/layers.h.
void layernorm_forward_cuda(float* y, float* mean, float* rstd, const float* x,
                            const float* gamma, const float* beta, int rows, int cols,
                            float eps = 1e-5f, void* stream = nullptr);
// dx = (written); dgamma, dbeta += (accumulated). dx may be dy, as the MLP's backward uses it.
void layernorm_backward_cuda(float* dx, float* dgamma, float* dbeta, const float* dy,
                             const float* x, const float* mean, const float* rstd,
                             const float* gamma, int rows, int cols, void* stream = nullptr);

// Softmax cross-entropy, as cpu/layers.h: dlogits = (softmax - onehot(label)) / normalizer;
// *lossSum (device) = sum over rows of -log softmax[label]; *correct (device) = rows whose
// first arg-max is the label. Both scalars are written, not accumulated; copy them back when
// the step's figures are wanted. Classes up to any size; one block does the whole batch.
void softmax_xent_cuda(float* dlogits, double* lossSum, int* correct, const float* logits,
                       const int* labels, int rows, int classes, double normalizer,
                       void* stream = nullptr);

// Optimizer updates, as cpu/optim.h (t is Adam's 1-based step count).
void sgd_update_cuda(float* p, const float* g, long n, float lr, void* stream = nullptr);
void momentum_update_cuda(float* p, float* v, const float* g, long n, float lr, float mu,
                          void* stream = nullptr);
void adam_update_cuda(float* p, float* m, float* v, const float* g, long n, float lr,
                      float beta1, float beta2, float eps, long t, void* stream = nullptr);

// MoE dispatch and combine, as cpu/moe.h. Gather (index_select along rows):
// dst[i, :] = src[index[i], :] for i < n.
void gather_rows_cuda(float* dst, const float* src, const int* index, long n, int cols,
                      void* stream = nullptr);
// Scatter-add: dst[index[i], :] += scale[i] * src[i, :] for i < n (scale nullptr: 1). Rows that
// share an index add with atomics in no fixed order (the CPU adds them in order of i), so such
// sums may differ from run to run in the last bits.
void scatter_add_rows_cuda(float* dst, const float* src, const int* index, const float* scale,
                           long n, int cols, void* stream = nullptr);
// The MoE backward's row math, as cpu/moe.h: out[i] = <a[index[i], :], b[i, :]> for i < n,
// accumulated in double (one warp per row), and x[i, :] *= scale[i] for i < n.
void dot_rows_cuda(float* out, const float* a, const int* index, const float* b, long n, int cols,
                   void* stream = nullptr);
void scale_rows_cuda(float* x, const float* scale, long n, int cols, void* stream = nullptr);

}  // namespace paralab::kernels
