// Optimizer updates on flat float arrays (one call per parameter range / shard), at the
// dispatched vector level (cpu/dispatch.h).
// See tests/engine/tst_optimizer.cpp.
#pragma once

namespace paralab::kernels {

// p -= lr * g
void sgd_update(float* p, const float* g, long n, float lr);
// Heavy-ball momentum as PyTorch defines it: v = mu * v + g; p -= lr * v
void momentum_update(float* p, float* v, const float* g, long n, float lr, float mu);
// Adam (Kingma & Ba 2015) with bias correction; t is the 1-based step count.
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr * mhat / (sqrt(vhat) + eps)
void adam_update(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                 float beta2, float eps, long t);

// The scalar loops the dispatched versions above are tested against.
namespace reference {
void sgd_update(float* p, const float* g, long n, float lr);
void momentum_update(float* p, float* v, const float* g, long n, float lr, float mu);
void adam_update(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                 float beta2, float eps, long t);
}  // namespace reference

}  // namespace paralab::kernels
