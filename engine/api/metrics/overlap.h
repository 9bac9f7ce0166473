// The overlap meter: of one rank's step (or run), its compute time, its communication time,
// the part of the communication hidden behind compute, the exposed part, and idle — all from
// its spans, by the interval arithmetic of metrics/intervals.h. On every `--json` line
// (ranks[].overlap), in the summary line (overlap[], over the run) and in the window's
// "Overlap per rank" chart. See tests/engine/tst_overlap.cpp and
// `paralab-run --ranks 4 --dp-version bucketed --link ethernet --steps 3 --json`.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "metrics/span_recorder.h"

namespace paralab {

// ms of wall clock, each a measure of a union of intervals (never a sum of spans: two comm
// spans at once, a bucket's all-reduce and the next one's, count once).
//   compute: the union of data, forward, backward and optimizer spans;
//   comm:    the union of communication spans (collectives, point-to-point, the ring's
//            messages in flight);
//   hidden:  comm ∩ compute, the communication that ran while the rank computed;
//   exposed: comm − compute, the communication the rank waited for;
//   idle:    the step minus (compute ∪ comm).
// So hidden + exposed = comm, and compute + exposed + idle = the step's time.
struct OverlapMeter {
  double computeMs = 0, commMs = 0, hiddenMs = 0, exposedMs = 0, idleMs = 0;

  OverlapMeter& operator+=(const OverlapMeter& o);
  // hidden / comm: the share of the communication that hid (0 without communication).
  double hiddenShare() const { return commMs > 0 ? hiddenMs / commMs : 0; }
  bool operator==(const OverlapMeter&) const = default;
};

// The meter of one rank's `spans`, clipped to its step [t0, t1) (steady-clock ns). Idle spans
// count as neither compute nor communication.
OverlapMeter overlapMeter(const std::vector<Span>& spans, int64_t t0, int64_t t1);

// {"compute_ms", "comm_ms", "hidden_ms", "exposed_ms", "idle_ms"} (metrics.md), both ways; the
// reader throws std::runtime_error naming the field ("overlap.hidden_ms: missing").
nlohmann::json toJson(const OverlapMeter& m);
OverlapMeter overlapMeterFromJson(const nlohmann::json& j, const std::string& where = "");

}  // namespace paralab
