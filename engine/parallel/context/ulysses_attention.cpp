// Ulysses's all-to-all attention over the cp group (see ulysses_attention.h). The layouts, on
// one rank with n = s / N tokens per window, h = its heads' width, w = h / N:
//   qkv   [B n, 3h]   the rank's rows, window by window, its pieces in order: q | k | v
//   a peer block      [B n, 3w] (or [B n, w]): rows of one rank, columns of one head group
//   kept  [B s, 3w] q | k | v of the rank's head group for whole windows, in position order,
//         then [B, H/N, s, s] their probabilities
// See tests/engine/tst_context_ulysses.cpp.
#include "parallel/context/ulysses_attention.h"

#include <algorithm>

#include "comm/communicator.h"
#include "device/compute.h"
#include "parallel/pipeline/pipeline.h"  // microSpanLabel

namespace paralab {

UlyssesAttention::UlyssesAttention(Communicator& cp, int seq, bool zigzag, int heads, int width,
                                   Compute& compute, MemoryTracker* memory, SpanRecorder* spans)
    : m_cp(cp),
      m_rank(cp.rank()),
      m_N(cp.size()),
      m_S(seq),
      m_NH(heads),
      m_h(width),
      m_w(width / cp.size()),
      m_zigzag(zigzag),
      m_chunks(cpChunksOf(cp.rank(), cp.size(), seq, zigzag)),
      m_compute(compute),
      m_memory(memory),
      m_spans(spans) {
  if (heads % m_N != 0)
    throw std::invalid_argument("cp-kind: ulysses splits the " + std::to_string(heads) +
                                " heads of a rank over --cp " + std::to_string(m_N) +
                                " (allowed: heads / tp a multiple of cp)");
  if (seq % (zigzag ? 2 * m_N : m_N) != 0)
    throw std::invalid_argument("cp: --seq " + std::to_string(seq) + " must be a multiple of " +
                                std::to_string(zigzag ? 2 * m_N : m_N));
}

int64_t UlyssesAttention::keptFloats(int B) const {
  return int64_t(B) * m_S * 3 * m_w + int64_t(B) * (m_NH / m_N) * m_S * m_S;
}

int64_t UlyssesAttention::forwardFloats(int B) const {
  // Two all-to-alls: [B n, 3h] and [B n, h], each sending N − 1 of its N blocks.
  return int64_t(m_N - 1) * B * rows() * 4 * m_w;
}

int64_t UlyssesAttention::workspaceBytes() const {
  return m_send.bytes() + m_recv.bytes() + m_y.bytes() + m_dqkv.bytes() + m_scratch.bytes();
}

void UlyssesAttention::ensure(int B) {
  if (B <= m_capacity) return;
  auto work = [&](int64_t n) { return m_compute.tensor({n}, MemCategory::Workspace, m_memory); };
  for (Tensor* t : {&m_send, &m_recv, &m_y, &m_dqkv, &m_scratch}) *t = Tensor();  // free first
  const int64_t rowsAll = int64_t(B) * m_S;
  m_send = work(int64_t(B) * rows() * 3 * m_h);
  m_recv = work(int64_t(B) * rows() * 3 * m_h);
  m_y = work(rowsAll * m_w);
  m_dqkv = work(rowsAll * 3 * m_w);
  m_scratch = work(std::max<int64_t>(int64_t(B) * (m_NH / m_N) * m_S, m_S));
  m_capacity = B;
}

void UlyssesAttention::toWindows(float* windows, const float* from, int B, int cols) const {
  const int n = rows();
  for (int q = 0; q < m_N; ++q) {
    const float* block = from + int64_t(q) * B * n * cols;
    const CpChunks theirs = cpChunksOf(q, m_N, m_S, m_zigzag);
    int64_t row = 0;
    for (int b = 0; b < B; ++b)
      for (const auto& [p0, len] : theirs.pieces) {
        m_compute.copyRows(windows + (int64_t(b) * m_S + p0) * cols, cols, block + row * cols, cols,
                           len, cols);
        row += len;
      }
  }
}

void UlyssesAttention::toShards(float* to, const float* windows, int B, int cols) const {
  const int n = rows();
  for (int q = 0; q < m_N; ++q) {
    float* block = to + int64_t(q) * B * n * cols;
    const CpChunks theirs = cpChunksOf(q, m_N, m_S, m_zigzag);
    int64_t row = 0;
    for (int b = 0; b < B; ++b)
      for (const auto& [p0, len] : theirs.pieces) {
        m_compute.copyRows(block + row * cols, cols, windows + (int64_t(b) * m_S + p0) * cols, cols,
                           len, cols);
        row += len;
      }
  }
}

void UlyssesAttention::exchange(const float* send, float* recv, int64_t count) {
  m_compute.sync();  // on the GPU the communicator reads `send` from a stream of its own
  m_cp.allToAll(send, recv, count, m_compute.device());
}

// [SECTION] Forward: sequence shards to head shards, attention, and back

void UlyssesAttention::forward(int64_t step, int micro, float* out, float* kept, const float* qkv,
                               int B, bool inBackward) {
  ensure(B);
  const int64_t bn = int64_t(B) * rows();
  const int hs = m_NH / m_N;  // heads of the rank's group
  float* qkvHeads = kept;     // [B s, 3w]
  float* probs = kept + int64_t(B) * m_S * 3 * m_w;
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, inBackward ? SpanKind::Backward : SpanKind::Forward,
                       step + 1, microSpanLabel(!inBackward, micro));
  };
  {
    auto s = span();  // block g: the rank's rows, q | k | v of head group g
    for (int g = 0; g < m_N; ++g)
      for (int part = 0; part < 3; ++part)
        m_compute.copyRows(m_send.data() + g * bn * 3 * m_w + part * m_w, 3 * m_w,
                           qkv + part * m_h + g * m_w, 3 * m_h, bn, m_w);
  }
  exchange(m_send.data(), m_recv.data(), bn * 3 * m_w);
  {
    auto s = span();
    toWindows(qkvHeads, m_recv.data(), B, 3 * m_w);
    m_compute.attention(m_y.data(), probs, qkvHeads, B, m_S, m_w, hs);
    toShards(m_send.data(), m_y.data(), B, m_w);
  }
  exchange(m_send.data(), m_recv.data(), bn * m_w);
  auto s = span();  // block g: the output of head group g for the rank's rows
  for (int g = 0; g < m_N; ++g)
    m_compute.copyRows(out + g * m_w, m_h, m_recv.data() + g * bn * m_w, m_w, bn, m_w);
}

