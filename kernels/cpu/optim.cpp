// Optimizer update loops (see optim.h). See tests/engine/tst_optimizer.cpp.
#include "cpu/optim.h"
#include "cpu/simd.h"

#include <cmath>

namespace paralab::kernels {

PARALAB_SIMD_CLONES void sgd_update(float* p, const float* g, long n, float lr) {
  for (long i = 0; i < n; ++i) p[i] -= lr * g[i];
}

PARALAB_SIMD_CLONES void momentum_update(float* p, float* v, const float* g, long n, float lr, float mu) {
  for (long i = 0; i < n; ++i) {
    v[i] = mu * v[i] + g[i];
    p[i] -= lr * v[i];
  }
}

PARALAB_SIMD_CLONES void adam_update(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                 float beta2, float eps, long t) {
  const float c1 = 1.0f - std::pow(beta1, float(t));
  const float c2 = 1.0f - std::pow(beta2, float(t));
  for (long i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    const float mhat = m[i] / c1, vhat = v[i] / c2;
    p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
  }
}

}  // namespace paralab::kernels
