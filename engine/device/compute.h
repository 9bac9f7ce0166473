// Compute: where one rank's math runs and with what — the CPU, or one GPU with the rank's own
// stream and caching allocator — and the GEMM that --kernel chose from the CPU or CUDA ladder
// (cpu/gemm.h, cuda/gemm.h). The layers, the optimizer and the data-parallel strategies go
// through it for every GEMM, elementwise op, copy and compute span, so this file is the one
// place where CPU and GPU part ways. One per rank (Trainer::Rank owns it), shared with nothing.
// See tests/engine/tst_kernel_choice.cpp and tst_cuda_training.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "metrics/span_recorder.h"
#include "tensor.h"

namespace paralab {

struct RunConfig;

class Compute {
 public:
  // The CPU with GEMM `kernel` of the CPU ladder; throws std::invalid_argument for an unknown one.
  static std::unique_ptr<Compute> cpu(const std::string& kernel = "vendor");
  // GPU `gpu`, made current on the calling thread (the rank's own), with a stream and a caching
  // allocator of its own and GEMM `kernel` of the CUDA ladder. `peers`: other GPUs whose memory
  // this rank's collectives read (thread ranks spread over several GPUs).
  static std::unique_ptr<Compute> cuda(int gpu, const std::string& kernel,
                                       const std::vector<int>& peers = {});
  // What `config` gives world rank `rank`: --device and --kernel; with G GPUs, GPU rank mod G.
  // Call it on the rank's thread.
  static std::unique_ptr<Compute> forRank(const RunConfig& config, int rank);
  // The CPU with the vendor GEMM, for models built without a Compute (tools, unit tests).
  static const Compute& host();
  ~Compute();
  Compute(const Compute&) = delete;
  Compute& operator=(const Compute&) = delete;

  Device device() const { return m_gpu >= 0 ? Device::Cuda : Device::Cpu; }
  bool onGpu() const { return m_gpu >= 0; }
  int gpu() const { return m_gpu; }  // -1 on the CPU
  void* stream() const { return m_stream; }
  const std::string& kernel() const { return m_kernel; }
  // Makes this rank's GPU current on the calling thread (e.g. a strategy's comm thread).
  void makeCurrent() const;

  // [SECTION] Memory on this device. On the GPU every copy is enqueued on the rank's stream.
  Tensor tensor(Shape shape, MemCategory category, MemoryTracker* tracker) const;
  void upload(float* dst, const float* src, int64_t count) const;  // host -> here
  void uploadInts(int* dst, const int* src, int64_t count) const;
  void download(float* dst, const float* src, int64_t count) const;  // here -> host, done on return
  void copy(float* dst, const float* src, int64_t count) const;      // here -> here
  void zero(float* p, int64_t count) const;
  // Waits for the rank's queued work: before a collective reads or writes its buffers from the
  // communicator's own stream (ThreadComm and NcclComm sync theirs before they return).
  void sync() const;
  // Marks: points in the rank's stream that another thread can wait for (the bucketed
  // all-reduce's communication thread waits for a bucket's gradients, not for the whole
  // backward). Make them before that thread starts; nothing to do on the CPU.
  void makeMarks(int n);
  void mark(int i);            // GPU: records mark i after the work enqueued so far
  void waitMark(int i) const;  // GPU: waits until that work is done

