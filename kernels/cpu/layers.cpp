// CPU math of the training step (see layers.h for the formulas).
// See tests/kernels/tst_layers_gradcheck.cpp.
#include "cpu/layers.h"
#include "cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace paralab::kernels {

template <typename T> void bias_add(T* y, const T* b, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[(long)r * cols + c] += b[c];
}

template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) db[c] += dy[(long)r * cols + c];
}

// sqrt(2/pi)
constexpr double kGeluC = 0.7978845608028654;

// [SECTION] Fast fp32 GELU. libm's tanhf is a scalar call per element, and GELU over the
// [B, 4H] activations was most of the step's non-GEMM time; this version vectorises.
// exp(x): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), e^r by its Taylor series
// to r^7 (relative error < 2e-8 there), 2^n written into the exponent bits.
// tanh(u) = 1 - 2 / (1 + e^(2u)): absolute error ~1e-7, which is what GELU's (1 + tanh) needs.
// Compiled for AVX-512, AVX2 and baseline x86-64; the CPU's best is picked at load time.
namespace {

inline float expApprox(float x) {
  // Keep 2^n a normal float. Written as min/max selects so the loop stays branch-free.
  x = x < 88.f ? x : 88.f;
  x = x > -87.f ? x : -87.f;
  const float n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  const float r = (x - n * 0.693145751953125f) - n * 1.428606820309417e-06f;
  const float p =
      1.f + r * (1.f + r * (1.f / 2 + r * (1.f / 6 + r * (1.f / 24 + r * (1.f / 120 + r * (1.f / 720 + r * (1.f / 5040)))))));
  const int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float tanhApprox(float u) { return 1.f - 2.f / (1.f + expApprox(2.f * u)); }

PARALAB_SIMD_CLONES void geluForwardF32(float* y, const float* x, long n) {
  for (long i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = float(kGeluC) * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.f + tanhApprox(u));
  }
}

PARALAB_SIMD_CLONES void geluBackwardF32(float* dx, const float* x, const float* dy, long n) {
  for (long i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = tanhApprox(float(kGeluC) * (v + 0.044715f * v * v * v));
    const float du = float(kGeluC) * (1.f + 3 * 0.044715f * v * v);
    dx[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du);
  }
}

}  // namespace

template <> void gelu_forward<float>(float* y, const float* x, long n) { geluForwardF32(y, x, n); }
template <> void gelu_backward<float>(float* dx, const float* x, const float* dy, long n) {
  geluBackwardF32(dx, x, dy, n);
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

template <typename T> int count_correct(const T* logits, const int* labels, int rows, int classes) {
  int correct = 0;
  for (int r = 0; r < rows; ++r) {
    const T* z = logits + (long)r * classes;
    correct += int(std::max_element(z, z + classes) - z) == labels[r];
  }
  return correct;
}

#define PARALAB_INSTANTIATE(T)                                                              \
  template void bias_add<T>(T*, const T*, int, int);                                        \
  template void bias_backward<T>(T*, const T*, int, int);                                   \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, T); \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,   \
                                      const T*, int, int);                                  \
  template double softmax_xent<T>(T*, const T*, const int*, int, int, double);              \
  template int count_correct<T>(const T*, const int*, int, int);
PARALAB_INSTANTIATE(float)
PARALAB_INSTANTIATE(double)
template void gelu_forward<double>(double*, const double*, long);
template void gelu_backward<double>(double*, const double*, const double*, long);
#undef PARALAB_INSTANTIATE

}  // namespace paralab::kernels
