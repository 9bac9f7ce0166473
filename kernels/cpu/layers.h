// The elementwise and row-wise math of one training step on the CPU: bias, GELU, LayerNorm,
// softmax cross-entropy. Stateless, float and double (the gradient checks run in double).
// All arrays are row-major [rows, cols]. See tests/kernels/tst_layers_gradcheck.cpp.
#pragma once

namespace paralab::kernels {

// y[r, c] += b[c]
template <typename T> void bias_add(T* y, const T* b, int rows, int cols);
// db[c] += sum_r dy[r, c]
template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols);

// GELU, tanh approximation (Hendrycks & Gimpel 2016), as GPT-2 and llm.c use it:
// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <typename T> void gelu_forward(T* y, const T* x, long n);
// dx = dy * gelu'(x)
template <typename T> void gelu_backward(T* dx, const T* x, const T* dy, long n);

// LayerNorm over each row (Ba et al. 2016): y = (x - mean) * rstd * gamma + beta,
// rstd = 1 / sqrt(var + eps). Saves mean and rstd per row for the backward pass.
template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols, T eps = T(1e-5));
// Accumulates dgamma and dbeta (+=); writes dx (=).
template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int rows, int cols);

// The float bias, GELU, LayerNorm and softmax cross-entropy run at the dispatched vector level
// (cpu/dispatch.h; GELU with the kernels' own exp), split over the rank's threads
// (cpu/parallel_rows.h); these scalar loops (std::tanh) are what every level is tested against
// (tests/kernels/tst_simd_levels.cpp), and what the double versions run.
namespace reference {
template <typename T> void bias_add(T* y, const T* b, int rows, int cols);
template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols);
template <typename T> void gelu_forward(T* y, const T* x, long n);
template <typename T> void gelu_backward(T* dx, const T* x, const T* dy, long n);
template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols, T eps = T(1e-5));
template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int rows, int cols);
template <typename T>
double softmax_xent(T* dlogits, const T* logits, const int* labels, int rows, int classes,
                    double normalizer);
}  // namespace reference

// Softmax cross-entropy: returns the SUM over rows of -log softmax(logits)[label]; writes
// dlogits = (softmax - onehot(label)) / normalizer. Passing the global batch as normalizer
// makes shard gradients add up to the full batch's mean gradient (the data-parallel sum).
template <typename T>
double softmax_xent(T* dlogits, const T* logits, const int* labels, int rows, int classes,
                    double normalizer);
// fc1's bias and GELU in one pass over the rows: h += b, then g = gelu(h) (float; the same
// bits as bias_add then gelu_forward).
void bias_gelu_forward(float* h, float* g, const float* b, int rows, int cols);
// GELU's backward and the bias gradient of its output: dx = dy gelu'(x), db += sum_rows(dx);
// dx may be dy (float; the same bits as gelu_backward then bias_backward).
void gelu_backward_bias(float* dx, float* db, const float* x, const float* dy, int rows,
                        int cols);

// y += x, elementwise (the residual stream's adds), at the dispatched level.
void residual_add(float* y, const float* x, long n);

// Number of rows whose arg-max equals the label.
template <typename T> int count_correct(const T* logits, const int* labels, int rows, int classes);

}  // namespace paralab::kernels
