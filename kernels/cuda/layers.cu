// The training step's non-GEMM math on the GPU (see layers.h): elementwise kernels with
// grid-stride loops, one warp per row for LayerNorm, softmax and the MoE's row dots, column
// sums in fixed order.
// See tests/kernels/tst_cuda_kernels.cpp (each against kernels/cpu on the same inputs).
#include <cmath>

#include "cuda/check.h"
#include "cuda/layers.h"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kFull = 0xffffffffu;  // all 32 lanes take part in a shuffle

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

// Enough blocks to cover n once, at most 65536: the loops stride by the whole grid beyond that.
unsigned blocksFor(long n) {
  const long b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

#define PARALAB_GRID_STRIDE(i, n)                                                    \
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < (n); \
       i += long(gridDim.x) * blockDim.x)

// Butterfly reductions: after 5 steps every lane holds the warp's total.
__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// [SECTION] Bias, GELU, residual
__global__ void bias_add_kernel(float* y, const float* b, int rows, int cols) {
  PARALAB_GRID_STRIDE(i, long(rows) * cols) y[i] += b[i % cols];
}

// sum over rows of dy (and of dy * xhat for LayerNorm) per column. Block = 32 columns x 8
// threads down the rows; the 8 partial sums are added in a fixed order (repeatable bits).
template <bool kLayerNorm>
__global__ void column_sums_kernel(float* sumDy, float* sumDyXhat, const float* dy,
                                   const float* x, const float* mean, const float* rstd,
                                   int rows, int cols) {
  __shared__ float part[2][8][32];
  const int tx = threadIdx.x, ty = threadIdx.y, c = blockIdx.x * 32 + tx;
  float a = 0.f, b = 0.f;
  if (c < cols)
    for (int r = ty; r < rows; r += 8) {
      const float d = dy[long(r) * cols + c];
      a += d;
      if (kLayerNorm) b += d * (x[long(r) * cols + c] - mean[r]) * rstd[r];
    }
  part[0][ty][tx] = a;
  part[1][ty][tx] = b;
  __syncthreads();
  if (ty == 0 && c < cols) {
    for (int k = 1; k < 8; ++k) {
      a += part[0][k][tx];
      b += part[1][k][tx];
    }
    sumDy[c] += a;
    if (kLayerNorm) sumDyXhat[c] += b;
  }
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)

__global__ void gelu_forward_kernel(float* y, const float* x, long n) {
  PARALAB_GRID_STRIDE(i, n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.f + tanhf(kGeluC * (v + 0.044715f * v * v * v)));
  }
}

// d/dv [0.5 v (1 + tanh u)] = 0.5 (1 + t) + 0.5 v (1 - t^2) du/dv
__global__ void gelu_backward_kernel(float* dx, const float* x, const float* dy, long n) {
  PARALAB_GRID_STRIDE(i, n) {
    const float v = x[i];
    const float t = tanhf(kGeluC * (v + 0.044715f * v * v * v));
    const float du = kGeluC * (1.f + 3.f * 0.044715f * v * v);
    dx[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du);
  }
}

__global__ void residual_add_kernel(float* y, const float* x, long n) {
  PARALAB_GRID_STRIDE(i, n) y[i] += x[i];
}

// [SECTION] LayerNorm: one warp per row (row is the same for the whole warp, so an early return
// leaves no lane behind a shuffle). Two passes for the variance, as the CPU code.
__global__ void layernorm_forward_kernel(float* y, float* mean, float* rstd, const float* x,
                                         const float* gamma, const float* beta, int rows,
                                         int cols, float eps) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + long(row) * cols;
  float* yr = y + long(row) * cols;
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += xr[c];
  const float m = warpSum(s) / cols;
  float v = 0.f;
  for (int c = lane; c < cols; c += 32) v += (xr[c] - m) * (xr[c] - m);
  const float rs = 1.f / sqrtf(warpSum(v) / cols + eps);
  for (int c = lane; c < cols; c += 32) yr[c] = (xr[c] - m) * rs * gamma[c] + beta[c];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy * gamma. Each lane reads dy[c] before it
// writes dx[c] for the same c only, so dx may be dy.
__global__ void layernorm_backward_dx_kernel(float* dx, const float* dy, const float* x,
                                             const float* mean, const float* rstd,
                                             const float* gamma, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + long(row) * cols;
  const float* dyr = dy + long(row) * cols;
  float* dxr = dx + long(row) * cols;
  const float m = mean[row], rs = rstd[row];
  float gs = 0.f, gx = 0.f;
  for (int c = lane; c < cols; c += 32) {
    const float g = dyr[c] * gamma[c];
    gs += g;
    gx += g * (xr[c] - m) * rs;
  }
  gs = warpSum(gs) / cols;
  gx = warpSum(gx) / cols;
  for (int c = lane; c < cols; c += 32)
    dxr[c] = rs * (dyr[c] * gamma[c] - gs - (xr[c] - m) * rs * gx);
}

