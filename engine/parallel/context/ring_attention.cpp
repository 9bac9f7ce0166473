// Ring attention over the cp group (see ring_attention.h). The layouts, on one rank with
// n = s / N tokens per window and h = heads x head size:
//   qkv  [B n, 3h]   the rank's rows, window by window, its pieces in order: q | k | v
//   out  [B n, h]    attention's output, the same rows
//   lse  [B, pieces, heads, piece length]: one [heads, length] block per (window, piece), the
//                    layout attention_blocks keeps per query chunk (B = 1 per call)
//   a K/V block      [B n, 2h]: k | v of another rank's rows, in that rank's piece order;
//                    during the backward its dK | dV [B n, 2h] travels right behind it.
// Every call into the kernels is one (window, query piece, key piece) triple with B = 1, so
// the pieces need not be adjacent. The kernels run through Compute (the CPU's or the GPU's
// attention_blocks), every buffer lives on the rank's device, and the ring's messages move
// device buffers on the GPU (Communicator send/recv with Device::Cuda).
#include "parallel/context/ring_attention.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <stdexcept>

#include "comm/communicator.h"
#include "cpu/attention_blocks.h"
#include "device/compute.h"
#include "metrics/intervals.h"
#include "parallel/pipeline/pipeline.h"  // microSpanLabel

