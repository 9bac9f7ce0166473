// A rank's device and kernels (see compute.h). Every CPU/GPU branch of the training step is here.
// See tests/engine/tst_kernel_choice.cpp and tst_cuda_training.cpp.
#include "device/compute.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "comm/communicator.h"  // mpiLaunchSize, mpiLocalRank
#include "config.h"
#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "cpu/embedding.h"
#include "cpu/gemm.h"
#include "cpu/half.h"
#include "cpu/layers.h"
#include "cpu/moe.h"
#include "cpu/optim.h"
#include "cuda/attention.h"
#include "cuda/attention_blocks.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "cuda/layers.h"
#include "cuda/mixed_precision.h"
#include "cuda/reduce.h"
#include "cuda/runtime.h"
#include "memory/device_allocator.h"

namespace paralab {

using namespace kernels;

// [SECTION] Making one

std::unique_ptr<Compute> Compute::cpu(const std::string& kernel) {
  std::unique_ptr<Compute> c(new Compute);
  c->m_kernel = kernel;
  c->m_gemmCpu = gemm_find(kernel);
  if (!c->m_gemmCpu) throw std::invalid_argument("kernel: '" + kernel + "' is not a cpu GEMM");
  return c;
}

std::unique_ptr<Compute> Compute::cuda(int gpu, const std::string& kernel,
                                       const std::vector<int>& peers) {
  std::unique_ptr<Compute> c(new Compute);
  c->m_kernel = kernel;
  c->m_gemmGpu = gemm_cuda_find(kernel.c_str());
  if (!c->m_gemmGpu) throw std::invalid_argument("kernel: '" + kernel + "' is not a cuda GEMM");
  gpu::setDevice(gpu);
  for (int p : peers) gpu::enablePeerAccess(p);
  c->m_gpu = gpu;
  c->m_stream = gpu::streamCreate();
  c->m_alloc = std::make_unique<DeviceAllocator>(gpu, c->m_stream);
  c->m_scratch = Tensor({8}, MemCategory::Workspace, nullptr, c->m_alloc.get());  // 32 bytes
  c->zero(c->m_scratch.data() + 4, 4);  // mixed precision's counts start at 0
  return c;
}

std::unique_ptr<Compute> Compute::forRank(const RunConfig& config, int rank) {
  if (config.device != Device::Cuda) return cpu(config.kernel);
  const int gpus = cuda_query_devices().count;
  if (gpus == 0) throw std::runtime_error("device: cuda is not available here");
  // Rank r on GPU r mod G; a process of an MPI job on GPU (its rank on this machine) mod G, the
  // GPU makeNcclMpiWorld gives its NCCL communicator. Thread ranks on different GPUs read each
  // other's buffers in ThreadComm's device path, so each rank's GPU needs access to the others'.
  const bool processPerRank = config.backend != Backend::Thread && mpiLaunchSize() > 0;
  const int device = (processPerRank ? mpiLocalRank(rank) : rank) % gpus;
  std::vector<int> peers;
  for (int q = 0; q < std::min(config.ranks, gpus); ++q)
    if (q != device) peers.push_back(q);
  if (config.backend != Backend::Thread) peers.clear();
  std::unique_ptr<Compute> c = cuda(device, config.kernel, peers);
  // Mixed precision's GEMMs: the tensor-core rung at the run's 16-bit type (WMMA m16n16k16,
  // cuda/gemm.h) instead of TF32, as cuBLAS's compute type follows its data type.
  if (config.kernel == "tensor-core" && config.precision == Dtype::Bf16)
    c->m_gemmGpu = gemm_cuda_tensor_core_bf16;
  if (config.kernel == "tensor-core" && config.precision == Dtype::Fp16)
    c->m_gemmGpu = gemm_cuda_tensor_core_fp16;
  return c;
}

const Compute& Compute::host() {
  static const std::unique_ptr<Compute> c = cpu("vendor");  // immutable: nothing to share
  return *c;
}

Compute::~Compute() {
  if (!onGpu()) return;
  try {
    gpu::setDevice(m_gpu);  // possibly another thread than the rank's
    gpu::streamSync(m_stream);
  } catch (...) {  // after a CUDA failure there is nothing left to wait for
  }
  for (void* e : m_events) gpu::eventDestroy(e);
  for (void* e : m_marks) gpu::eventDestroy(e);
  gpu::eventDestroy(m_refEvent);
  m_scratch = Tensor();
  m_alloc.reset();  // every tensor of the rank is gone by now (Trainer::Rank's order)
  gpu::streamDestroy(m_stream);
}

void Compute::makeCurrent() const {
  if (onGpu()) gpu::setDevice(m_gpu);
}

// [SECTION] Memory

Tensor Compute::tensor(Shape shape, MemCategory category, MemoryTracker* tracker) const {
  return Tensor(std::move(shape), category, tracker, m_alloc.get());
}

void Compute::upload(float* dst, const float* src, int64_t count) const {
  if (onGpu())
    gpu::copyAsync(dst, src, count * 4, m_stream);
  else if (count > 0 && dst != src)
    std::memcpy(dst, src, size_t(count) * 4);
}

void Compute::uploadInts(int* dst, const int* src, int64_t count) const {
  static_assert(sizeof(int) == 4);
  upload(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), count);
}

