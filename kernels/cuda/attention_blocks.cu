// Causal multi-head attention one K/V block at a time on the GPU (see attention_blocks.h, and
// cpu/attention_blocks.h for the shapes and the recurrence). A thread block of kRows threads
// takes sequence b = blockIdx.z, head h = blockIdx.y and rows blockIdx.x * kRows .. + kRows - 1
// of the query chunk (or, for dK/dV, of the K/V block); each thread owns one row of what it
// writes and loops over the rest in the CPU's order, reading global memory only.
// See tests/kernels/tst_cuda_kernels.cpp (attentionBlocks).
#include <cmath>

#include "cpu/attention_blocks.h"  // attention_block_pairs: what the launchers return
#include "cuda/attention_blocks.h"
#include "cuda/check.h"

namespace paralab::kernels {

namespace {

constexpr int kRows = 32;      // rows (threads) per block of the per-row kernels
constexpr int kThreads = 256;  // threads per block of the elementwise kernels

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

unsigned tilesFor(int rows) { return unsigned((rows + kRows - 1) / kRows); }
unsigned blocksFor(long n) { return unsigned((n + kThreads - 1) / kThreads); }

// As cpu/attention_blocks.cpp: query i of the chunk sees the block's keys 0 .. visible - 1 (key
// j is position k0 + j, visible while k0 + j <= q0 + i), clamped to [0, Tk].
__device__ int visibleKeys(int i, int q0, int k0, int Tk) {
  return min(max(q0 + i - k0 + 1, 0), Tk);
}

// Row (b, i) of a [B, rows, ld] array, head h; entry (b, h, i) of a [B, NH, Tq] array.
__device__ long rowAt(int b, int i, int rows, int ld, int h, int hs) {
  return (long(b) * rows + i) * ld + long(h) * hs;
}
__device__ long stateAt(int b, int h, int i, int NH, int Tq) { return (long(b) * NH + h) * Tq + i; }

// The scaled score q . k / sqrt(hs), summed in the CPU's order.
__device__ float score(const float* qi, const float* kj, int hs, float scale) {
  float dot = 0.f;
  for (int c = 0; c < hs; ++c) dot += qi[c] * kj[c];
  return dot * scale;
}

// [SECTION] Forward

// One thread per (b, h, i) state row: o's hs columns of head h, m and l.
__global__ void blocks_init_kernel(float* o, float* m, float* l, int B, int Tq, int NH, int hs) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;  // = (b NH + h) Tq + i
  if (row >= long(B) * NH * Tq) return;
  const int i = int(row % Tq), h = int(row / Tq % NH), b = int(row / Tq / NH);
  float* oi = o + (long(b) * Tq + i) * NH * hs + long(h) * hs;
  for (int c = 0; c < hs; ++c) oi[c] = 0.f;
  m[row] = -INFINITY;
  l[row] = 0.f;
}

// One thread per query row i: the online softmax step over the visible keys of the block.
// Pass 1 finds the row's max score; pass 2 scores each key again (the same dot, the same bits)
// and adds its exp-weighted value. The CPU keeps the scores of pass 1 in a scratch row instead.
__global__ void block_forward_kernel(float* o, float* m, float* l, const float* q, int ldq,
                                     const float* k, const float* v, int ldkv, int NH, int hs,
                                     int q0, int Tq, int k0, int Tk, float scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (i >= Tq) return;
  const int keys = visibleKeys(i, q0, k0, Tk);
  if (keys == 0) return;  // the whole block is after this query: nothing to fold in
  const float* qi = q + rowAt(b, i, Tq, ldq, h, hs);
  float sMax = -INFINITY;
  for (int j = 0; j < keys; ++j)
    sMax = fmaxf(sMax, score(qi, k + rowAt(b, j, Tk, ldkv, h, hs), hs, scale));
  // m = -inf before the first visible key: alpha = exp(-inf) = 0, and l = o = 0 anyway.
  const long st = stateAt(b, h, i, NH, Tq);
  const float mNew = fmaxf(m[st], sMax);
  const float alpha = expf(m[st] - mNew);
  float* oi = o + (long(b) * Tq + i) * NH * hs + long(h) * hs;
  for (int c = 0; c < hs; ++c) oi[c] *= alpha;
  float sum = 0.f;
  for (int j = 0; j < keys; ++j) {
    const long kv = rowAt(b, j, Tk, ldkv, h, hs);
    const float p = expf(score(qi, k + kv, hs, scale) - mNew);
    sum += p;
    const float* vj = v + kv;
    for (int c = 0; c < hs; ++c) oi[c] += p * vj[c];
  }
  l[st] = alpha * l[st] + sum;
  m[st] = mNew;
}

// One thread per state row: out = o / l, lse = m + log(l). Each thread reads only what it
// writes, so out == o and lse == m are safe.
__global__ void blocks_finish_kernel(float* out, float* lse, const float* o, const float* m,
                                     const float* l, int B, int Tq, int NH, int hs) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row >= long(B) * NH * Tq) return;
  const int i = int(row % Tq), h = int(row / Tq % NH), b = int(row / Tq / NH);
  const long at = (long(b) * Tq + i) * NH * hs + long(h) * hs;
  const float inv = 1.f / l[row];
  for (int c = 0; c < hs; ++c) out[at + c] = o[at + c] * inv;
  if (lse) lse[row] = m[row] + logf(l[row]);
}