  // [SECTION] The math of a step, as cpu/layers.h, cpu/optim.h and cuda/layers.h define it.
  // Pointers are memory of this device.
  void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) const;
  void biasAdd(float* y, const float* b, int rows, int cols) const;
  void biasBackward(float* db, const float* dy, int rows, int cols) const;
  void gelu(float* y, const float* x, long n) const;
  void geluBackward(float* dx, const float* x, const float* dy, long n) const;  // dx may be dy
  void residualAdd(float* y, const float* x, long n) const;                     // y += x
  // biasAdd then gelu, and geluBackward then biasBackward, in one pass on the CPU (cpu/layers.h)
  void biasGelu(float* h, float* g, const float* b, int rows, int cols) const;
  void geluBackwardBias(float* dx, float* db, const float* x, const float* dy, int rows,
                        int cols) const;
  // dst = (1/n) (srcs[0] + ... + srcs[n-1]), summed in that order; dst may be a source. The
  // GPU divides by n where the CPU multiplies by 1/n (the last bit may differ for n = 3).
  void average(float* dst, const float* const* srcs, int n, int64_t count) const;
  void layerNorm(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                 const float* beta, int rows, int cols) const;
  void layerNormBackward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                         const float* mean, const float* rstd, const float* gamma, int rows,
                         int cols) const;
  // Returns the sum of the rows' losses and writes dlogits (/ normalizer); on the GPU this waits
  // for the step so far (the loss is copied back). `correct` (may be null): arg-max hits.
  double softmaxXent(float* dlogits, const float* logits, const int* labels, int rows, int classes,
                     double normalizer, int* correct = nullptr) const;
  // Rows whose first arg-max is the label. GPU: through the loss kernel, whose gradient goes to
  // `scratch` [rows, classes]; waits for the stream (the count is copied back).
  int countCorrect(const float* logits, const int* labels, int rows, int classes,
                   float* scratch) const;
  // The GPT's causal self-attention and embedding, as cpu/attention.h and cpu/embedding.h
  // define them: qkv [B*T, 3C] -> out [B*T, C], probabilities att [B, NH, T, T] kept for
  // backward. attentionBackward's `scratch` holds B*NH*T floats (the GPU's need; the CPU uses
  // T of them). Tokens [B*T] are memory of this device too.
  void attention(float* out, float* att, const float* qkv, int B, int T, int C, int NH) const;
  // att alone, as attention() writes it (selective recomputation, before the backward).
  void attentionProbs(float* att, const float* qkv, int B, int T, int C, int NH) const;
  void attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                         const float* att, int B, int T, int C, int NH) const;
  // Causal attention one K/V block at a time, for ring attention (parallel/context/ring_attention.h):
  // cpu/attention_blocks.h and cuda/attention_blocks.h, the same shapes and semantics.
  // attentionBlockForward's `scratch` holds Tk floats (the CPU's row of scores; the GPU
  // rescores instead and leaves it alone). The two folds return the visible (query, key)
  // pairs per sequence and head, 0 for a block wholly in the chunk's future.
  void attentionBlocksInit(float* o, float* m, float* l, int B, int Tq, int NH, int hs) const;
  long attentionBlockForward(float* o, float* m, float* l, float* scratch, const float* q,
                             int ldq, const float* k, const float* v, int ldkv, int B, int NH,
                             int hs, int q0, int Tq, int k0, int Tk) const;
  void attentionBlocksFinish(float* out, float* lse, const float* o, const float* m,
                             const float* l, int B, int Tq, int NH, int hs) const;
  void attentionBlocksDelta(float* D, const float* out, const float* dout, int B, int Tq, int NH,
                            int hs) const;
  long attentionBlockBackward(float* dq, float* dk, float* dv, const float* dout,
                              const float* lse, const float* D, const float* q, int ldq,
                              const float* k, const float* v, int ldkv, int B, int NH, int hs,
                              int q0, int Tq, int k0, int Tk) const;
  // Strided rows: dst[r*ldd + c] = src[r*lds + c] (copyRows) or += (addRows), r < rows,
  // c < cols; dst and src do not overlap.
  void copyRows(float* dst, int ldd, const float* src, int lds, int64_t rows, int cols) const;
  void addRows(float* dst, int ldd, const float* src, int lds, int64_t rows, int cols) const;
  void embedding(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                 int C) const;
  void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B,
                         int T, int C) const;  // accumulates (+=)
  void sgd(float* p, const float* g, long n, float lr) const;
  void momentum(float* p, float* v, const float* g, long n, float lr, float mu) const;
  void adam(float* p, float* m, float* v, const float* g, long n, float lr, float beta1,
            float beta2, float eps, long t) const;
  // The MoE's token rows, as cpu/moe.h and cuda/layers.h define them; `index` and `scale` are
  // memory of this device too. Gather: dst[i, :] = src[index[i], :] for i < n.
  void gatherRows(float* dst, const float* src, const int* index, long n, int cols) const;
  // dst[index[i], :] += scale[i] src[i, :] (scale null: 1). Rows meeting at one index add in
  // order of i on the CPU, in any order on the GPU (atomics: the last bits may differ).
  void scatterAddRows(float* dst, const float* src, const int* index, const float* scale, long n,
                      int cols) const;
  // out[i] = <a[index[i], :], b[i, :]>, summed in double.
  void dotRows(float* out, const float* a, const int* index, const float* b, long n,
               int cols) const;
  void scaleRows(float* x, const float* scale, long n, int cols) const;  // x[i, :] *= scale[i]

  // [SECTION] Mixed precision (train/precision.h). Rounds n values in place to bf16 (fp16
  // false) or fp16, bit for bit cpu/half.h's rounding on either device (the GPU's kernel:
  // cuda/mixed_precision.h); with `countFlushed` the entries flushed to zero (nonzero before,
  // zero after) are added to the count takeFlushed() returns and restarts.
  void roundHalf(float* values, int64_t n, bool fp16, bool countFlushed = false) const;
  int64_t takeFlushed() const;  // GPU: waits for the stream (the count is copied back)
  // g[i] *= scale (fp16's 1 / S); an inf or NaN result is remembered until takeNonFinite(),
  // which says whether there was one and forgets it (GPU: waits for the stream).
  void unscale(float* g, int64_t n, float scale) const;
  bool takeNonFinite() const;

  // [SECTION] Compute spans. On the CPU a span is the host clock around the work. On the GPU
  // the host only enqueues, so a span's ends are CUDA events on the rank's stream, turned into
  // the host clock at endStep() against a reference event taken at beginStep() with the host
  // time (the stream idle then, so the two agree to microseconds). Comm spans keep the host
  // clock: collectives wait for the stream first, so there both clocks tell the same time.
  struct OpenSpan {
    SpanRecorder* rec = nullptr;  // null: not recorded
    Span span;
    int event = -1;  // GPU: the start event
  };
  OpenSpan openSpan(SpanRecorder* rec, SpanKind kind, int64_t step, const char* op);
  void closeSpan(OpenSpan& s);
  // GPU: wait for the stream; take the reference / record the step's spans. Outside a step
  // (evaluation) GPU spans are host-clocked, waiting for the stream at their end.
  void beginStep();
  void endStep();

 private:
  Compute() = default;
  int nextEvent();

  int m_gpu = -1;
  std::string m_kernel;
  void (*m_gemmCpu)(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                    float*, int) = nullptr;
  void (*m_gemmGpu)(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                    float*, int, void*) = nullptr;
  void* m_stream = nullptr;
  std::unique_ptr<DeviceAllocator> m_alloc;
  // GPU: the loss (double, floats 0-1) and hit count (int, 2) softmaxXent copies back, the
  // flushed count (uint64, 4-5) and the non-finite flag (int, 6) of mixed precision.
  mutable Tensor m_scratch;
  mutable int64_t m_flushed = 0;     // CPU: roundHalf's count
  mutable bool m_nonFinite = false;  // CPU: unscale's finding
  // GPU spans of the step in flight.
  void* m_refEvent = nullptr;
  int64_t m_refNs = 0;
  bool m_inStep = false;
  std::vector<void*> m_events;  // reused every step
  int m_usedEvents = 0;
  struct Pending {
    SpanRecorder* rec;
    Span span;
    int start, end;
  };
  std::vector<Pending> m_pending;
  std::vector<void*> m_marks;
};

// A compute span from construction to destruction (ScopedSpan for device work).
class ComputeSpan {
 public:
  ComputeSpan(Compute& c, SpanRecorder* rec, SpanKind kind, int64_t step, const char* op = "")
      : m_c(c), m_open(c.openSpan(rec, kind, step, op)) {}
  ~ComputeSpan() {
    try {
      m_c.closeSpan(m_open);
    } catch (...) {  // a CUDA failure: the rank's next call reports it
    }
  }
  ComputeSpan(const ComputeSpan&) = delete;
  ComputeSpan& operator=(const ComputeSpan&) = delete;

 private:
  Compute& m_c;
  Compute::OpenSpan m_open;
};

}  // namespace paralab
