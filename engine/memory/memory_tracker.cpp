// Per-rank memory accounting (see memory_tracker.h).
#include "memory/memory_tracker.h"

namespace paralab {

std::string_view memCategoryName(MemCategory c) {
  switch (c) {
    case MemCategory::Params: return "params";
    case MemCategory::Grads: return "grads";
    case MemCategory::Optimizer: return "optimizer";
    case MemCategory::Activations: return "activations";
    case MemCategory::Comm: return "comm";
    case MemCategory::Workspace: return "workspace";
    case MemCategory::Master: return "master";
  }
  return "?";
}

std::string_view memDtypeName(int bytesPerValue, std::string_view halfName) {
  return bytesPerValue == 2 ? halfName : "fp32";
}

Fp32Allocations::Fp32Allocations(MemoryTracker* tracker) : m_tracker(tracker) {
  if (!m_tracker) return;
  for (int i = 0; i < kMemCategories; ++i) {
    m_saved[size_t(i)] = m_tracker->valueBytes(MemCategory(i));
    m_tracker->setValueBytes(MemCategory(i), 4);
  }
}

Fp32Allocations::~Fp32Allocations() {
  if (!m_tracker) return;
  for (int i = 0; i < kMemCategories; ++i)
    m_tracker->setValueBytes(MemCategory(i), m_saved[size_t(i)]);
}

int64_t MemorySnapshot::total() const {
  int64_t t = 0;
  for (int64_t b : current) t += b;
  return t;
}

static void raiseTo(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void MemoryTracker::add(MemCategory c, int64_t bytes) {
  const int i = static_cast<int>(c);
  raiseTo(m_peak[i], m_current[i].fetch_add(bytes, std::memory_order_relaxed) + bytes);
  raiseTo(m_peakTotal, m_total.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryTracker::sub(MemCategory c, int64_t bytes) {
  m_current[static_cast<int>(c)].fetch_sub(bytes, std::memory_order_relaxed);
  m_total.fetch_sub(bytes, std::memory_order_relaxed);
}

MemorySnapshot MemoryTracker::snapshot() const {
  MemorySnapshot s;
  for (int i = 0; i < kMemCategories; ++i) {
    s.current[i] = m_current[i].load(std::memory_order_relaxed);
    s.peak[i] = m_peak[i].load(std::memory_order_relaxed);
  }
  s.peakTotal = m_peakTotal.load(std::memory_order_relaxed);
  return s;
}

void MemoryTracker::resetPeaks() {
  for (int i = 0; i < kMemCategories; ++i) m_peak[i].store(m_current[i].load());
  m_peakTotal.store(m_total.load());
}

}  // namespace paralab