// [SECTION] Backward (FlashAttention-2's, the formulas in cpu/attention_blocks.h)

// One thread per state row: D = dout . out.
__global__ void blocks_delta_kernel(float* D, const float* out, const float* dout, int B, int Tq,
                                    int NH, int hs) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row >= long(B) * NH * Tq) return;
  const int i = int(row % Tq), h = int(row / Tq % NH), b = int(row / Tq / NH);
  const long at = (long(b) * Tq + i) * NH * hs + long(h) * hs;
  float s = 0.f;
  for (int c = 0; c < hs; ++c) s += dout[at + c] * out[at + c];
  D[row] = s;
}

// P[i, j] = exp(S - lse_i) and dS[i, j] / sqrt(hs) = P (dO_i . v_j - D_i) / sqrt(hs), recomputed
// from the row's saved lse and D: what both backward kernels need for one (query, key) pair.
struct PairGrad {
  float p, ds;
};
__device__ PairGrad pairGrad(const float* qi, const float* dO, float lseI, float dI,
                             const float* kj, const float* vj, int hs, float scale) {
  float dot = 0.f, dp = 0.f;
  for (int c = 0; c < hs; ++c) {
    dot += qi[c] * kj[c];
    dp += dO[c] * vj[c];
  }
  const float p = expf(dot * scale - lseI);
  return {p, p * (dp - dI) * scale};
}

// One thread per query row i: dq_i += sum over its visible keys j of dS k_j (keys in order).
__global__ void block_dq_kernel(float* dq, const float* dout, const float* lse, const float* D,
                                const float* q, int ldq, const float* k, const float* v, int ldkv,
                                int NH, int hs, int q0, int Tq, int k0, int Tk, float scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (i >= Tq) return;
  const int keys = visibleKeys(i, q0, k0, Tk);
  const long st = stateAt(b, h, i, NH, Tq);
  const float* qi = q + rowAt(b, i, Tq, ldq, h, hs);
  const float* dO = dout + (long(b) * Tq + i) * NH * hs + long(h) * hs;
  float* dqi = dq + rowAt(b, i, Tq, ldq, h, hs);
  for (int j = 0; j < keys; ++j) {
    const long kv = rowAt(b, j, Tk, ldkv, h, hs);
    const PairGrad g = pairGrad(qi, dO, lse[st], D[st], k + kv, v + kv, hs, scale);
    for (int c = 0; c < hs; ++c) dqi[c] += g.ds * k[kv + c];
  }
}

// One thread per key row j: dk_j += sum of dS q_i and dv_j += sum of P dO_i over the queries i
// that see it (i >= k0 + j - q0), in increasing i as the CPU adds them.
__global__ void block_dkdv_kernel(float* dk, float* dv, const float* dout, const float* lse,
                                  const float* D, const float* q, int ldq, const float* k,
                                  const float* v, int ldkv, int NH, int hs, int q0, int Tq, int k0,
                                  int Tk, float scale) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (j >= Tk) return;
  const long kv = rowAt(b, j, Tk, ldkv, h, hs);
  float *dkj = dk + kv, *dvj = dv + kv;
  for (int i = max(k0 + j - q0, 0); i < Tq; ++i) {
    const long st = stateAt(b, h, i, NH, Tq);
    const float* qi = q + rowAt(b, i, Tq, ldq, h, hs);
    const float* dO = dout + (long(b) * Tq + i) * NH * hs + long(h) * hs;
    const PairGrad g = pairGrad(qi, dO, lse[st], D[st], k + kv, v + kv, hs, scale);
    for (int c = 0; c < hs; ++c) {
      dvj[c] += g.p * dO[c];
      dkj[c] += g.ds * qi[c];
    }
  }
}

// [SECTION] Strided rows

__global__ void rows_kernel(float* dst, int ldd, const float* src, int lds, long rows, int cols,
                            bool add) {
  const long e = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (e >= rows * cols) return;
  const long r = e / cols;
  const int c = int(e % cols);
  const float x = src[r * lds + c];
  if (add)
    dst[r * ldd + c] += x;
  else
    dst[r * ldd + c] = x;
}

}  // namespace

