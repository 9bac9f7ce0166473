// Pipeline schedules (`--pp P --microbatches M --schedule gpipe|1f1b`) and the bubble.
// Try: paralab-run --pp 2 --layers 4 --microbatches 8 --schedule gpipe --json   (see "bubble")
// See tests/engine/tst_model_parallel.cpp (schedules, bubble, activation memory).
//
// The blocks are cut into P contiguous stages; a micro-batch's residual stream goes forward
// stage to stage (send/recv), its gradient comes back the same way, in the order of the
// stage's list (schedule.h: schedule_gpipe.cpp, schedule_1f1b.cpp). Both schedules flush at
// the end of the step: every stage is idle (P-1)/(M+P-1) of the pipeline's time when stages
// are balanced (P - 1 forward and backward slots while the pipe fills and drains); here that
// idle share is measured from the step's spans.
#include "parallel/pipeline/pipeline.h"

#include <algorithm>
#include <array>

namespace paralab {

const char* microSpanLabel(bool forward, int micro) {
  static const auto kLabels = [] {  // built once; the strings live as long as the program
    std::array<std::vector<std::string>, 2> t;
    for (int m = 0; m < 256; ++m) {
      t[0].push_back("backward mb " + std::to_string(m));
      t[1].push_back("forward mb " + std::to_string(m));
    }
    return t;
  }();
  if (micro < 0 || micro >= 256) return forward ? "forward" : "backward";
  return kLabels[forward ? 1 : 0][size_t(micro)].c_str();
}

// [SECTION] Measured

StageTimes stageTimes(const std::vector<Span>& spans) {
  StageTimes t;
  for (const Span& s : spans)
    if (s.kind == SpanKind::Forward || s.kind == SpanKind::Backward) {
      t.firstNs = t.any ? std::min(t.firstNs, s.startNs) : s.startNs;
      t.lastNs = t.any ? std::max(t.lastNs, s.endNs) : s.endNs;
      t.any = true;
    }
  if (!t.any) return t;
  auto pointToPoint = [](const char* op) {
    const std::string_view v(op);
    return v.starts_with("send") || v.starts_with("recv");
  };
  // Union of the busy intervals inside [first, last].
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const Span& s : spans) {
    const bool compute = s.kind == SpanKind::Forward || s.kind == SpanKind::Backward;
    const bool collective = s.kind == SpanKind::Comm && !pointToPoint(s.op);
    if (!compute && !collective) continue;
    const int64_t a = std::max(s.startNs, t.firstNs), b = std::min(s.endNs, t.lastNs);
    if (b > a) busy.emplace_back(a, b);
  }
  std::sort(busy.begin(), busy.end());
  int64_t reach = t.firstNs;
  for (const auto& [a, b] : busy) {
    if (b > reach) t.busyNs += b - std::max(a, reach);
    reach = std::max(reach, b);
  }
  return t;
}

std::vector<double> measuredBubble(const std::vector<StageTimes>& stages) {
  int64_t first = 0, last = 0;
  bool any = false;
  for (const StageTimes& t : stages)
    if (t.any) {
      first = any ? std::min(first, t.firstNs) : t.firstNs;
      last = any ? std::max(last, t.lastNs) : t.lastNs;
      any = true;
    }
  std::vector<double> out;
  for (const StageTimes& t : stages)
    out.push_back(any && last > first ? 1.0 - double(t.busyNs) / double(last - first) : 0.0);
  return out;
}

}  // namespace paralab
