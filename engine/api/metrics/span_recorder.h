// Spans: what each rank was doing when, in ns of a steady clock, in a bounded buffer.
// The timeline view and the compute/comm/idle breakdown are made from these.
// See tests/engine/tst_metrics.cpp.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

namespace paralab {

enum class SpanKind : int { Data, Forward, Backward, Optimizer, Comm, Idle };
std::string_view spanKindName(SpanKind k);  // "data", "forward", ...

struct Span {
  SpanKind kind = SpanKind::Forward;
  int64_t startNs = 0, endNs = 0;  // steady clock
  int64_t bytes = 0;               // for comm spans
  const char* op = "";             // static string: "allreduce", "layer 3", ...
  int64_t step = 0;
};

// A message of cp's ring attention on its way to the next rank (parallel/context/ring_attention.h): a
// Comm span whose op starts with kRingTransferOp. It runs while the rank computes, so the views
// draw these on a row of their own (the window's timeline, the Chrome trace).
inline constexpr std::string_view kRingTransferOp = "send→recv · ring ";
inline bool isRingTransfer(SpanKind kind, std::string_view op) {
  return kind == SpanKind::Comm && op.starts_with(kRingTransferOp);
}
inline bool isRingTransfer(const Span& s) { return isRingTransfer(s.kind, s.op ? s.op : ""); }

// Spans of one rank's step that were not kept (a step's line carries kMaxLineSpans a rank at
// most, metrics/step_views.h: the rest are counted). A job's and an opened run's snapshots
// carry these beside their spans; a thread run keeps every span.
struct SpansLeftOut {
  int64_t step = 0;
  int rank = 0;
  int64_t count = 0;
};

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Locks `m` if it is free within a few tries (a holder that runs frees it in well under a µs;
// one preempted while holding it would make the caller wait for its next turn).
inline bool tryLockBriefly(std::mutex& m) {
  for (int i = 0; i < 64; ++i)
    if (m.try_lock()) return true;
  return false;
}

// A ring of the last `capacity` spans of one rank. Written by that rank, read by snapshots.
class SpanRecorder {
 public:
  explicit SpanRecorder(size_t capacity = 4096);
  void record(const Span& s);
  std::vector<Span> recent(size_t maxCount) const;  // oldest first
  std::vector<Span> since(int64_t step) const;      // spans with step >= `step`, oldest first
  // since() without waiting: false, `out` untouched, when the writer holds the buffer (after a
  // few tries; see Session::trySnapshot).
  bool trySince(int64_t step, std::vector<Span>& out) const;
  void clear();

 private:
  void copySince(int64_t step, std::vector<Span>& out) const;  // with m_mutex held

  mutable std::mutex m_mutex;  // uncontended: one writer, rare readers
  std::vector<Span> m_ring;
  size_t m_next = 0, m_size = 0;
};

// Records a span from construction to destruction: `ScopedSpan s(rec, SpanKind::Forward, step);`
class ScopedSpan {
 public:
  ScopedSpan(SpanRecorder* rec, SpanKind kind, int64_t step, const char* op = "")
      : m_rec(rec), m_span{kind, nowNs(), 0, 0, op, step} {}
  ~ScopedSpan() { close(); }
  void setBytes(int64_t b) { m_span.bytes = b; }
  void close() {
    if (m_rec) {
      m_span.endNs = nowNs();
      m_rec->record(m_span);
      m_rec = nullptr;
    }
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  SpanRecorder* m_rec;
  Span m_span;
};

}  // namespace paralab
