// Causal multi-head attention and the token + position embedding on the GPU (see attention.h
// and, for the formulas, cpu/attention.h and cpu/embedding.h). The ladder's first rung: every
// thread owns a whole row (or one element) of what it writes and loops over the rest in plain
// order, reading global memory only. Nothing is shared between threads, so there are no
// barriers and no races; nothing is fast either. The next rung, for the forward only (section
// "Forward, tiled"), tiles K and V into shared memory, uses a warp per query row, and fuses the
// softmax into the P v pass, as FlashAttention does.
// See tests/kernels/tst_cuda_kernels.cpp (each against kernels/cpu on the same inputs).
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/attention.h"
#include "cuda/check.h"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

// Enough blocks for one thread per item (a grid of up to 2^31 - 1 blocks in x: no grid stride).
unsigned blocksFor(long n) { return unsigned((n + kThreads - 1) / kThreads); }

// Offsets into qkv [B*T, 3C] for token row r (= b*T + t) and head h: q, then k (+C), v (+2C).
__device__ long qOffset(long r, int C, int h, int hs) { return r * 3 * C + long(h) * hs; }
__device__ long kOffset(long r, int C, int h, int hs) { return qOffset(r, C, h, hs) + C; }
__device__ long vOffset(long r, int C, int h, int hs) { return qOffset(r, C, h, hs) + 2 * C; }

// Row t of the [T, T] probabilities of sequence b, head h (row = (b*NH + h)*T + t).
__device__ long attOffset(long row, int T) { return row * T; }

// [SECTION] Forward
// One thread per (b, h, t) row of att: the scores, their maximum, exp, sum, normalise. The row's
// T entries are written by this thread only, the future ones as 0 (what exp(-inf) gives).
__global__ void attention_probs_kernel(float* att, const float* qkv, int B, int T, int C, int NH,
                                       float scale) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row >= long(B) * NH * T) return;
  const int t = int(row % T), h = int(row / T % NH), b = int(row / T / NH), hs = C / NH;
  const float* q = qkv + qOffset(long(b) * T + t, C, h, hs);
  float* p = att + attOffset(row, T);
  float mx = -INFINITY;
  for (int t2 = 0; t2 <= t; ++t2) {
    const float* k = qkv + kOffset(long(b) * T + t2, C, h, hs);
    float s = 0.f;
    for (int i = 0; i < hs; ++i) s += q[i] * k[i];
    p[t2] = s * scale;
    mx = fmaxf(mx, p[t2]);
  }
  float sum = 0.f;  // subtracting the max keeps every exp <= 1: no overflow
  for (int t2 = 0; t2 <= t; ++t2) {
    p[t2] = expf(p[t2] - mx);
    sum += p[t2];
  }
  const float inv = 1.f / sum;  // sum >= 1 (the max's own term)
  for (int t2 = 0; t2 <= t; ++t2) p[t2] *= inv;
  for (int t2 = t + 1; t2 < T; ++t2) p[t2] = 0.f;
}

// One thread per element (b*T + t, h*hs + i) of out: O[t, i] = sum_{t2 <= t} P[t, t2] v_t2[i].
__global__ void attention_out_kernel(float* out, const float* att, const float* qkv, int B, int T,
                                     int C, int NH) {
  const long e = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (e >= long(B) * T * C) return;
  const long r = e / C;  // token row b*T + t
  const int c = int(e % C), hs = C / NH, h = c / hs, i = c % hs;
  const int t = int(r % T), b = int(r / T);
  const float* p = att + attOffset((long(b) * NH + h) * T + t, T);
  float o = 0.f;
  for (int t2 = 0; t2 <= t; ++t2) o += p[t2] * qkv[vOffset(long(b) * T + t2, C, h, hs) + i];
  out[e] = o;
}

// [SECTION] Forward, tiled: FlashAttention's online softmax (the recurrence is in attention.h)
// A block of kTileWarps warps takes sequence b = blockIdx.z, head h = blockIdx.y and the query
// rows q0 .. q0 + 31 (q0 = 32 blockIdx.x); warp w handles the rows q0 + w, q0 + w + 8, ...
// Within a row the lanes split the work two ways: by key for the scores (lane j scores key
// kv0 + j: a key tile is one warp wide), by column for the output (lane owns acc's columns
// lane, lane + 32). Row max and row sum are butterfly shuffles; p_j reaches every lane by a
// shuffle from lane j. The block reads each K and V element of the causal part once from global
// memory, not once per query row as the naive kernels do.
constexpr int kTile = 32;                           // query rows per block, keys per K/V tile
constexpr int kMaxHs = kAttentionTiledMaxHeadSize;  // 64: the shared tiles' width
constexpr int kTileWarps = 8;                       // 256 threads per block
constexpr int kRowsPerWarp = kTile / kTileWarps;    // 4 query rows per warp
constexpr int kColsPerLane = kMaxHs / 32;           // acc: 2 columns per lane per row
constexpr unsigned kFull = 0xffffffffu;             // all 32 lanes take part in a shuffle

