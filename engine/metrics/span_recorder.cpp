// Bounded span buffer (see span_recorder.h).
#include "metrics/span_recorder.h"

#include <algorithm>

namespace paralab {

std::string_view spanKindName(SpanKind k) {
  switch (k) {
    case SpanKind::Data: return "data";
    case SpanKind::Forward: return "forward";
    case SpanKind::Backward: return "backward";
    case SpanKind::Optimizer: return "optimizer";
    case SpanKind::Comm: return "comm";
    case SpanKind::Idle: return "idle";
  }
  return "?";
}

SpanRecorder::SpanRecorder(size_t capacity) : m_ring(capacity) {}

void SpanRecorder::record(const Span& s) {
  std::lock_guard lock(m_mutex);
  m_ring[m_next] = s;
  m_next = (m_next + 1) % m_ring.size();
  if (m_size < m_ring.size()) ++m_size;
}

std::vector<Span> SpanRecorder::recent(size_t maxCount) const {
  std::lock_guard lock(m_mutex);
  const size_t n = std::min(maxCount, m_size);
  std::vector<Span> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(m_ring[(m_next + m_ring.size() - n + i) % m_ring.size()]);
  return out;
}

// Only the spans asked for are copied, not the whole ring first (a snapshot of 8 ranks asks
// 30 times a second).
std::vector<Span> SpanRecorder::since(int64_t step) const {
  std::vector<Span> out;
  std::lock_guard lock(m_mutex);
  copySince(step, out);
  return out;
}

bool SpanRecorder::trySince(int64_t step, std::vector<Span>& out) const {
  if (!tryLockBriefly(m_mutex)) return false;
  std::lock_guard lock(m_mutex, std::adopt_lock);
  out.clear();
  copySince(step, out);
  return true;
}

void SpanRecorder::copySince(int64_t step, std::vector<Span>& out) const {
  for (size_t i = m_size; i > 0; --i) {
    const Span& s = m_ring[(m_next + m_ring.size() - i) % m_ring.size()];
    if (s.step >= step) out.push_back(s);
  }
}

void SpanRecorder::clear() {
  std::lock_guard lock(m_mutex);
  m_next = m_size = 0;
}

}  // namespace paralab