// [SECTION] Backward: dout to head shards, attention's backward, dq | dk | dv back

void UlyssesAttention::backward(int64_t step, int micro, float* dqkv, const float* dout,
                                const float*, const float* kept, const float*, int B) {
  ensure(B);
  const int64_t bn = int64_t(B) * rows();
  const int hs = m_NH / m_N;
  const float* qkvHeads = kept;
  const float* probs = kept + int64_t(B) * m_S * 3 * m_w;
  auto span = [&] {
    return ComputeSpan(m_compute, m_spans, SpanKind::Backward, step + 1,
                       microSpanLabel(false, micro));
  };
  {
    auto s = span();
    for (int g = 0; g < m_N; ++g)
      m_compute.copyRows(m_send.data() + g * bn * m_w, m_w, dout + g * m_w, m_h, bn, m_w);
  }
  exchange(m_send.data(), m_recv.data(), bn * m_w);
  {
    auto s = span();
    toWindows(m_y.data(), m_recv.data(), B, m_w);  // dout of the rank's heads
    m_compute.attentionBackward(m_dqkv.data(), m_scratch.data(), m_y.data(), qkvHeads, probs, B,
                                m_S, m_w, hs);
    toShards(m_send.data(), m_dqkv.data(), B, 3 * m_w);
  }
  exchange(m_send.data(), m_recv.data(), bn * 3 * m_w);
  auto s = span();  // block g: dq | dk | dv of head group g for the rank's rows
  for (int g = 0; g < m_N; ++g)
    for (int part = 0; part < 3; ++part)
      m_compute.copyRows(dqkv + part * m_h + g * m_w, 3 * m_h,
                         m_recv.data() + g * bn * 3 * m_w + part * m_w, 3 * m_w, bn, m_w);
}

}  // namespace paralab
