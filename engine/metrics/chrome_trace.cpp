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

}  // namespace

nlohmann::json chromeTrace(const std::vector<std::vector<Span>>& spans,
                           const std::string& emulated) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto& rank : spans)
    for (const Span& s : rank) origin = std::min(origin, s.startNs);

  nlohmann::json events = nlohmann::json::array();
  for (size_t r = 0; r < spans.size(); ++r) {
    const int pid = int(r);
    // Names and order of the rows in the viewer: "rank 0", "rank 1", ... each with two threads.
    events.push_back(metadata("process_name", pid, 0, "rank " + std::to_string(r)));
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"sort_index", pid}}}});
    events.push_back(metadata("thread_name", pid, 0, "compute"));
    events.push_back(metadata("thread_name", pid, 1, "communication"));
    for (const Span& s : spans[r]) {
      const std::string kind(spanKindName(s.kind)), op = s.op ? s.op : "";
      events.push_back({{"name", op.empty() ? kind : kind + ": " + op},
                        {"cat", kind},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", s.kind == SpanKind::Comm ? 1 : 0},
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