void Compute::download(float* dst, const float* src, int64_t count) const {
  if (!onGpu()) return upload(dst, src, count);
  gpu::copyAsync(dst, src, count * 4, m_stream);
  gpu::streamSync(m_stream);
}

void Compute::copy(float* dst, const float* src, int64_t count) const { upload(dst, src, count); }

void Compute::zero(float* p, int64_t count) const {
  if (onGpu())
    gpu::memsetAsync(p, count * 4, m_stream);
  else if (count > 0)
    std::memset(p, 0, size_t(count) * 4);
}

void Compute::sync() const {
  if (onGpu()) gpu::streamSync(m_stream);
}

void Compute::makeMarks(int n) {
  if (!onGpu()) return;
  while (int(m_marks.size()) < n) m_marks.push_back(gpu::eventCreate(false));
}

void Compute::mark(int i) {
  if (onGpu()) gpu::eventRecord(m_marks.at(size_t(i)), m_stream);
}

void Compute::waitMark(int i) const {
  if (onGpu()) gpu::eventSync(m_marks.at(size_t(i)));
}

// [SECTION] Math

void Compute::gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                   int lda, const float* B, int ldb, float beta, float* C, int ldc) const {
  if (onGpu())
    m_gemmGpu(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, m_stream);
  else
    m_gemmCpu(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void Compute::biasAdd(float* y, const float* b, int rows, int cols) const {
  if (onGpu())
    bias_add_cuda(y, b, rows, cols, m_stream);
  else
    bias_add(y, b, rows, cols);
}

void Compute::biasBackward(float* db, const float* dy, int rows, int cols) const {
  if (onGpu())
    bias_backward_cuda(db, dy, rows, cols, m_stream);
  else
    bias_backward(db, dy, rows, cols);
}

void Compute::gelu(float* y, const float* x, long n) const {
  if (onGpu())
    gelu_forward_cuda(y, x, n, m_stream);
  else
    gelu_forward(y, x, n);
}

void Compute::attention(float* out, float* att, const float* qkv, int B, int T, int C,
                        int NH) const {
  if (onGpu())
    attention_forward_cuda(out, att, qkv, B, T, C, NH, m_stream);
  else
    attention_forward(out, att, qkv, B, T, C, NH, m_gemmCpu);
}

void Compute::attentionProbs(float* att, const float* qkv, int B, int T, int C, int NH) const {
  if (onGpu())
    attention_probs_cuda(att, qkv, B, T, C, NH, m_stream);
  else
    attention_probs(att, qkv, B, T, C, NH, m_gemmCpu);
}

void Compute::attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                                const float* att, int B, int T, int C, int NH) const {
  if (onGpu())
    attention_backward_cuda(dqkv, scratch, dout, qkv, att, B, T, C, NH, m_stream);
  else
    attention_backward(dqkv, scratch, dout, qkv, att, B, T, C, NH, m_gemmCpu);
}

void Compute::attentionBlocksInit(float* o, float* m, float* l, int B, int Tq, int NH,
                                  int hs) const {
  if (onGpu())
    attention_blocks_init_cuda(o, m, l, B, Tq, NH, hs, m_stream);
  else
    attention_blocks_init(o, m, l, B, Tq, NH, hs);
}

long Compute::attentionBlockForward(float* o, float* m, float* l, float* scratch, const float* q,
                                    int ldq, const float* k, const float* v, int ldkv, int B,
                                    int NH, int hs, int q0, int Tq, int k0, int Tk) const {
  if (onGpu())
    return attention_block_forward_cuda(o, m, l, q, ldq, k, v, ldkv, B, NH, hs, q0, Tq, k0, Tk,
                                        m_stream);
  (void)scratch;  // the CPU's kernels keep their own
  return attention_block_forward_gemm(o, m, l, q, ldq, k, v, ldkv, B, NH, hs, q0, Tq, k0, Tk,
                                      m_gemmCpu);
}

void Compute::attentionBlocksFinish(float* out, float* lse, const float* o, const float* m,
                                    const float* l, int B, int Tq, int NH, int hs) const {
  if (onGpu())
    attention_blocks_finish_cuda(out, lse, o, m, l, B, Tq, NH, hs, m_stream);
  else
    attention_blocks_finish(out, lse, o, m, l, B, Tq, NH, hs);
}

void Compute::attentionBlocksDelta(float* D, const float* out, const float* dout, int B, int Tq,
                                   int NH, int hs) const {
  if (onGpu())
    attention_blocks_delta_cuda(D, out, dout, B, Tq, NH, hs, m_stream);
  else
    attention_blocks_delta(D, out, dout, B, Tq, NH, hs);
}

long Compute::attentionBlockBackward(float* dq, float* dk, float* dv, const float* dout,
                                     const float* lse, const float* D, const float* q, int ldq,
                                     const float* k, const float* v, int ldkv, int B, int NH,
                                     int hs, int q0, int Tq, int k0, int Tk) const {
  if (onGpu())
    return attention_block_backward_cuda(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B, NH, hs,
                                         q0, Tq, k0, Tk, m_stream);
  return attention_block_backward_gemm(dq, dk, dv, dout, lse, D, q, ldq, k, v, ldkv, B, NH, hs, q0,
                                       Tq, k0, Tk, m_gemmCpu);
}

void Compute::copyRows(float* dst, int ldd, const float* src, int lds, int64_t rows,
                       int cols) const {
  if (onGpu()) return rows_copy_cuda(dst, ldd, src, lds, long(rows), cols, m_stream);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * ldd, src + r * lds, sizeof(float) * size_t(std::max(cols, 0)));
}

