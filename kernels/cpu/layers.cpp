// CPU math of the training step (see layers.h for the formulas).
// See tests/kernels/tst_layers_gradcheck.cpp.
#include "cpu/layers.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/parallel_rows.h"

namespace paralab::kernels {

namespace {
// The float kernels below split over the rank's threads (cpu/parallel_rows.h) by whole rows, or
// by whole columns where a result sums over rows, so each entry's arithmetic and order are the
// one thread's. Less work than kMinPiece floats a piece is not worth a hand-over.
constexpr long kMinPiece = 1L << 15;
// Pieces of an array start kGrain floats apart (256 bytes), so every piece's vectors sit as the
// whole array's do; column pieces start a 16-float vector apart.
constexpr long kGrain = 64, kColumnGrain = 16;
long rowsPerPiece(long cols) { return std::max(1L, kMinPiece / std::max(1L, cols)); }
bool splits(long rows, long cols) { return rank_threads() > 1 && rows * cols >= 2 * kMinPiece; }
}  // namespace

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
  if constexpr (std::is_same_v<T, float>) {
    if (!splits(rows, classes))
      return vec().softmaxXent(dlogits, logits, labels, rows, classes, normalizer);
    // Each row's loss apart, then summed in row order as the one thread sums them.
    std::vector<double> rowLoss(size_t(rows), 0.0);
    parallel_for(rows, 1, rowsPerPiece(classes), [&](long r0, long r1) {
      for (long r = r0; r < r1; ++r)
        rowLoss[size_t(r)] = vec().softmaxXent(dlogits + r * classes, logits + r * classes,
                                               labels + r, 1, classes, normalizer);
    });
    double lossSum = 0;
    for (double l : rowLoss) lossSum += l;
    return lossSum;
  } else {
    return reference::softmax_xent(dlogits, logits, labels, rows, classes, normalizer);
  }
}

template <typename T> void bias_add(T* y, const T* b, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    parallel_for(rows, 1, rowsPerPiece(cols), [&](long r0, long r1) {
      vec().biasAdd(y + r0 * cols, b, int(r1 - r0), cols);
    });
  else
    reference::bias_add(y, b, rows, cols);
}

template <typename T> void bias_backward(T* db, const T* dy, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    parallel_for(cols, kColumnGrain, std::max(kColumnGrain, kMinPiece / std::max(1, rows)),
                 [&](long c0, long c1) { vec().biasBackward(db, dy, rows, cols, int(c0), int(c1)); });
  else
    reference::bias_backward(db, dy, rows, cols);
}

template <typename T> void gelu_forward(T* y, const T* x, long n) {
  if constexpr (std::is_same_v<T, float>)
    parallel_for(n, kGrain, kMinPiece, [&](long i0, long i1) {
      vec().geluForward(y + i0, x + i0, i1 - i0);
    });
  else
    reference::gelu_forward(y, x, n);
}

template <typename T> void gelu_backward(T* dx, const T* x, const T* dy, long n) {
  if constexpr (std::is_same_v<T, float>)
    parallel_for(n, kGrain, kMinPiece, [&](long i0, long i1) {
      vec().geluBackward(dx + i0, x + i0, dy + i0, i1 - i0);
    });
  else
    reference::gelu_backward(dx, x, dy, n);
}

namespace {
// One thread: the fused kernel. More: dgamma and dbeta by columns, each entry summed over rows in
// order, then dx by rows (each piece's dgamma and dbeta into a discarded buffer of its own); in
// that order because dx may be dy itself.
void layernormBackwardFloat(float* dx, float* dgamma, float* dbeta, const float* dy,
                            const float* x, const float* mean, const float* rstd,
                            const float* gamma, int rows, int cols) {
  if (!splits(rows, cols))
    return vec().layernormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
  parallel_for(cols, kColumnGrain, std::max(kColumnGrain, kMinPiece / std::max(1, rows)),
               [&](long c0, long c1) {
                 vec().layernormParamGrads(dgamma, dbeta, dy, x, mean, rstd, rows, cols, int(c0),
                                           int(c1));
               });
  parallel_for(rows, 1, rowsPerPiece(cols), [&](long r0, long r1) {
    std::vector<float> discard(2 * size_t(cols), 0.f);
    vec().layernormBackward(dx + r0 * cols, discard.data(), discard.data() + cols, dy + r0 * cols,
                            x + r0 * cols, mean + r0, rstd + r0, gamma, int(r1 - r0), cols);
  });
}
}  // namespace

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                       int rows, int cols, T eps) {
  if constexpr (std::is_same_v<T, float>)
    parallel_for(rows, 1, rowsPerPiece(cols), [&](long r0, long r1) {
      vec().layernormForward(y + r0 * cols, mean + r0, rstd + r0, x + r0 * cols, gamma, beta,
                             int(r1 - r0), cols, eps);
    });
  else
    reference::layernorm_forward(y, mean, rstd, x, gamma, beta, rows, cols, eps);
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* gamma, int rows, int cols) {
  if constexpr (std::is_same_v<T, float>)
    layernormBackwardFloat(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
  else
    reference::layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
}

void bias_gelu_forward(float* h, float* g, const float* b, int rows, int cols) {
  parallel_for(rows, 1, rowsPerPiece(cols), [&](long r0, long r1) {
    vec().biasGeluForward(h + r0 * cols, g + r0 * cols, b, int(r1 - r0), cols);
  });
}

void gelu_backward_bias(float* dx, float* db, const float* x, const float* dy, int rows,
                        int cols) {
  if (!splits(rows, cols)) return vec().geluBackwardBias(dx, db, x, dy, rows, cols);
  // More threads: the bias gradient sums over rows, so it is split by columns after the rows.
  gelu_backward(dx, x, dy, long(rows) * cols);
  bias_backward(db, dx, rows, cols);
}

void residual_add(float* y, const float* x, long n) {
  parallel_for(n, kGrain, kMinPiece, [&](long i0, long i1) {
    vec().addArrays(y + i0, y + i0, x + i0, i1 - i0);
  });
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