// [SECTION] Softmax cross-entropy: one block of 32 warps, warp w takes rows w, w + 32, ...;
// lane 0 of each warp sums its rows' losses in order, thread 0 sums the warps in order.
constexpr int kXentThreads = 1024;

__global__ void __launch_bounds__(kXentThreads)
    softmax_xent_kernel(float* dlogits, double* lossSum, int* correct, const float* logits,
                        const int* labels, int rows, int classes, double normalizer) {
  __shared__ double warpLoss[kXentThreads / 32];
  __shared__ int warpHits[kXentThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  double loss = 0.0;
  int hits = 0;
  for (int r = warp; r < rows; r += warps) {
    const float* z = logits + long(r) * classes;
    float* dz = dlogits + long(r) * classes;
    // Max and its first index (std::max_element's tie rule): each lane scans its columns in
    // increasing order, then pairs combine to the larger value or, if equal, the lower index.
    float best = -INFINITY;
    int arg = classes;
    for (int c = lane; c < classes; c += 32)
      if (z[c] > best) best = z[c], arg = c;
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(kFull, best, o);
      const int oa = __shfl_xor_sync(kFull, arg, o);
      if (ob > best || (ob == best && oa < arg)) best = ob, arg = oa;
    }
    float s = 0.f;  // subtract the max: no overflow in exp
    for (int c = lane; c < classes; c += 32) s += expf(z[c] - best);
    const float logSum = logf(warpSum(s));
    const int label = labels[r];
    for (int c = lane; c < classes; c += 32)
      dz[c] = (expf(z[c] - best - logSum) - (c == label ? 1.f : 0.f)) / float(normalizer);
    if (lane == 0) {
      const bool valid = label >= 0 && label < classes;
      loss += valid ? double(logSum) - double(z[label] - best) : double(NAN);
      hits += valid && arg == label;
    }
  }
  if (lane == 0) {
    warpLoss[warp] = loss;
    warpHits[warp] = hits;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double l = 0.0;
    int h = 0;
    for (int w = 0; w < warps; ++w) l += warpLoss[w], h += warpHits[w];
    *lossSum = l;
    *correct = h;
  }
}

// [SECTION] Optimizers (cpu/optim.h) and the MoE row gather/scatter
__global__ void sgd_kernel(float* p, const float* g, long n, float lr) {
  PARALAB_GRID_STRIDE(i, n) p[i] -= lr * g[i];
}

__global__ void momentum_kernel(float* p, float* v, const float* g, long n, float lr, float mu) {
  PARALAB_GRID_STRIDE(i, n) {
    v[i] = mu * v[i] + g[i];
    p[i] -= lr * v[i];
  }
}

// c1, c2: Adam's bias corrections 1 - beta^t, computed once on the host as the CPU does.
__global__ void adam_kernel(float* p, float* m, float* v, const float* g, long n, float lr,
                            float b1, float b2, float eps, float c1, float c2) {
  PARALAB_GRID_STRIDE(i, n) {
    m[i] = b1 * m[i] + (1.f - b1) * g[i];
    v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
    p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
  }
}

__global__ void gather_rows_kernel(float* dst, const float* src, const int* index, long n,
                                   int cols) {
  PARALAB_GRID_STRIDE(e, n * cols) dst[e] = src[long(index[e / cols]) * cols + e % cols];
}

__global__ void scatter_add_rows_kernel(float* dst, const float* src, const int* index,
                                        const float* scale, long n, int cols) {
  PARALAB_GRID_STRIDE(e, n * cols) {
    const long i = e / cols;
    atomicAdd(&dst[long(index[i]) * cols + e % cols], (scale ? scale[i] : 1.f) * src[e]);
  }
}