void Compute::addRows(float* dst, int ldd, const float* src, int lds, int64_t rows,
                      int cols) const {
  if (onGpu()) return rows_add_cuda(dst, ldd, src, lds, long(rows), cols, m_stream);
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) dst[r * ldd + c] += src[r * lds + c];
}

void Compute::embedding(float* out, const int* tokens, const float* wte, const float* wpe, int B,
                        int T, int C) const {
  if (onGpu())
    embedding_forward_cuda(out, tokens, wte, wpe, B, T, C, m_stream);
  else
    embedding_forward(out, tokens, wte, wpe, B, T, C);
}

void Compute::embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens,
                                int B, int T, int C) const {
  if (onGpu())
    embedding_backward_cuda(dwte, dwpe, dout, tokens, B, T, C, m_stream);
  else
    embedding_backward(dwte, dwpe, dout, tokens, B, T, C);
}

void Compute::geluBackward(float* dx, const float* x, const float* dy, long n) const {
  if (onGpu())
    gelu_backward_cuda(dx, x, dy, n, m_stream);
  else
    gelu_backward(dx, x, dy, n);
}

void Compute::residualAdd(float* y, const float* x, long n) const {
  if (onGpu()) return residual_add_cuda(y, x, n, m_stream);
  residual_add(y, x, n);
}

void Compute::biasGelu(float* h, float* g, const float* b, int rows, int cols) const {
  if (!onGpu()) return bias_gelu_forward(h, g, b, rows, cols);
  biasAdd(h, b, rows, cols);
  gelu(g, h, long(rows) * cols);
}

