// Chrome trace JSON of the ranks' spans (the Trace Event Format: "X" complete events, pid =
// rank, tid 0 compute / 1 communication / 2 and up cp's ring messages in flight, ts and dur in
// µs), which opens in Perfetto
// (ui.perfetto.dev) and chrome://tracing. Written by `paralab-run --trace FILE` and the
// window's export. See tests/engine/tst_cli.cpp (traceHasEveryRank) and tests/app/tst_charts.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metrics/span_recorder.h"

namespace paralab {

// `spans[r]` are rank r's. Times count from the earliest span; `emulated` names the run's emulated
// parts (emulatedBriefs), recorded in the trace's metadata (docs/architecture.md §9), or is empty.
nlohmann::json chromeTrace(const std::vector<std::vector<Span>>& spans,
                           const std::string& emulated = "");

}  // namespace paralab
