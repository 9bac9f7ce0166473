// Overlapped tensor parallelism (`--tp-overlap`, with --sp): each exchange of the column-then-row
// pair (column_row.h) with the GEMM beside it, cut into the tp ranks' row blocks. Try:
//   paralab-run --tp 2 --sp --tp-overlap --link ethernet --json
// See tests/engine/tst_tp_overlap.cpp (equal to serial; less exposed tp communication).
//
// The collective-matmul decomposition (Wang et al. 2023, "Overlap Communication with Dependent
// Computation via Decomposition in Large Deep Learning Models", ASPLOS), as PyTorch's AsyncTP
// does it (torch.distributed._symmetric_memory: fused_all_gather_matmul and
// fused_matmul_reduce_scatter; Megatron-LM's --tp-comm-overlap is the same idea in Transformer
// Engine's userbuffers). We follow AsyncTP's ring, with the communicator's point-to-point
// messages, rank t of T sending to t + 1 and receiving from t - 1:
//   all-gather then GEMM: the rank computes its own row block first while it passes the block
//     on; at ring step s (1 .. T - 1) block (t - s) arrives and is passed on, and its GEMM runs
//     while the next block travels. Same bytes as a ring all-gather: (T - 1) blocks sent.
//   GEMM then reduce-scatter: at step s (0 .. T - 1) the rank computes its partial sums of row
//     block (t - 1 - s), adds the running sum that arrived from t - 1, and sends it to t + 1;
//     the sum of block b starts at rank b + 1 and ends, complete, at rank b after T - 1
//     steps. The next block's GEMM runs while the sum travels. Same bytes as a ring
//     reduce-scatter.
// In the backward the column-parallel layer's input gradient is the row-parallel side (partial
// sums to reduce-scatter) and the row-parallel layer's the column-parallel side (its output
// gradient all-gathered); each row block's weight gradient is added as it comes (Linear
// accumulates), so the sums equal the whole-GEMM ones up to float rounding.
// Overlap: on thread ranks a send returns at once (the message is copied; an emulated link
// delivers it latency + bytes / bandwidth later), so a block travels while the next computes,
// one span per message ("send→recv · ring tp ...") from the send to its arrival, as cp's ring
// records it (ring_attention.h), and only what is left shows as waiting in recv. Under MPI and
// NCCL a send may wait for its recv: the two calls run together, even ranks sending first, and
// nothing hides (the same sums).
#include <mutex>
#include <set>
#include <string>

#include "comm/communicator.h"
#include "device/compute.h"
#include "parallel/pipeline/pipeline.h"
#include "parallel/tensor/column_row.h"