// Butterfly reductions: after 5 steps every lane holds the warp's maximum (sum).
__device__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

__global__ void __launch_bounds__(kTileWarps * 32)
    attention_tiled_kernel(float* out, float* lse, const float* qkv, int T, int C, int NH,
                           float scale) {
  // Ks has a column of padding: lane j reading Ks[j][i] hits bank (65 j + i) % 32, a different
  // one per lane. Qs[r][i] is read by the whole warp at once (a broadcast), Vs[j][i] along a row.
  __shared__ float Qs[kTile][kMaxHs];      // Qs[r][i] = q_{q0 + r}[i], loaded once
  __shared__ float Ks[kTile][kMaxHs + 1];  // Ks[j][i] = k_{kv0 + j}[i], one tile at a time
  __shared__ float Vs[kTile][kMaxHs];      // Vs[j][i] = v_{kv0 + j}[i]
  const int hs = C / NH, h = blockIdx.y, b = blockIdx.z, q0 = blockIdx.x * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long r0 = long(b) * T;  // token row of (b, t = 0) in qkv and out
  // Loads: consecutive threads read consecutive floats of a row (coalesced); rows past T as 0.
  for (int e = threadIdx.x; e < kTile * hs; e += blockDim.x) {
    const int r = e / hs, i = e % hs;
    Qs[r][i] = q0 + r < T ? qkv[qOffset(r0 + q0 + r, C, h, hs) + i] : 0.f;
  }
  // The state of the warp's rows: m and l (the same in every lane) and the lane's columns of acc.
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kColsPerLane];
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    m[k] = -INFINITY;
    l[k] = 0.f;
#pragma unroll
    for (int c = 0; c < kColsPerLane; ++c) acc[k][c] = 0.f;
  }
  // Causal: only the key tiles kv0 <= q0. Every row of the block sees key kv0 of each of them,
  // so m turns finite on the first tile; the diagonal tile kv0 = q0 is the only one masked.
  for (int kv0 = 0; kv0 <= q0; kv0 += kTile) {
    for (int e = threadIdx.x; e < kTile * hs; e += blockDim.x) {
      const int j = e / hs, i = e % hs;
      const bool in = kv0 + j < T;
      Ks[j][i] = in ? qkv[kOffset(r0 + kv0 + j, C, h, hs) + i] : 0.f;
      Vs[j][i] = in ? qkv[vOffset(r0 + kv0 + j, C, h, hs) + i] : 0.f;
    }
    __syncthreads();  // the tiles (and Qs, the first time) are complete before anyone reads them
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      const int r = warp + k * kTileWarps, t = q0 + r;
      if (t >= T) continue;  // t is the same in the whole warp: no lane is left out of a shuffle
      const int keys = min(kTile, t - kv0 + 1);  // the keys kv0 .. t of this tile are visible
      // s_j, summed in the CPU's order; -inf for a future key (exp gives it p = 0).
      float s = -INFINITY;
      if (lane < keys) {
        float dot = 0.f;
        for (int i = 0; i < hs; ++i) dot += Qs[r][i] * Ks[lane][i];
        s = dot * scale;
      }
      const float mNew = fmaxf(m[k], warpMax(s));
      const float alpha = expf(m[k] - mNew);  // exp(-inf) = 0 on the first tile, where l = acc = 0
      const float p = expf(s - mNew);
      l[k] = alpha * l[k] + warpSum(p);
#pragma unroll
      for (int c = 0; c < kColsPerLane; ++c) acc[k][c] *= alpha;
      for (int j = 0; j < keys; ++j) {
        const float pj = __shfl_sync(kFull, p, j);  // lane j's p, to every lane
#pragma unroll
        for (int c = 0; c < kColsPerLane; ++c)
          if (lane + 32 * c < hs) acc[k][c] += pj * Vs[j][lane + 32 * c];
      }
      m[k] = mNew;
    }
    __syncthreads();  // everyone is done with Ks and Vs before the next tiles overwrite them
  }
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    const int t = q0 + warp + k * kTileWarps;
    if (t >= T) continue;
    float* o = out + (r0 + t) * C + long(h) * hs;
#pragma unroll
    for (int c = 0; c < kColsPerLane; ++c)
      if (lane + 32 * c < hs) o[lane + 32 * c] = acc[k][c] / l[k];
    if (lse && lane == 0) lse[(long(b) * NH + h) * T + t] = m[k] + logf(l[k]);
  }
}