void Compute::geluBackwardBias(float* dx, float* db, const float* x, const float* dy, int rows,
                               int cols) const {
  if (!onGpu()) return gelu_backward_bias(dx, db, x, dy, rows, cols);
  geluBackward(dx, x, dy, long(rows) * cols);
  biasBackward(db, dx, rows, cols);
}

void Compute::average(float* dst, const float* const* srcs, int n, int64_t count) const {
  if (onGpu()) return reduce_device(dst, srcs, n, count, DeviceReduce::Sum, float(n), m_stream);
  const float scale = 1.0f / float(n);
  for (int64_t i = 0; i < count; ++i) {
    float acc = srcs[0][i];
    for (int k = 1; k < n; ++k) acc += srcs[k][i];
    dst[i] = scale * acc;
  }
}

void Compute::layerNorm(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                        const float* beta, int rows, int cols) const {
  if (onGpu())
    layernorm_forward_cuda(y, mean, rstd, x, gamma, beta, rows, cols, 1e-5f, m_stream);
  else
    layernorm_forward(y, mean, rstd, x, gamma, beta, rows, cols);
}

void Compute::layerNormBackward(float* dx, float* dgamma, float* dbeta, const float* dy,
                                const float* x, const float* mean, const float* rstd,
                                const float* gamma, int rows, int cols) const {
  if (onGpu())
    layernorm_backward_cuda(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols, m_stream);
  else
    layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols);
}

double Compute::softmaxXent(float* dlogits, const float* logits, const int* labels, int rows,
                            int classes, double normalizer, int* correct) const {
  if (!onGpu()) {
    if (correct) *correct = count_correct(logits, labels, rows, classes);
    return softmax_xent(dlogits, logits, labels, rows, classes, normalizer);
  }
  // The scratch's first 8 bytes hold the loss (a double), the next 4 the hit count.
  auto* loss = reinterpret_cast<double*>(m_scratch.data());
  auto* hits = reinterpret_cast<int*>(m_scratch.data() + 2);
  softmax_xent_cuda(dlogits, loss, hits, logits, labels, rows, classes, normalizer, m_stream);
  float back[4];
  download(back, m_scratch.data(), 3);
  double sum;
  std::memcpy(&sum, back, sizeof sum);
  if (correct) std::memcpy(correct, back + 2, sizeof(int));
  return sum;
}

int Compute::countCorrect(const float* logits, const int* labels, int rows, int classes,
                          float* scratch) const {
  if (!onGpu()) return count_correct(logits, labels, rows, classes);
  int correct = 0;
  softmaxXent(scratch, logits, labels, rows, classes, 1.0, &correct);
  return correct;
}

void Compute::sgd(float* p, const float* g, long n, float lr) const {
  if (onGpu())
    sgd_update_cuda(p, g, n, lr, m_stream);
  else
    sgd_update(p, g, n, lr);
}

void Compute::momentum(float* p, float* v, const float* g, long n, float lr, float mu) const {
  if (onGpu())
    momentum_update_cuda(p, v, g, n, lr, mu, m_stream);
  else
    momentum_update(p, v, g, n, lr, mu);
}

void Compute::adam(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
                   float beta2, float eps, long t) const {
  if (onGpu())
    adam_update_cuda(p, m, v, g, n, lr, beta1, beta2, eps, t, m_stream);
  else
    adam_update(p, m, v, g, n, lr, beta1, beta2, eps, t);
}

void Compute::gatherRows(float* dst, const float* src, const int* index, long n, int cols) const {
  if (onGpu())
    gather_rows_cuda(dst, src, index, n, cols, m_stream);
  else
    gather_rows(dst, src, index, n, cols);
}

void Compute::scatterAddRows(float* dst, const float* src, const int* index, const float* scale,
                             long n, int cols) const {
  if (onGpu())
    scatter_add_rows_cuda(dst, src, index, scale, n, cols, m_stream);
  else
    scatter_add_rows(dst, src, index, scale, n, cols);
}