// [SECTION] Launchers
#define PARALAB_LAUNCH(kernel, grid, block, stream, ...)           \
  do {                                                             \
    kernel<<<(grid), (block), 0, asStream(stream)>>>(__VA_ARGS__); \
    PARALAB_CUDA_CHECK_LAUNCH();                                   \
  } while (0)

namespace {
float scaleOf(int hs) { return float(1.0 / std::sqrt(double(hs))); }  // as the CPU rounds it
}  // namespace

void attention_blocks_init_cuda(float* o, float* m, float* l, int B, int Tq, int NH, int hs,
                                void* stream) {
  const long rows = long(B) * NH * Tq;
  if (rows > 0)
    PARALAB_LAUNCH(blocks_init_kernel, blocksFor(rows), kThreads, stream, o, m, l, B, Tq, NH, hs);
}

long attention_block_forward_cuda(float* o, float* m, float* l, const float* q, int ldq,
                                  const float* k, const float* v, int ldkv, int B, int NH, int hs,
                                  int q0, int Tq, int k0, int Tk, void* stream) {
  const bool empty = B <= 0 || NH <= 0 || Tq <= 0 || Tk <= 0;
  const long pairs = empty ? 0 : attention_block_pairs(q0, Tq, k0, Tk);
  if (pairs == 0) return 0;  // a future block (or an empty one): nothing to launch
  const dim3 grid(tilesFor(Tq), unsigned(NH), unsigned(B));
  PARALAB_LAUNCH(block_forward_kernel, grid, kRows, stream, o, m, l, q, ldq, k, v, ldkv, NH, hs,
                 q0, Tq, k0, Tk, scaleOf(hs));
  return pairs;
}

void attention_blocks_finish_cuda(float* out, float* lse, const float* o, const float* m,
                                  const float* l, int B, int Tq, int NH, int hs, void* stream) {
  const long rows = long(B) * NH * Tq;
  if (rows > 0)
    PARALAB_LAUNCH(blocks_finish_kernel, blocksFor(rows), kThreads, stream, out, lse, o, m, l, B,
                   Tq, NH, hs);
}

void attention_blocks_delta_cuda(float* D, const float* out, const float* dout, int B, int Tq,
                                 int NH, int hs, void* stream) {
  const long rows = long(B) * NH * Tq;
  if (rows > 0)
    PARALAB_LAUNCH(blocks_delta_kernel, blocksFor(rows), kThreads, stream, D, out, dout, B, Tq, NH,
                   hs);
}

long attention_block_backward_cuda(float* dq, float* dk, float* dv, const float* dout,
                                   const float* lse, const float* D, const float* q, int ldq,
                                   const float* k, const float* v, int ldkv, int B, int NH,
                                   int hs, int q0, int Tq, int k0, int Tk, void* stream) {
  const bool empty = B <= 0 || NH <= 0 || Tq <= 0 || Tk <= 0;
  const long pairs = empty ? 0 : attention_block_pairs(q0, Tq, k0, Tk);
  if (pairs == 0) return 0;
  const float scale = scaleOf(hs);
  // dq and dk/dv write disjoint rows and only read the inputs: the order of the two launches
  // does not matter, and neither waits for the other's results.
  PARALAB_LAUNCH(block_dq_kernel, dim3(tilesFor(Tq), unsigned(NH), unsigned(B)), kRows, stream,
                 dq, dout, lse, D, q, ldq, k, v, ldkv, NH, hs, q0, Tq, k0, Tk, scale);
  PARALAB_LAUNCH(block_dkdv_kernel, dim3(tilesFor(Tk), unsigned(NH), unsigned(B)), kRows, stream,
                 dk, dv, dout, lse, D, q, ldq, k, v, ldkv, NH, hs, q0, Tq, k0, Tk, scale);
  return pairs;
}

void rows_copy_cuda(float* dst, int ldd, const float* src, int lds, long rows, int cols,
                    void* stream) {
  if (rows > 0 && cols > 0)
    PARALAB_LAUNCH(rows_kernel, blocksFor(rows * cols), kThreads, stream, dst, ldd, src, lds, rows,
                   cols, false);
}

void rows_add_cuda(float* dst, int ldd, const float* src, int lds, long rows, int cols,
                   void* stream) {
  if (rows > 0 && cols > 0)
    PARALAB_LAUNCH(rows_kernel, blocksFor(rows * cols), kThreads, stream, dst, ldd, src, lds, rows,
                   cols, true);
}

}  // namespace paralab::kernels
