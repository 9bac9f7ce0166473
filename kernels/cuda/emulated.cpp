// The emulated GPU (see emulated.h): device memory behind tagged addresses, streams as queues
// that run when the host waits, and every CUDA launcher of cuda/*.h carried out by its CPU
// counterpart on the untagged addresses. Built into paralab_kernels_emulated only.
#include "cuda/emulated.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/layers.h"
#include "cpu/moe.h"
#include "cpu/optim.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "cuda/layers.h"
#include "cuda/reduce.h"
#include "cuda/runtime.h"
#include "cuda/teach.h"

namespace paralab::kernels::emu {

namespace {

// How many emulated GPUs there are: $PARALAB_EMULATED_GPUS, default 1.
int gpuCount() {
  const char* v = std::getenv("PARALAB_EMULATED_GPUS");
  const int n = v ? std::atoi(v) : 1;
  return n > 0 ? n : 1;
}

// A stream: work in launch order, run by whoever waits for it, under the stream's lock (two
// threads waiting at once take turns; a launch waits while the queue is being run).
struct Stream {
  std::mutex mutex;
  std::deque<std::function<void()>> queue;
};

// Recorded on one thread, waited for on another (a bucket's mark): the fields are atomic.
struct Event {
  std::atomic<Stream*> stream{nullptr};  // the stream it was last recorded on
  std::atomic<int64_t> ns{0};            // when the record ran
  std::atomic<bool> done{true};          // never recorded: complete (as in CUDA)
};

std::mutex g_registry;
std::set<Stream*> g_streams;  // every live stream, for device-wide waits
Stream g_default;             // stream nullptr
thread_local int t_device = 0;

Stream* asStream(void* s) { return s ? static_cast<Stream*>(s) : &g_default; }

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs the stream's queue until it is empty, holding its lock (work never launches work, and a
// launch from another thread waits its turn). An exception from the work propagates to the
// waiting host, as a CUDA error would.
void drain(Stream* s) {
  std::lock_guard lock(s->mutex);
  while (!s->queue.empty()) {
    std::function<void()> work = std::move(s->queue.front());
    s->queue.pop_front();
    work();
  }
}

// What cudaFree and cudaDeviceSynchronize do: wait for every stream. The registry stays locked
// throughout, so no stream is destroyed while it is being drained here.
void drainAll() {
  std::lock_guard lock(g_registry);
  for (Stream* s : g_streams) drain(s);
  drain(&g_default);
}

void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) | kTag); }

}  // namespace

void enqueue(void* stream, std::function<void()> work) {
  Stream* s = asStream(stream);
  std::lock_guard lock(s->mutex);
  s->queue.push_back(std::move(work));
}

}  // namespace paralab::kernels::emu

// [SECTION] The runtime (cuda/runtime.h)

namespace paralab::gpu {

using namespace paralab::kernels::emu;

void setDevice(int gpu) {
  if (gpu < 0 || gpu >= gpuCount())
    throw std::runtime_error("emulated GPU: no device " + std::to_string(gpu));
  t_device = gpu;
}
int currentDevice() { return t_device; }
void enablePeerAccess(int) {}  // one host memory: every emulated GPU reaches every other's

void* streamCreate() {
  auto* s = new Stream;
  std::lock_guard lock(g_registry);
  g_streams.insert(s);
  return s;
}

void streamDestroy(void* stream) {
  if (!stream) return;
  auto* s = static_cast<Stream*>(stream);
  {
    std::lock_guard lock(g_registry);  // after this no device-wide wait can reach it
    g_streams.erase(s);
  }
  drain(s);  // CUDA lets queued work finish
  delete s;
}

void streamSync(void* stream) { drain(asStream(stream)); }

void* malloc(int64_t bytes) {
  const size_t size = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, size);
  return p ? tag(p) : nullptr;
}

void free(void* p) {
  if (!p) return;
  drainAll();  // cudaFree waits for the device: no queued work may still touch the block
  std::free(host(p));
}

void memsetAsync(void* p, int64_t bytes, void* stream) {
  if (bytes <= 0) return;
  enqueue(stream, [p, bytes] { std::memset(host(p), 0, static_cast<size_t>(bytes)); });
}