void Compute::dotRows(float* out, const float* a, const int* index, const float* b, long n,
                      int cols) const {
  if (onGpu())
    dot_rows_cuda(out, a, index, b, n, cols, m_stream);
  else
    dot_rows(out, a, index, b, n, cols);
}

void Compute::scaleRows(float* x, const float* scale, long n, int cols) const {
  if (onGpu()) return scale_rows_cuda(x, scale, n, cols, m_stream);
  for (long i = 0; i < n; ++i)
    for (int c = 0; c < cols; ++c) x[i * cols + c] *= scale[i];
}

// [SECTION] Mixed precision

void Compute::roundHalf(float* values, int64_t n, bool fp16, bool countFlushed) const {
  if (!onGpu()) {
    const int64_t flushed = round_to_half(values, n, fp16);
    if (countFlushed) m_flushed += flushed;
    return;
  }
  auto* counter = reinterpret_cast<unsigned long long*>(m_scratch.data() + 4);
  round_half_cuda(values, long(n), fp16, countFlushed ? counter : nullptr, m_stream);
}

int64_t Compute::takeFlushed() const {
  if (!onGpu()) return std::exchange(m_flushed, 0);
  float back[2];
  download(back, m_scratch.data() + 4, 2);
  zero(m_scratch.data() + 4, 2);
  unsigned long long n;
  std::memcpy(&n, back, sizeof n);
  return int64_t(n);
}

void Compute::unscale(float* g, int64_t n, float scale) const {
  if (onGpu())
    return unscale_check_cuda(g, long(n), scale, reinterpret_cast<int*>(m_scratch.data() + 6),
                              m_stream);
  for (int64_t i = 0; i < n; ++i) {
    g[i] *= scale;
    if (!std::isfinite(g[i])) m_nonFinite = true;
  }
}

bool Compute::takeNonFinite() const {
  if (!onGpu()) return std::exchange(m_nonFinite, false);
  int found;
  download(reinterpret_cast<float*>(&found), m_scratch.data() + 6, 1);
  zero(m_scratch.data() + 6, 1);
  return found != 0;
}

// [SECTION] Spans

int Compute::nextEvent() {
  if (m_usedEvents == int(m_events.size())) m_events.push_back(gpu::eventCreate(true));
  return m_usedEvents++;
}

Compute::OpenSpan Compute::openSpan(SpanRecorder* rec, SpanKind kind, int64_t step,
                                    const char* op) {
  OpenSpan s{rec, Span{kind, 0, 0, 0, op, step}, -1};
  if (!rec) return s;
  if (!onGpu() || !m_inStep) {  // the CPU, or a GPU outside beginStep/endStep: host clock
    s.span.startNs = nowNs();
    return s;
  }
  s.event = nextEvent();
  gpu::eventRecord(m_events[size_t(s.event)], m_stream);
  return s;
}

void Compute::closeSpan(OpenSpan& s) {
  if (!s.rec) return;
  if (s.event < 0) {
    if (onGpu()) sync();  // host-clocked GPU span: the work must be done to be timed
    s.span.endNs = nowNs();
    s.rec->record(s.span);
  } else {
    const int end = nextEvent();
    gpu::eventRecord(m_events[size_t(end)], m_stream);
    m_pending.push_back({s.rec, s.span, s.event, end});
  }
  s.rec = nullptr;
}

void Compute::beginStep() {
  if (!onGpu()) return;
  if (!m_refEvent) m_refEvent = gpu::eventCreate(true);
  gpu::streamSync(m_stream);
  gpu::eventRecord(m_refEvent, m_stream);
  m_refNs = nowNs();
  m_usedEvents = 0;
  m_pending.clear();
  m_inStep = true;
}

void Compute::endStep() {
  if (!onGpu()) return;
  m_inStep = false;
  gpu::streamSync(m_stream);
  for (Pending& p : m_pending) {
    auto at = [&](int e) {
      return m_refNs + int64_t(double(gpu::eventElapsedMs(m_refEvent, m_events[size_t(e)])) * 1e6);
    };
    p.span.startNs = at(p.start);
    p.span.endNs = at(p.end);
    p.rec->record(p.span);
  }
  m_pending.clear();
  m_usedEvents = 0;
}

}  // namespace paralab
