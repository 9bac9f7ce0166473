// The GPU teaching experiments counted on the host (see teach_count.h). Compiled for the host
// only (paralab_cuda_on_host in kernels/CMakeLists.txt): each kernel runs on host memory through
// cuda_host::runNow, inside a CountScope (cuda/host/count.h) that counts its warps. The branch
// and copy kernels are teach.cu's own (teach_kernels.cuh); the GEMM kernels are below. See
// tests/kernels/tst_cuda_count.cpp and `paralab-bench teach`.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda/counted.h"
#include "cuda/teach_count.h"
#include "cuda/teach_kernels.cuh"

namespace paralab::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kTile = 32;

// C = A·B, one thread per element of C, every operand read from global memory.
__global__ void gemm_naive_counted(float* C, const float* A, const float* B, int n) {
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < n; ++k)
    acc += PARALAB_COUNTED_LOAD(&A[row * n + k]) * PARALAB_COUNTED_LOAD(&B[k * n + col]);
  C[row * n + col] = acc;
}

// C = A·B through 32 × 32 tiles in shared memory: each thread loads one float of the A tile and
// one of the B tile per step along k (coalesced: a warp's lanes read along a row), then every
// thread of the block reads 32 of each from shared memory. kLanesDownColumn: a warp's lanes
// (threadIdx.x) compute a column of the C tile, so together they read a column of the A tile,
// words kTile + kPad apart: with no padding every one in the same bank.
template <bool kLanesDownColumn, int kPad>
__global__ void gemm_tiled_counted(float* C, const float* A, const float* B, int n) {
  __shared__ float As[kTile][kTile + kPad];
  __shared__ float Bs[kTile][kTile + kPad];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r = kLanesDownColumn ? tx : ty, c = kLanesDownColumn ? ty : tx;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    As[ty][tx] = PARALAB_COUNTED_LOAD(&A[(row0 + ty) * n + k0 + tx]);
    Bs[ty][tx] = PARALAB_COUNTED_LOAD(&B[(k0 + ty) * n + col0 + tx]);
    __syncthreads();  // the tiles are complete
    for (int k = 0; k < kTile; ++k) acc += As[r][k] * Bs[k][c];
    __syncthreads();  // every thread is done with them
  }
  C[(row0 + r) * n + col0 + c] = acc;
}

// Host floats on 128-byte lines, as cudaMalloc aligns device memory (at least 256 bytes).
struct Floats {
  explicit Floats(long n)
      : p(static_cast<float*>(std::aligned_alloc(256, size_t((n * 4 + 255) / 256 * 256)))) {
    if (!p) throw std::bad_alloc();
    for (long i = 0; i < n; ++i) p[i] = float(i % 7) * 0.25f - 0.5f;
  }
  ~Floats() { std::free(p); }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* p;
};

KernelCounts counted(std::string name, const cuda_host::WarpCounts& c) {
  KernelCounts k;
  k.kernel = std::move(name);
  k.branchWarps = c.branchWarps, k.pathsIssued = c.pathsIssued, k.activeLanes = c.activeLanes;
  k.loadRequests = c.loadRequests, k.threadLoads = c.threadLoads;
  k.lines = c.lines, k.sectors = c.sectors;
  k.sharedRequests = c.sharedRequests, k.sharedWavefronts = c.sharedWavefronts;
  k.worstWavefronts = c.worstWavefronts;
  return k;
}

// Runs `launch` inside a count scope: what it counted.
template <class Launch>
KernelCounts count(std::string name, Launch&& launch) {
  cuda_host::CountScope scope;
  launch();
  return counted(std::move(name), scope.totals());
}

}  // namespace

std::vector<KernelCounts> count_warp_divergence(long elements) {
  if (elements < 1 || elements > (1L << 20))
    throw std::invalid_argument("elements: 1 to 1048576, not " + std::to_string(elements));
  Floats data(elements);
  const dim3 grid(unsigned((elements + kThreads - 1) / kThreads)), block(kThreads);
  return {count("branch on threadIdx.x % 2",
                [&] {
                  cuda_host::runNow<branch_kernel<false>>(grid, block)(data.p, elements, 4);
                }),
          count("branch on (threadIdx.x / 32) % 2", [&] {
            cuda_host::runNow<branch_kernel<true>>(grid, block)(data.p, elements, 4);
          })};
}

std::vector<KernelCounts> count_coalescing(const std::vector<int>& strides, long elements) {
  int widest = 1;
  for (int s : strides) {
    if (s < 1 || s > 1024)
      throw std::invalid_argument("stride: 1 to 1024, not " + std::to_string(s));
    widest = std::max(widest, s);
  }
  // Whole rows of 32 floats in every stride's view: a warp's 32 lanes then never wrap around it.
  elements = elements / (32L * widest) * (32L * widest);
  if (elements < 32L * widest || elements > (1L << 22))
    throw std::invalid_argument("elements: at least 32 × the widest stride, at most 4194304");
  Floats in(elements), out(elements);
  const dim3 grid(unsigned((elements + kThreads - 1) / kThreads)), block(kThreads);
  std::vector<KernelCounts> rows;
  for (int s : strides) {
    rows.push_back(count("stride " + std::to_string(s), [&] {
      cuda_host::runNow<copy_kernel<float>>(grid, block)(out.p, in.p, elements, s);
    }));
    rows.back().stride = s;
  }
  return rows;
}

std::vector<KernelCounts> count_gemm(int n) {
  if (n < kTile || n > 256 || n % kTile)
    throw std::invalid_argument("n: a multiple of 32 from 32 to 256, not " + std::to_string(n));
  const long nn = long(n) * n;
  Floats A(nn), B(nn), C(nn), reference(nn);
  for (long i = 0; i < nn; ++i) B.p[i] = float(i % 5) * 0.5f - 1.f;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += double(A.p[i * n + k]) * B.p[k * n + j];
      reference.p[i * n + j] = float(s);
    }
  const dim3 grid(unsigned(n / kTile), unsigned(n / kTile)), block(kTile, kTile);
  // Each kernel's product checked against the reference: a count of a wrong kernel is no count.
  const auto checked = [&](KernelCounts k) {
    for (long i = 0; i < nn; ++i)
      if (std::abs(C.p[i] - reference.p[i]) > 1e-3f * (1.f + std::abs(reference.p[i])))
        throw std::runtime_error(k.kernel + ": C differs from the reference at " +
                                 std::to_string(i));
    return k;
  };
  return {
      checked(count("naive",
                    [&] { cuda_host::runNow<gemm_naive_counted>(grid, block)(C.p, A.p, B.p, n); })),
      checked(count("tiled",
                    [&] {
                      cuda_host::runNow<gemm_tiled_counted<false, 0>>(grid, block)(C.p, A.p, B.p,
                                                                                   n);
                    })),
      checked(count("tiled, lanes down a column",
                    [&] {
                      cuda_host::runNow<gemm_tiled_counted<true, 0>>(grid, block)(C.p, A.p, B.p,
                                                                                  n);
                    })),
      checked(count("tiled, lanes down a column, padded", [&] {
        cuda_host::runNow<gemm_tiled_counted<true, 1>>(grid, block)(C.p, A.p, B.p, n);
      }))};
}

}  // namespace paralab::kernels