void copyAsync(void* dst, const void* src, int64_t bytes, void* stream) {
  if (bytes <= 0 || dst == src) return;
  if (!isDevice(src)) {  // from pageable host memory: read now (CUDA stages it), land in order
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    enqueue(stream, [dst, staged] { std::memcpy(host(dst), staged->data(), staged->size()); });
    return;
  }
  enqueue(stream,
          [dst, src, bytes] { std::memcpy(host(dst), host(src), static_cast<size_t>(bytes)); });
}

void* eventCreate(bool) { return new Event; }
void eventDestroy(void* event) { delete static_cast<Event*>(event); }

void eventRecord(void* event, void* stream) {
  auto* e = static_cast<Event*>(event);
  e->stream = asStream(stream);
  e->done = false;
  enqueue(stream, [e] {
    e->ns = nowNs();
    e->done = true;
  });
}

void eventSync(void* event) {
  auto* e = static_cast<Event*>(event);
  if (Stream* s = e->stream.load(); !e->done && s) drain(s);
}

float eventElapsedMs(void* from, void* to) {
  auto *a = static_cast<Event*>(from), *b = static_cast<Event*>(to);
  if (!a->done || !b->done) throw std::runtime_error("emulated GPU: event not complete");
  return float(double(b->ns - a->ns) / 1e6);
}

}  // namespace paralab::gpu

