// The overlap meter from a rank's spans (see metrics/overlap.h): unions, differences and
// overlaps of intervals, as metrics/intervals.h makes them. See tests/engine/tst_overlap.cpp.
#include "metrics/overlap.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "metrics/intervals.h"

namespace paralab {

namespace {

using intervals::Interval;

int64_t length(const std::vector<Interval>& v) {
  int64_t ns = 0;
  for (const auto& [a, b] : v) ns += b - a;
  return ns;
}

// Divided, not multiplied by 1e-6: the nearest double to the exact value (as the trainer's).
double ms(int64_t ns) { return double(ns) / 1e6; }

}  // namespace

OverlapMeter& OverlapMeter::operator+=(const OverlapMeter& o) {
  computeMs += o.computeMs, commMs += o.commMs, hiddenMs += o.hiddenMs;
  exposedMs += o.exposedMs, idleMs += o.idleMs;
  return *this;
}

OverlapMeter overlapMeter(const std::vector<Span>& spans, int64_t t0, int64_t t1) {
  std::vector<Interval> compute, comm;
  for (const Span& s : spans) {
    const int64_t a = std::max(s.startNs, t0), b = std::min(s.endNs, t1);
    if (b <= a || s.kind == SpanKind::Idle) continue;
    (s.kind == SpanKind::Comm ? comm : compute).push_back({a, b});
  }
  compute = intervals::merged(std::move(compute));
  comm = intervals::merged(std::move(comm));
  std::vector<Interval> busy = compute;
  busy.insert(busy.end(), comm.begin(), comm.end());
  const int64_t computeNs = length(compute), commNs = length(comm);
  const int64_t exposedNs = length(intervals::minus(comm, compute));
  OverlapMeter m;
  m.computeMs = ms(computeNs);
  m.commMs = ms(commNs);
  m.hiddenMs = ms(commNs - exposedNs);
  m.exposedMs = ms(exposedNs);
  m.idleMs = ms(std::max<int64_t>(0, (t1 - t0) - length(intervals::merged(std::move(busy)))));
  return m;
}

nlohmann::json toJson(const OverlapMeter& m) {
  return {{"compute_ms", m.computeMs},
          {"comm_ms", m.commMs},
          {"hidden_ms", m.hiddenMs},
          {"exposed_ms", m.exposedMs},
          {"idle_ms", m.idleMs}};
}

OverlapMeter overlapMeterFromJson(const nlohmann::json& j, const std::string& where) {
  const auto get = [&](const char* key) {
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(where + key + ": missing");
    if (!j.at(key).is_number()) throw std::runtime_error(where + key + ": of the wrong type");
    return j.at(key).get<double>();
  };
  OverlapMeter m;
  m.computeMs = get("compute_ms");
  m.commMs = get("comm_ms");
  m.hiddenMs = get("hidden_ms");
  m.exposedMs = get("exposed_ms");
  m.idleMs = get("idle_ms");
  return m;
}

}  // namespace paralab