// [SECTION] Backward, per sequence and head (cpu/attention.h):
//   dP[t, t2] = dO_t . v_t2                 dS[t, t2] = P[t, t2] (dP[t, t2] - D_t)
//   D_t = sum_t2 P[t, t2] dP[t, t2]         (the softmax Jacobian's row sum)
//   dq_t = scale sum_{t2 <= t} dS[t, t2] k_t2                 (a query row's own keys)
//   dk_t2 = scale sum_{t >= t2} dS[t, t2] q_t,  dv_t2 = sum_{t >= t2} P[t, t2] dO_t
// dP and dS are recomputed where needed rather than stored ([B, NH, T, T] more memory); only
// D, one float per row, goes through scratch, since the key-row threads need D of later rows.

// dO_t . v_t2 for head h (each of the three passes below recomputes it).
__device__ float doutDotV(const float* dout, const float* qkv, long r, long r2, int C, int h,
                          int hs) {
  const float* dO = dout + r * C + long(h) * hs;
  const float* v = qkv + vOffset(r2, C, h, hs);
  float s = 0.f;
  for (int i = 0; i < hs; ++i) s += dO[i] * v[i];
  return s;
}

// One thread per (b, h, t) row: D_t into scratch[row].
__global__ void attention_rowsum_kernel(float* D, const float* dout, const float* qkv,
                                        const float* att, int B, int T, int C, int NH) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row >= long(B) * NH * T) return;
  const int t = int(row % T), h = int(row / T % NH), b = int(row / T / NH), hs = C / NH;
  const float* p = att + attOffset(row, T);
  const long r = long(b) * T + t;
  float s = 0.f;
  for (int t2 = 0; t2 <= t; ++t2) s += p[t2] * doutDotV(dout, qkv, r, long(b) * T + t2, C, h, hs);
  D[row] = s;
}

// One thread per (b, h, t) query row: dq_t (hs floats, written by this thread only).
__global__ void attention_dq_kernel(float* dqkv, const float* D, const float* dout,
                                    const float* qkv, const float* att, int B, int T, int C, int NH,
                                    float scale) {
  const long row = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row >= long(B) * NH * T) return;
  const int t = int(row % T), h = int(row / T % NH), b = int(row / T / NH), hs = C / NH;
  const float* p = att + attOffset(row, T);
  const long r = long(b) * T + t;
  float* dq = dqkv + qOffset(r, C, h, hs);
  for (int i = 0; i < hs; ++i) dq[i] = 0.f;
  for (int t2 = 0; t2 <= t; ++t2) {
    const long r2 = long(b) * T + t2;
    const float ds = p[t2] * (doutDotV(dout, qkv, r, r2, C, h, hs) - D[row]) * scale;
    const float* k = qkv + kOffset(r2, C, h, hs);
    for (int i = 0; i < hs; ++i) dq[i] += ds * k[i];
  }
}

// One thread per (b, h, t2) key row: dk_t2 and dv_t2 (2 hs floats, this thread's only),
// gathered over the query rows t >= t2 that see key t2, in increasing t as the CPU adds them.
__global__ void attention_dkdv_kernel(float* dqkv, const float* D, const float* dout,
                                      const float* qkv, const float* att, int B, int T, int C,
                                      int NH, float scale) {
  const long row2 = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (row2 >= long(B) * NH * T) return;
  const int t2 = int(row2 % T), h = int(row2 / T % NH), b = int(row2 / T / NH), hs = C / NH;
  const long r2 = long(b) * T + t2;
  float* dk = dqkv + kOffset(r2, C, h, hs);
  float* dv = dqkv + vOffset(r2, C, h, hs);
  for (int i = 0; i < hs; ++i) dk[i] = dv[i] = 0.f;
  for (int t = t2; t < T; ++t) {
    const long row = row2 - t2 + t;  // query row t of the same (b, h)
    const long r = long(b) * T + t;
    const float pt = att[attOffset(row, T) + t2];
    const float ds = pt * (doutDotV(dout, qkv, r, r2, C, h, hs) - D[row]) * scale;
    const float* q = qkv + qOffset(r, C, h, hs);
    const float* dO = dout + r * C + long(h) * hs;
    for (int i = 0; i < hs; ++i) {
      dk[i] += ds * q[i];
      dv[i] += pt * dO[i];
    }
  }
}

// [SECTION] Embedding
// One thread per element of out.
__global__ void embedding_forward_kernel(float* out, const int* tokens, const float* wte,
                                         const float* wpe, int B, int T, int C) {
  const long e = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (e >= long(B) * T * C) return;
  const long r = e / C;
  const int c = int(e % C), t = int(r % T);
  out[e] = wte[long(tokens[r]) * C + c] + wpe[long(t) * C + c];
}