namespace paralab::kernels {

using namespace emu;

GpuInfo cuda_query_devices() {
  GpuInfo g;
  g.count = gpuCount();
  g.firstName = "emulated GPU (host memory, deferred streams)";
  g.emulated = true;
  return g;
}

// [SECTION] Reductions for ThreadComm's device path (cuda/reduce.h)

void reduce_device(float* dst, const float* const* srcs, int nsrc, int64_t count, DeviceReduce op,
                   float divisor, void* stream) {
  if (count <= 0 || nsrc <= 0) return;
  std::vector<const float*> from(srcs, srcs + nsrc);  // the caller's array may go
  enqueue(stream, [=] {
    float* out = host(dst);
    for (int64_t i = 0; i < count; ++i) {  // in source order, as the kernel sums
      float acc = host(from[0])[i];
      for (int k = 1; k < nsrc; ++k)
        acc = op == DeviceReduce::Max ? std::max(acc, host(from[size_t(k)])[i])
                                      : acc + host(from[size_t(k)])[i];
      out[i] = divisor != 1.0f ? acc / divisor : acc;
    }
  });
}

void reduce_device_copy(void* dst, const void* src, int64_t bytes, void* stream) {
  gpu::copyAsync(dst, src, bytes, stream);
}
void* reduce_stream_create() { return gpu::streamCreate(); }
void reduce_stream_destroy(void* stream) { gpu::streamDestroy(stream); }
void reduce_stream_sync(void* stream) { gpu::streamSync(stream); }
bool reduce_stream_query(void* stream) {
  Stream* s = asStream(stream);
  std::lock_guard lock(s->mutex);
  return s->queue.empty();
}
void* reduce_device_alloc(int64_t bytes) {
  void* p = gpu::malloc(bytes);
  if (!p) throw std::runtime_error("emulated GPU: out of host memory");
  return p;
}
void reduce_device_free(void* p) { gpu::free(p); }
int reduce_current_device() { return gpu::currentDevice(); }
void reduce_set_device(int device) { gpu::setDevice(device); }

// [SECTION] GEMM (cuda/gemm.h): every rung is OpenBLAS in fp32 on the untagged addresses.

static void gemmEmulated(bool tA, bool tB, int M, int N, int K, float alpha, const float* A,
                         int lda, const float* B, int ldb, float beta, float* C, int ldc,
                         void* stream) {
  if (M <= 0 || N <= 0) return;
  enqueue(stream, [=] {
    gemm_vendor<float>(tA, tB, M, N, K, alpha, host(A), lda, host(B), ldb, beta, host(C), ldc);
  });
}

#define PARALAB_EMULATED_GEMM(name)                                                      \
  void name(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, \
            const float* B, int ldb, float beta, float* C, int ldc, void* stream) {      \
    gemmEmulated(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);          \
  }
PARALAB_EMULATED_GEMM(gemm_cuda_naive)
PARALAB_EMULATED_GEMM(gemm_cuda_coalesced)
PARALAB_EMULATED_GEMM(gemm_cuda_tiled)
PARALAB_EMULATED_GEMM(gemm_cuda_tensor_core)
PARALAB_EMULATED_GEMM(gemm_cuda_vendor)
PARALAB_EMULATED_GEMM(gemm_cuda_vendor_tf32)
#undef PARALAB_EMULATED_GEMM

// [SECTION] The rest of the step (cuda/layers.h), each by its CPU counterpart.

void bias_add_cuda(float* y, const float* b, int rows, int cols, void* stream) {
  enqueue(stream, [=] { bias_add(host(y), host(b), rows, cols); });
}
void bias_backward_cuda(float* db, const float* dy, int rows, int cols, void* stream) {
  enqueue(stream, [=] { bias_backward(host(db), host(dy), rows, cols); });
}
void gelu_forward_cuda(float* y, const float* x, long n, void* stream) {
  enqueue(stream, [=] { gelu_forward(host(y), host(x), n); });
}
void gelu_backward_cuda(float* dx, const float* x, const float* dy, long n, void* stream) {
  enqueue(stream, [=] { gelu_backward(host(dx), host(x), host(dy), n); });
}
void residual_add_cuda(float* y, const float* x, long n, void* stream) {
  enqueue(stream, [=] {
    float* out = host(y);
    const float* in = host(x);
    for (long i = 0; i < n; ++i) out[i] += in[i];
  });
}
void layernorm_forward_cuda(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                            const float* beta, int rows, int cols, float eps, void* stream) {
  (void)eps;  // the CPU kernel's is the same 1e-5
  enqueue(stream, [=] {
    layernorm_forward(host(y), host(mean), host(rstd), host(x), host(gamma), host(beta), rows,
                      cols);
  });
}
void layernorm_backward_cuda(float* dx, float* dgamma, float* dbeta, const float* dy,
                             const float* x, const float* mean, const float* rstd,
                             const float* gamma, int rows, int cols, void* stream) {
  enqueue(stream, [=] {
    layernorm_backward(host(dx), host(dgamma), host(dbeta), host(dy), host(x), host(mean),
                       host(rstd), host(gamma), rows, cols);
  });
}
void softmax_xent_cuda(float* dlogits, double* lossSum, int* correct, const float* logits,
                       const int* labels, int rows, int classes, double normalizer, void* stream) {
  enqueue(stream, [=] {
    *host(lossSum) =
        softmax_xent(host(dlogits), host(logits), host(labels), rows, classes, normalizer);
    if (correct) *host(correct) = count_correct(host(logits), host(labels), rows, classes);
  });
}
void sgd_update_cuda(float* p, const float* g, long n, float lr, void* stream) {
  enqueue(stream, [=] { sgd_update(host(p), host(g), n, lr); });
}
void momentum_update_cuda(float* p, float* v, const float* g, long n, float lr, float mu,
                          void* stream) {
  enqueue(stream, [=] { momentum_update(host(p), host(v), host(g), n, lr, mu); });
}
void adam_update_cuda(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                      float beta2, float eps, long t, void* stream) {
  enqueue(stream,
          [=] { adam_update(host(p), host(m), host(v), host(g), n, lr, beta1, beta2, eps, t); });
}
void gather_rows_cuda(float* dst, const float* src, const int* index, long n, int cols,
                      void* stream) {
  enqueue(stream, [=] { gather_rows(host(dst), host(src), host(index), n, cols); });
}
void scatter_add_rows_cuda(float* dst, const float* src, const int* index, const float* scale,
                           long n, int cols, void* stream) {
  enqueue(stream,
          [=] { scatter_add_rows(host(dst), host(src), host(index), host(scale), n, cols); });
}
void dot_rows_cuda(float* out, const float* a, const int* index, const float* b, long n, int cols,
                   void* stream) {
  enqueue(stream, [=] { dot_rows(host(out), host(a), host(index), host(b), n, cols); });
}
void scale_rows_cuda(float* x, const float* scale, long n, int cols, void* stream) {
  enqueue(stream, [=] {
    float* rows = host(x);
    const float* s = host(scale);
    for (long i = 0; i < n; ++i)
      for (int c = 0; c < cols; ++c) rows[i * cols + c] *= s[i];
  });
}

// [SECTION] The teaching kernels time real hardware: not emulated.

WarpDivergenceResult warp_divergence_experiment(long, int) {
  throw std::runtime_error("warp divergence: needs a real GPU (this one is emulated)");
}
CoalescingResult coalescing_experiment(long, int, int) {
  throw std::runtime_error("coalescing: needs a real GPU (this one is emulated)");
}

}  // namespace paralab::kernels