namespace paralab {

namespace kn = kernels;

// [SECTION] Transfer spans

namespace {

std::atomic<bool> g_orderEveryRing{false};

// "send→recv · ring K/V forward, step 1 of 3": a span's op must live as long as the program
// (span_recorder.h), so each label is kept once, whatever the ring that asked for it.
const char* transferLabel(const char* what, int step, int steps) {
  static std::mutex mutex;
  static std::set<std::string> labels;
  const std::string label = std::string(kRingTransferOp) + what + ", step " +
                            std::to_string(step) + " of " + std::to_string(steps);
  std::lock_guard lock(mutex);
  return labels.insert(label).first->c_str();
}

using intervals::Interval;
using intervals::merged;

}  // namespace

RingOverlap ringOverlap(const std::vector<Span>& spans) {
  RingOverlap o;
  std::vector<Interval> transfer, compute, calls;
  for (const Span& s : spans) {
    if (isRingTransfer(s)) {
      transfer.push_back({s.startNs, s.endNs});
      ++o.transfers;
      o.bytes += s.bytes;
    } else if (s.kind == SpanKind::Comm) {
      calls.push_back({s.startNs, s.endNs});
    } else if (s.kind != SpanKind::Idle) {
      compute.push_back({s.startNs, s.endNs});
    }
  }
  const std::vector<Interval> inFlight = merged(transfer);
  int64_t total = 0;
  for (const auto& [a, b] : inFlight) total += b - a;
  o.transferMs = double(total) * 1e-6;
  o.hiddenMs = double(intervals::overlap(inFlight, merged(compute))) * 1e-6;
  o.exposedMs = double(intervals::overlap(inFlight, merged(calls))) * 1e-6;
  return o;
}

void RingAttention::orderEveryRing(bool on) { g_orderEveryRing = on; }

int CpChunks::tokens() const {
  int n = 0;
  for (const auto& p : pieces) n += p.second;
  return n;
}

long CpChunks::visiblePairs() const {
  long pairs = 0;
  for (const auto& [q0, len] : pieces) pairs += kn::attention_block_pairs(q0, len, 0, q0 + len);
  return pairs;
}

CpChunks cpChunksOf(int cpRank, int cp, int seq, bool zigzag) {
  CpChunks c;
  if (zigzag) {
    const int K = seq / (2 * cp);
    c.pieces = {{cpRank * K, K}, {(2 * cp - 1 - cpRank) * K, K}};
  } else {
    const int K = seq / cp;
    c.pieces = {{cpRank * K, K}};
  }
  return c;
}

void RingAttention::eachPiece(int B, const std::function<void(int64_t, int)>& run) const {
  int64_t row = 0;
  for (int b = 0; b < B; ++b)
    for (const auto& piece : m_chunks.pieces) {
      run(row, piece.second);
      row += piece.second;
    }
}

RingAttention::RingAttention(Communicator& cp, int seq, bool zigzag, int heads, int width,
                             Compute& compute, MemoryTracker* memory, SpanRecorder* spans)
    : m_cp(cp),
      m_rank(cp.rank()),
      m_N(cp.size()),
      m_S(seq),
      m_NH(heads),
      m_h(width),
      m_zigzag(zigzag),
      m_chunks(cpChunksOf(cp.rank(), cp.size(), seq, zigzag)),
      m_compute(compute),
      m_memory(memory),
      m_spans(spans),
      m_posted(cp.backend() == Backend::Thread && !g_orderEveryRing) {
  if (seq % (zigzag ? 2 * m_N : m_N) != 0)
    throw std::invalid_argument("cp: --seq " + std::to_string(seq) + " must be a multiple of the " +
                                std::to_string(zigzag ? 2 * m_N : m_N) +
                                " chunks it is cut into (allowed: --seq a multiple of " +
                                (zigzag ? "2 x --cp under --cp-order zigzag)" : "--cp)"));
}

int64_t RingAttention::forwardFloats(int B) const {
  return int64_t(m_N - 1) * B * tokens() * 2 * m_h;
}
int64_t RingAttention::backwardFloats(int B) const { return 2 * forwardFloats(B); }

void RingAttention::ensure(int B) {
  if (B <= m_capacity) return;
  auto work = [&](int64_t n) { return m_compute.tensor({n}, MemCategory::Workspace, m_memory); };
  for (Tensor* t : {&m_cur, &m_next, &m_l, &m_D, &m_scores}) *t = Tensor();  // free first
  const int64_t rows = int64_t(B) * tokens();
  m_cur = work(rows * 4 * m_h);
  m_next = work(rows * 4 * m_h);
  m_l = work(lseFloats(B));
  m_D = work(lseFloats(B));
  m_scores = work(m_S);
  m_capacity = B;
}

void RingAttention::pack(const float* qkv, int B, float* kv) const {
  m_compute.copyRows(kv, 2 * m_h, qkv + m_h, 3 * m_h, int64_t(B) * tokens(), 2 * m_h);
}

void RingAttention::sendOn(const float* send, float* recv, int64_t count, int64_t step,
                           const char* label) {
  const int next = (m_rank + 1) % m_N, prev = (m_rank + m_N - 1) % m_N;
  const Device d = m_compute.device();
  // On the GPU the communicator reads `send` from its own stream: the block must be complete
  // (packed, or its dK/dV folded) first. This also finishes any fold still reading `recv`.
  m_compute.sync();
  int64_t start = nowNs(), arrives = 0;
  if (m_posted) {  // returns at once; receive() collects the matching message later
    m_cp.send(send, count, next, d);
    // Handed over (copied): with no emulated link it is there; an emulated link delivers it
    // this long after the send (ThreadComm::doSend). The copy itself is the send call's.
    start = arrives = nowNs();
    if (m_cp.emulated()) arrives += m_cp.linkTo(next).stepNs(count * int64_t(sizeof(float)), 0);
  } else if (m_rank % 2 == 0) {  // a send that may wait for its recv: even ranks send first
    m_cp.send(send, count, next, d);
    m_cp.recv(recv, count, prev, d);
    arrives = nowNs();
  } else {
    m_cp.recv(recv, count, prev, d);
    m_cp.send(send, count, next, d);
    arrives = nowNs();
  }
  if (m_spans)
    m_spans->record(
        Span{SpanKind::Comm, start, arrives, count * int64_t(sizeof(float)), label, step});
}

void RingAttention::receive(float* recv, int64_t count) {
  // Returns with the block in `recv` (the communicator waits for its own copy on the GPU).
  if (m_posted) m_cp.recv(recv, count, (m_rank + m_N - 1) % m_N, m_compute.device());
}

// [SECTION] Forward

void RingAttention::foldForward(float* o, float* m, float* l, const float* qkv, const float* kv,
                                int ldkv, int src, int B) {
  const int n = tokens(), hs = m_h / m_NH;
  const CpChunks theirs = cpChunksOf(src, m_N, m_S, m_zigzag);
  for (int b = 0; b < B; ++b) {
    int qRow = b * n;
    for (const auto& [q0, Tq] : m_chunks.pieces) {
      const int64_t stats = int64_t(qRow) * m_NH;  // this (window, piece)'s [heads, Tq] block
      int kRow = b * n;
      for (const auto& [k0, Tk] : theirs.pieces) {
        const float* k = kv + int64_t(kRow) * ldkv;
        m_compute.attentionBlockForward(o + int64_t(qRow) * m_h, m + stats, l + stats,
                                        m_scores.data(), qkv + int64_t(qRow) * 3 * m_h, 3 * m_h,
                                        k, k + m_h, ldkv, 1, m_NH, hs, q0, Tq, k0, Tk);
        kRow += Tk;
      }
      qRow += Tq;
    }
  }
}

void RingAttention::forward(int64_t step, int micro, float* out, float* lse, const float* qkv,
                            int B, bool inBackward) {
  ensure(B);
  const int hs = m_h / m_NH;
  const int64_t rows = int64_t(B) * tokens(), block = rows * 2 * m_h;
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, inBackward ? SpanKind::Backward : SpanKind::Forward,
                       step + 1, microSpanLabel(!inBackward, micro));
  };
  {
    auto s = span();
    // The running output starts in `out`, the running max in `lse` (finished in place).
    m_compute.attentionBlocksInit(out, lse, m_l.data(), 1, int(rows), m_NH, hs);  // elementwise
    pack(qkv, B, m_cur.data());
  }
  // Step i: the block of rank (r - i), passed on while (posted sends) it is folded in.
  const char* what = inBackward ? "K/V recompute" : "K/V forward";
  for (int i = 0; i < m_N; ++i) {
    const bool more = i < m_N - 1;
    const float* kv = m_cur.data();
    if (more) sendOn(kv, m_next.data(), block, step + 1, transferLabel(what, i + 1, m_N - 1));
    {
      auto s = span();
      if (i == 0)  // this rank's own keys, read in place
        foldForward(out, lse, m_l.data(), qkv, qkv + m_h, 3 * m_h, m_rank, B);
      else
        foldForward(out, lse, m_l.data(), qkv, kv, 2 * m_h, (m_rank - i + m_N) % m_N, B);
    }
    if (more) {
      receive(m_next.data(), block);
      std::swap(m_cur, m_next);
    }
  }
  auto s = span();
  eachPiece(B, [&](int64_t row, int Tq) {
    m_compute.attentionBlocksFinish(out + row * m_h, lse + row * m_NH, out + row * m_h,
                                    lse + row * m_NH, m_l.data() + row * m_NH, 1, Tq, m_NH, hs);
  });
}