// dwpe: one thread per (t, c), adding the B sequences in order.
__global__ void embedding_dwpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const long e = blockIdx.x * long(blockDim.x) + threadIdx.x;  // = t*C + c
  if (e >= long(T) * C) return;
  float acc = dwpe[e];
  for (int b = 0; b < B; ++b) acc += dout[long(b) * T * C + e];
  dwpe[e] = acc;
}

// dwte: one thread per column c walks all B*T token rows in order. Rows of a repeated token hit
// the same dwte row, but column c of it belongs to this thread alone: no race, no atomics, and
// the CPU's order of adds. The price is only C threads of parallelism (a later rung would sort
// the tokens, or use atomicAdd and give up bit-for-bit repeatability).
__global__ void embedding_dwte_kernel(float* dwte, const float* dout, const int* tokens, int B,
                                      int T, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (long r = 0; r < long(B) * T; ++r) dwte[long(tokens[r]) * C + c] += dout[r * C + c];
}

}  // namespace

// [SECTION] Launchers
#define PARALAB_LAUNCH(kernel, grid, block, stream, ...)           \
  do {                                                             \
    kernel<<<(grid), (block), 0, asStream(stream)>>>(__VA_ARGS__); \
    PARALAB_CUDA_CHECK_LAUNCH();                                   \
  } while (0)

void attention_probs_cuda(float* att, const float* qkv, int B, int T, int C, int NH, void* stream) {
  const long rows = long(B) * NH * T;
  if (rows <= 0 || C <= 0) return;
  const float scale = float(1.0 / std::sqrt(double(C / NH)));  // as the CPU rounds it
  PARALAB_LAUNCH(attention_probs_kernel, blocksFor(rows), kThreads, stream, att, qkv, B, T, C, NH,
                 scale);
}

void attention_forward_cuda(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                            void* stream) {
  attention_probs_cuda(att, qkv, B, T, C, NH, stream);
  const long n = long(B) * T * C;
  if (n > 0)
    PARALAB_LAUNCH(attention_out_kernel, blocksFor(n), kThreads, stream, out, att, qkv, B, T, C,
                   NH);
}

void attention_forward_tiled_cuda(float* out, float* lse, const float* qkv, int B, int T, int C,
                                  int NH, void* stream) {
  if (B <= 0 || T <= 0 || C <= 0 || NH <= 0) return;
  const int hs = C / NH;
  if (hs > kMaxHs)
    throw std::invalid_argument("attention_forward_tiled_cuda: head size " + std::to_string(hs) +
                                " is over the kernel's limit of " + std::to_string(kMaxHs) +
                                " (kAttentionTiledMaxHeadSize)");
  const float scale = float(1.0 / std::sqrt(double(hs)));  // as the CPU rounds it
  const dim3 grid(unsigned((T + kTile - 1) / kTile), unsigned(NH), unsigned(B));
  PARALAB_LAUNCH(attention_tiled_kernel, grid, kTileWarps * 32, stream, out, lse, qkv, T, C, NH,
                 scale);
}

void attention_backward_cuda(float* dqkv, float* scratch, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH, void* stream) {
  const long rows = long(B) * NH * T;
  if (rows <= 0 || C <= 0) return;
  const float scale = float(1.0 / std::sqrt(double(C / NH)));
  // The row sums first; the dq and dk/dv passes read them (the stream orders the launches).
  PARALAB_LAUNCH(attention_rowsum_kernel, blocksFor(rows), kThreads, stream, scratch, dout, qkv,
                 att, B, T, C, NH);
  PARALAB_LAUNCH(attention_dq_kernel, blocksFor(rows), kThreads, stream, dqkv, scratch, dout, qkv,
                 att, B, T, C, NH, scale);
  PARALAB_LAUNCH(attention_dkdv_kernel, blocksFor(rows), kThreads, stream, dqkv, scratch, dout, qkv,
                 att, B, T, C, NH, scale);
}

void embedding_forward_cuda(float* out, const int* tokens, const float* wte, const float* wpe,
                            int B, int T, int C, void* stream) {
  const long n = long(B) * T * C;
  if (n > 0)
    PARALAB_LAUNCH(embedding_forward_kernel, blocksFor(n), kThreads, stream, out, tokens, wte, wpe,
                   B, T, C);
}

void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int* tokens, int B,
                             int T, int C, void* stream) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  PARALAB_LAUNCH(embedding_dwpe_kernel, blocksFor(long(T) * C), kThreads, stream, dwpe, dout, B, T,
                 C);
  PARALAB_LAUNCH(embedding_dwte_kernel, blocksFor(C), kThreads, stream, dwte, dout, tokens, B, T,
                 C);
}

}  // namespace paralab::kernels
