// CPU math of the training step (see layers.h for the formulas).
// See tests/kernels/tst_layers_gradcheck.cpp.
#include "cpu/layers.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/dispatch.h"

namespace paralab::kernels {

// sqrt(2/pi)
constexpr double kGeluC = 0.7978845608028654;

namespace reference {

template <typename T> void bias_add(T* y, const T* b, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[(long)r * cols + c] += b[c];
}

template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) db[c] += dy[(long)r * cols + c];
}

template <typename T> void gelu_forward(T* y, const T* x, long n) {
  for (long i = 0; i < n; ++i) {
    const T v = x[i];
    const T u = T(kGeluC) * (v + T(0.044715) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + std::tanh(u));
  }
}

template <typename T> void gelu_backward(T* dx, const T* x, const T* dy, long n) {
  for (long i = 0; i < n; ++i) {
    const T v = x[i];
    const T u = T(kGeluC) * (v + T(0.044715) * v * v * v);
    const T t = std::tanh(u);
    const T du = T(kGeluC) * (T(1) + T(3 * 0.044715) * v * v);
    // d/dv [0.5 v (1 + tanh u)] = 0.5 (1 + t) + 0.5 v (1 - t^2) du
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
}

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols, T eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + (long)r * cols;
    T* yr = y + (long)r * cols;
    T m = 0;
    for (int c = 0; c < cols; ++c) m += xr[c];
    m /= cols;
    T v = 0;
    for (int c = 0; c < cols; ++c) v += (xr[c] - m) * (xr[c] - m);
    v /= cols;
    const T s = T(1) / std::sqrt(v + eps);
    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - m) * s * gamma[c] + beta[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + (long)r * cols;
    const T* dyr = dy + (long)r * cols;
    T* dxr = dx + (long)r * cols;
    // With xhat = (x - mean) * rstd and g = dy * gamma:
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
    T gMean = 0, gxMean = 0;
    for (int c = 0; c < cols; ++c) {
      const T xhat = (xr[c] - mean[r]) * rstd[r];
      const T g = dyr[c] * gamma[c];
      gMean += g;
      gxMean += g * xhat;
      dgamma[c] += dyr[c] * xhat;
      dbeta[c] += dyr[c];
    }
    gMean /= cols;
    gxMean /= cols;
    for (int c = 0; c < cols; ++c) {
      const T xhat = (xr[c] - mean[r]) * rstd[r];
      dxr[c] = rstd[r] * (dyr[c] * gamma[c] - gMean - xhat * gxMean);
    }
  }
}

template <typename T>
double softmax_xent(T* dlogits, const T* logits, const int* labels, int rows, int classes,
                    double normalizer) {
  double lossSum = 0;
  for (int r = 0; r < rows; ++r) {
    const T* z = logits + (long)r * classes;
    T* dz = dlogits + (long)r * classes;
    const T zmax = *std::max_element(z, z + classes);  // subtract the max: no overflow in exp
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(double(z[c] - zmax));
    const double logSum = std::log(sum);
    lossSum += logSum - double(z[labels[r]] - zmax);
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(double(z[c] - zmax) - logSum);
      dz[c] = T((p - (c == labels[r] ? 1.0 : 0.0)) / normalizer);
    }
  }
  return lossSum;
}

}  // namespace reference

template <typename T>
double softmax_xent(T* dlogits, const T* logits, const int* labels, int rows, int classes,
                    double normalizer) {
  if constexpr (std::is_same_v<T, float>)
    return vec().softmaxXent(dlogits, logits, labels, rows, classes, normalizer);
  else
    return reference::softmax_xent(dlogits, logits, labels, rows, classes, normalizer);
}

template <typename T> void bias_add(T* y, const T* b, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    vec().biasAdd(y, b, rows, cols);
  else
    reference::bias_add(y, b, rows, cols);
}

template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    vec().biasBackward(db, dy, rows, cols);
  else
    reference::bias_backward(db, dy, rows, cols);
}

template <typename T> void gelu_forward(T* y, const T* x, long n) {
  if constexpr (std::is_same_v<T, float>)
    vec().geluForward(y, x, n);
  else
    reference::gelu_forward(y, x, n);
}

template <typename T> void gelu_backward(T* dx, const T* x, const T* dy, long n) {
  if constexpr (std::is_same_v<T, float>)
    vec().geluBackward(dx, x, dy, n);
  else
    reference::gelu_backward(dx, x, dy, n);
}

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols, T eps) {
  if constexpr (std::is_same_v<T, float>)
    vec().layernormForward(y, mean, rstd, x, gamma, beta, rows, cols, eps);
  else
    reference::layernorm_forward(y, mean, rstd, x, gamma, beta, rows, cols, eps);
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    vec().layernormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
  else
    reference::layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
}

template <typename T> int count_correct(const T* logits, const int* labels, int rows, int classes) {
  int correct = 0;
  for (int r = 0; r < rows; ++r) {
    const T* z = logits + (long)r * classes;
    correct += int(std::max_element(z, z + classes) - z) == labels[r];
  }
  return correct;
}

#define PARALAB_INSTANTIATE(T)                                                              \
  template int count_correct<T>(const T*, const int*, int, int);
#define PARALAB_INSTANTIATE_DISPATCHED(T)                                                   \
  template double softmax_xent<T>(T*, const T*, const int*, int, int, double);              \
  template void bias_add<T>(T*, const T*, int, int);                                        \
  template void bias_backward<T>(T*, const T*, int, int);                                   \
  template void gelu_forward<T>(T*, const T*, long);                                        \
  template void gelu_backward<T>(T*, const T*, const T*, long);                             \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, T); \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,   \
                                      const T*, int, int);
PARALAB_INSTANTIATE(float)
PARALAB_INSTANTIATE(double)
PARALAB_INSTANTIATE_DISPATCHED(float)
PARALAB_INSTANTIATE_DISPATCHED(double)
namespace reference {
PARALAB_INSTANTIATE_DISPATCHED(float)
PARALAB_INSTANTIATE_DISPATCHED(double)
}  // namespace reference
#undef PARALAB_INSTANTIATE_DISPATCHED
#undef PARALAB_INSTANTIATE

}  // namespace paralab::kernels