// [SECTION] Backward

void RingAttention::foldBackward(float* dqkv, float* dkv, const float* dout, const float* lse,
                                 const float* qkv, const float* kv, int ldkv, int src, int B) {
  const int n = tokens(), hs = m_h / m_NH;
  const CpChunks theirs = cpChunksOf(src, m_N, m_S, m_zigzag);
  for (int b = 0; b < B; ++b) {
    int qRow = b * n;
    for (const auto& [q0, Tq] : m_chunks.pieces) {
      const int64_t stats = int64_t(qRow) * m_NH;
      int kRow = b * n;
      for (const auto& [k0, Tk] : theirs.pieces) {
        const int64_t at = int64_t(kRow) * ldkv;
        m_compute.attentionBlockBackward(dqkv + int64_t(qRow) * 3 * m_h, dkv + at,
                                         dkv + at + m_h, dout + int64_t(qRow) * m_h, lse + stats,
                                         m_D.data() + stats, qkv + int64_t(qRow) * 3 * m_h,
                                         3 * m_h, kv + at, kv + at + m_h, ldkv, 1, m_NH, hs, q0,
                                         Tq, k0, Tk);
        kRow += Tk;
      }
      qRow += Tq;
    }
  }
}

// The block of rank (r - i) visits this rank at step i. Its dK/dV starts on the next rank
// (step 1: this rank's own share goes straight into dqkv at step 0), rides one step behind it,
// and after the last rank (r - 1 when it started at r) goes home. At step i a rank passes on
// the K/V it holds before folding it in (if anyone still needs it, i < N - 1) and the dK/dV
// after (if it carries any, i >= 1). Buffers: [K/V | dK/dV] in hand (m_cur) and arriving.
void RingAttention::backward(int64_t step, int micro, float* dqkv, const float* dout,
                             const float* out, const float* lse, const float* qkv, int B) {
  ensure(B);
  const int hs = m_h / m_NH;
  const int64_t rows = int64_t(B) * tokens(), block = rows * 2 * m_h;
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, SpanKind::Backward, step + 1,
                       microSpanLabel(false, micro));
  };
  {
    auto s = span();
    eachPiece(B, [&](int64_t row, int Tq) {
      m_compute.attentionBlocksDelta(m_D.data() + row * m_NH, out + row * m_h,
                                     dout + row * m_h, 1, Tq, m_NH, hs);
    });
    m_compute.zero(dqkv, rows * 3 * m_h);
    pack(qkv, B, m_cur.data());
  }
  for (int i = 0; i < m_N; ++i) {
    const bool more = i < m_N - 1, carries = i >= 1;
    float *kv = m_cur.data(), *dkv = kv + block;
    float* arriving = m_next.data();  // its K/V, then its dK/dV (the last step: ours, home)
    if (more)
      sendOn(kv, arriving, block, step + 1, transferLabel("K/V backward", i + 1, m_N - 1));
    {
      auto s = span();
      if (i == 0) {  // this rank's own keys, read in place; dK/dV straight into dqkv
        foldBackward(dqkv, dqkv + m_h, dout, lse, qkv, qkv + m_h, 3 * m_h, m_rank, B);
      } else {
        if (i == 1) m_compute.zero(dkv, block);  // the block's dK/dV starts here
        foldBackward(dqkv, dkv, dout, lse, qkv, kv, 2 * m_h, (m_rank - i + m_N) % m_N, B);
      }
    }
    if (carries)
      sendOn(dkv, arriving + block, block, step + 1, transferLabel("dK/dV backward", i, m_N - 1));
    if (more) receive(arriving, block);
    if (carries) receive(arriving + block, block);
    if (more) std::swap(m_cur, m_next);
  }
  if (m_N == 1) return;
  auto s = span();  // this rank's dK/dV, home after visiting every other rank
  m_compute.addRows(dqkv + m_h, 3 * m_h, m_next.data() + block, 2 * m_h, rows, 2 * m_h);
}

}  // namespace paralab
