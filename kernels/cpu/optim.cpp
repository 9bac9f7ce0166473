// Optimizer update loops (see optim.h), run at the dispatched vector level (cpu/dispatch.h); the
// scalar loops in `reference` are what every level is tested against.
// See tests/engine/tst_optimizer.cpp and tests/kernels/tst_simd_levels.cpp.
#include "cpu/optim.h"

#include <cmath>

#include "cpu/dispatch.h"
#include "cpu/parallel_rows.h"

namespace paralab::kernels {

void sgd_update(float* p, const float* g, long n, float lr) { vec().sgdUpdate(p, g, n, lr); }

void momentum_update(float* p, float* v, const float* g, long n, float lr, float mu) {
  vec().momentumUpdate(p, v, g, n, lr, mu);
}

void adam_update(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                 float beta2, float eps, long t) {
  const float c1 = 1.0f - std::pow(beta1, float(t));
  const float c2 = 1.0f - std::pow(beta2, float(t));
  // Split over the rank's threads (cpu/parallel_rows.h): pieces 64 floats apart, every entry
  // its own arithmetic, so the bits are the one thread's.
  parallel_for(n, 64, 1L << 15, [&](long i0, long i1) {
    vec().adamUpdate(p + i0, m + i0, v + i0, g + i0, i1 - i0, lr, beta1, beta2, eps, c1, c2);
  });
}

namespace reference {

void sgd_update(float* p, const float* g, long n, float lr) {
  for (long i = 0; i < n; ++i) p[i] -= lr * g[i];
}

void momentum_update(float* p, float* v, const float* g, long n, float lr, float mu) {
  for (long i = 0; i < n; ++i) {
    v[i] = mu * v[i] + g[i];
    p[i] -= lr * v[i];
  }
}

void adam_update(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
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

}  // namespace reference

}  // namespace paralab::kernels