namespace paralab {

namespace {

// "send→recv · ring tp all-gather, step 1 of 3": a span's op lives as long as the program
// (span_recorder.h), so each label is kept once.
const char* transferLabel(const char* what, int step, int steps) {
  static std::mutex mutex;
  static std::set<std::string> labels;
  const std::string label = std::string(kRingTransferOp) + what + ", step " + std::to_string(step) +
                            " of " + std::to_string(steps);
  std::lock_guard lock(mutex);
  return labels.insert(label).first->c_str();
}

}  // namespace

void ColumnRowStage::setTpOverlap(bool on) {
  m_tpOverlap = on && m_sp;
  m_posted = m_tp.backend() == Backend::Thread;
}

void ColumnRowStage::ringSend(const float* send, int64_t count, int64_t step,
                              const char* label) const {
  ready();  // the block is complete (on a GPU the communicator reads it from its own stream)
  m_tp.send(send, count, (m_tp.rank() + 1) % m_T, device());
  // Handed over (copied): an emulated link delivers it this long after the send.
  int64_t start = nowNs(), arrives = start;
  if (m_tp.emulated()) arrives += m_tp.link().stepNs(count * int64_t(sizeof(float)), 0);
  if (m_spans)
    m_spans->record(
        Span{SpanKind::Comm, start, arrives, count * int64_t(sizeof(float)), label, step + 1});
}

void ColumnRowStage::ringRecv(float* recv, int64_t count) const {
  ready();  // no kernel still reads the buffer the message lands in
  m_tp.recv(recv, count, (m_tp.rank() + m_T - 1) % m_T, device());
}

void ColumnRowStage::ringExchange(const float* send, float* recv, int64_t count, int64_t step,
                                  const char* label) const {
  ready();
  const int next = (m_tp.rank() + 1) % m_T, prev = (m_tp.rank() + m_T - 1) % m_T;
  const int64_t start = nowNs();
  if (m_tp.rank() % 2 == 0) {  // a send may wait for its recv: even ranks send first
    m_tp.send(send, count, next, device());
    m_tp.recv(recv, count, prev, device());
  } else {
    m_tp.recv(recv, count, prev, device());
    m_tp.send(send, count, next, device());
  }
  if (m_spans)
    m_spans->record(
        Span{SpanKind::Comm, start, nowNs(), count * int64_t(sizeof(float)), label, step + 1});
}

const float* ColumnRowStage::gatherThenCompute(const SpanAt& at, const float* mine, float* all,
                                               const MicroRows& r, int64_t width,
                                               const OnRows& use) {
  const auto compute = [&](const float* rows, int64_t row0, int count) {
    ComputeSpan s(m_compute, m_spans, at.kind, at.step + 1,
                  microSpanLabel(at.kind == SpanKind::Forward, at.micro));
    use(rows, row0, count);
  };
  if (!m_tpOverlap) {
    const float* rows = gatherRows(mine, all, r, width);
    compute(rows, 0, r.full);
    return rows;
  }
  const int T = m_T, t = m_tp.rank();
  const int64_t n = int64_t(r.local) * width;
  const auto block = [&](int b) { return all + int64_t(b) * n; };
  const auto label = [&](int s) { return transferLabel("tp all-gather", s, T - 1); };
  if (mine != block(t)) m_compute.copy(block(t), mine, n);
  // Own block first: nothing to wait for.
  if (m_posted) ringSend(block(t), n, at.step, label(1));
  compute(all, int64_t(t) * r.local, r.local);
  for (int s = 1; s < T; ++s) {  // step s: block (t - s) arrives from t - 1
    const int b = (t - s + T) % T;
    if (m_posted) {
      ringRecv(block(b), n);
      if (s < T - 1) ringSend(block(b), n, at.step, label(s + 1));
    } else {
      ringExchange(block((b + 1) % T), block(b), n, at.step, label(s));
    }
    compute(all, int64_t(b) * r.local, r.local);
  }
  return all;
}

float* ColumnRowStage::computeThenSum(const SpanAt& at, float* partial, float* local,
                                      const MicroRows& r, int64_t width, const MakeRows& make) {
  const auto span = [&] {
    return ComputeSpan(m_compute, m_spans, at.kind, at.step + 1,
                       microSpanLabel(at.kind == SpanKind::Forward, at.micro));
  };
  if (!m_tpOverlap) {
    float* dst = m_sp ? partial : local;
    {
      auto s = span();
      make(0, r.full, dst);
    }
    sumRows(partial, local, r, width);
    return local;
  }
  const int T = m_T, t = m_tp.rank();
  const int64_t n = int64_t(r.local) * width;
  // The running sum this rank computes (the first block of the scratch) and the one arriving
  // (the second; SP's scratch holds T >= 2 blocks).
  float* mine = partial;
  float* arriving = partial + n;
  for (int s = 0; s < T; ++s) {
    const int b = (t - 1 - s + 2 * T) % T;
    const bool last = s == T - 1;  // block t: its sum stays here
    float* dst = last ? local : mine;
    {
      auto sp = span();
      make(int64_t(b) * r.local, r.local, dst);
    }
    if (s > 0) {
      if (m_posted) ringRecv(arriving, n);  // ordered: it came with the last exchange
      auto sp = span();
      m_compute.residualAdd(dst, arriving, long(n));
    }
    if (last) break;
    const char* label = transferLabel("tp reduce-scatter", s + 1, T - 1);
    if (m_posted)
      ringSend(dst, n, at.step, label);
    else
      ringExchange(dst, arriving, n, at.step, label);
  }
  return local;
}

}  // namespace paralab
