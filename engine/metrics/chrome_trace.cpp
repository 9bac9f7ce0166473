// Chrome trace writer (see chrome_trace.h). Format: the Trace Event Format document of the
// Chromium project ("JSON Object Format", complete events "ph": "X", metadata "ph": "M").
#include "metrics/chrome_trace.h"

#include <algorithm>
#include <limits>

namespace paralab {

namespace {

nlohmann::json metadata(const char* name, int pid, int tid, const std::string& value) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", value}}}};
}

// Per span, the ring row (0, 1, ...) of a ring message, -1 for any other span: each message on
// the first row free at its start, in order of start (interval colouring, the fewest rows).
std::vector<int> ringLanes(const std::vector<Span>& spans) {
  std::vector<int> lanes(spans.size(), -1);
  std::vector<size_t> ring;
  for (size_t i = 0; i < spans.size(); ++i)
    if (isRingTransfer(spans[i])) ring.push_back(i);
  std::stable_sort(ring.begin(), ring.end(),
                   [&](size_t a, size_t b) { return spans[a].startNs < spans[b].startNs; });
  std::vector<int64_t> freeAt;  // per row: when its last message arrived
  for (size_t i : ring) {
    size_t lane = 0;
    while (lane < freeAt.size() && freeAt[lane] > spans[i].startNs) ++lane;
    if (lane == freeAt.size()) freeAt.push_back(0);
    freeAt[lane] = spans[i].endNs;
    lanes[i] = int(lane);
  }
  return lanes;
}

}  // namespace

nlohmann::json chromeTrace(const std::vector<std::vector<Span>>& spans,
                           const std::string& emulated) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto& rank : spans)
    for (const Span& s : rank) origin = std::min(origin, s.startNs);

  nlohmann::json events = nlohmann::json::array();
  for (size_t r = 0; r < spans.size(); ++r) {
    const int pid = int(r);
    // Names and order of the rows in the viewer: "rank 0", "rank 1", ... each with a compute
    // and a communication row (and, under cp, the ring's).
    events.push_back(metadata("process_name", pid, 0, "rank " + std::to_string(r)));
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"sort_index", pid}}}});
    events.push_back(metadata("thread_name", pid, 0, "compute"));
    events.push_back(metadata("thread_name", pid, 1, "communication"));
    // cp's ring messages are in flight while the rank computes and calls: rows of their own,
    // as many as are in flight at once (a block's dK/dV travels right behind the next K/V),
    // so that every row's events nest as the viewers require.
    const std::vector<int> lanes = ringLanes(spans[r]);
    const int ringRows = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end()) + 1;
    for (int lane = 0; lane < ringRows; ++lane)
      events.push_back(metadata("thread_name", pid, 2 + lane,
                                "ring: messages in flight" +
                                    (lane > 0 ? " (" + std::to_string(lane + 1) + ")" : "")));
    for (size_t i = 0; i < spans[r].size(); ++i) {
      const Span& s = spans[r][i];
      const std::string kind(spanKindName(s.kind)), op = s.op ? s.op : "";
      const int tid = lanes[i] >= 0 ? 2 + lanes[i] : s.kind == SpanKind::Comm ? 1 : 0;
      events.push_back({{"name", op.empty() ? kind : kind + ": " + op},
                        {"cat", kind},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", double(s.startNs - origin) * 1e-3},  // µs
                        {"dur", double(s.endNs - s.startNs) * 1e-3},
                        {"args", {{"op", op}, {"bytes", s.bytes}, {"step", s.step}}}});
    }
  }
  nlohmann::json other = {{"source", "ParaLab: measured spans"}};
  if (!emulated.empty()) other["emulated"] = emulated;
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace paralab