// One warp per row: lanes stride over the columns, each summing in double, then a butterfly of
// doubles (the CPU sums the same products in column order, also in double).
__global__ void dot_rows_kernel(float* out, const float* a, const int* index, const float* b,
                                long n, int cols) {
  const long row = blockIdx.x * long(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;  // whole warps leave together: the shuffles below see all 32 lanes
  const float* ar = a + long(index[row]) * cols;
  const float* br = b + row * cols;
  double s = 0;
  for (int c = lane; c < cols; c += 32) s += double(ar[c]) * double(br[c]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
  if (lane == 0) out[row] = float(s);
}

__global__ void scale_rows_kernel(float* x, const float* scale, long n, int cols) {
  PARALAB_GRID_STRIDE(e, n * cols) x[e] *= scale[e / cols];
}

}  // namespace

// [SECTION] Launchers
#define PARALAB_LAUNCH(kernel, grid, block, stream, ...)                \
  do {                                                                  \
    kernel<<<(grid), (block), 0, asStream(stream)>>>(__VA_ARGS__);      \
    PARALAB_CUDA_CHECK_LAUNCH();                                        \
  } while (0)

void bias_add_cuda(float* y, const float* b, int rows, int cols, void* stream) {
  if (rows > 0 && cols > 0)
    PARALAB_LAUNCH(bias_add_kernel, blocksFor(long(rows) * cols), kThreads, stream, y, b, rows, cols);
}
void bias_backward_cuda(float* db, const float* dy, int rows, int cols, void* stream) {
  if (rows > 0 && cols > 0)
    PARALAB_LAUNCH(column_sums_kernel<false>, (cols + 31) / 32, dim3(32, 8), stream, db, nullptr,
                   dy, nullptr, nullptr, nullptr, rows, cols);
}
void gelu_forward_cuda(float* y, const float* x, long n, void* stream) {
  if (n > 0) PARALAB_LAUNCH(gelu_forward_kernel, blocksFor(n), kThreads, stream, y, x, n);
}
void gelu_backward_cuda(float* dx, const float* x, const float* dy, long n, void* stream) {
  if (n > 0) PARALAB_LAUNCH(gelu_backward_kernel, blocksFor(n), kThreads, stream, dx, x, dy, n);
}
void residual_add_cuda(float* y, const float* x, long n, void* stream) {
  if (n > 0) PARALAB_LAUNCH(residual_add_kernel, blocksFor(n), kThreads, stream, y, x, n);
}
void layernorm_forward_cuda(float* y, float* mean, float* rstd, const float* x,
                            const float* gamma, const float* beta, int rows, int cols, float eps,
                            void* stream) {
  if (rows > 0 && cols > 0)
    PARALAB_LAUNCH(layernorm_forward_kernel, (rows + 7) / 8, kThreads, stream, y, mean, rstd, x,
                   gamma, beta, rows, cols, eps);
}
void layernorm_backward_cuda(float* dx, float* dgamma, float* dbeta, const float* dy,
                             const float* x, const float* mean, const float* rstd,
                             const float* gamma, int rows, int cols, void* stream) {
  if (rows <= 0 || cols <= 0) return;
  // Parameter gradients first: they read dy, which the dx kernel may overwrite (dx == dy).
  PARALAB_LAUNCH(column_sums_kernel<true>, (cols + 31) / 32, dim3(32, 8), stream, dbeta, dgamma,
                 dy, x, mean, rstd, rows, cols);
  PARALAB_LAUNCH(layernorm_backward_dx_kernel, (rows + 7) / 8, kThreads, stream, dx, dy, x, mean,
                 rstd, gamma, rows, cols);
}
void softmax_xent_cuda(float* dlogits, double* lossSum, int* correct, const float* logits,
                       const int* labels, int rows, int classes, double normalizer,
                       void* stream) {
  PARALAB_LAUNCH(softmax_xent_kernel, 1, kXentThreads, stream, dlogits, lossSum, correct, logits,
                 labels, rows < 0 ? 0 : rows, classes, normalizer);
}
void sgd_update_cuda(float* p, const float* g, long n, float lr, void* stream) {
  if (n > 0) PARALAB_LAUNCH(sgd_kernel, blocksFor(n), kThreads, stream, p, g, n, lr);
}
void momentum_update_cuda(float* p, float* v, const float* g, long n, float lr, float mu,
                          void* stream) {
  if (n > 0) PARALAB_LAUNCH(momentum_kernel, blocksFor(n), kThreads, stream, p, v, g, n, lr, mu);
}
void adam_update_cuda(float* p, float* m, float* v, const float* g, long n, float lr,
                      float beta1, float beta2, float eps, long t, void* stream) {
  const float c1 = 1.0f - std::pow(beta1, float(t)), c2 = 1.0f - std::pow(beta2, float(t));
  if (n > 0)
    PARALAB_LAUNCH(adam_kernel, blocksFor(n), kThreads, stream, p, m, v, g, n, lr, beta1, beta2,
                   eps, c1, c2);
}
void gather_rows_cuda(float* dst, const float* src, const int* index, long n, int cols,
                      void* stream) {
  if (n > 0 && cols > 0)
    PARALAB_LAUNCH(gather_rows_kernel, blocksFor(n * cols), kThreads, stream, dst, src, index, n,
                   cols);
}
void scatter_add_rows_cuda(float* dst, const float* src, const int* index, const float* scale,
                           long n, int cols, void* stream) {
  if (n > 0 && cols > 0)
    PARALAB_LAUNCH(scatter_add_rows_kernel, blocksFor(n * cols), kThreads, stream, dst, src,
                   index, scale, n, cols);
}
void dot_rows_cuda(float* out, const float* a, const int* index, const float* b, long n, int cols,
                   void* stream) {
  if (n <= 0) return;
  constexpr long kRowsPerBlock = kThreads / 32;
  const long blocks = (n + kRowsPerBlock - 1) / kRowsPerBlock;
  PARALAB_LAUNCH(dot_rows_kernel, unsigned(blocks), kThreads, stream, out, a, index, b, n, cols);
}
void scale_rows_cuda(float* x, const float* scale, long n, int cols, void* stream) {
  if (n > 0 && cols > 0)
    PARALAB_LAUNCH(scale_rows_kernel, blocksFor(n * cols), kThreads, stream, x, scale, n, cols);
}

}  // namespace paralab::kernels
