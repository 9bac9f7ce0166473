// What a `--json` step line carries for the window's timeline and "what every rank holds" map,
// beside its figures: each rank's spans of the step ("spans" in its ranks[] object, in ms from
// the run's origin, rank 0's, on every rank's clock: cli/line_views.cpp) and, on the
// first line and whenever they change, every rank's
// holdings ("holdings" on the line). paralab-run writes them (cli/line_views.h); the window reads
// them back for its MPI jobs and opened runs (RunViews), so those draw as thread runs draw.
// The fields are optional and added beside the others, so "schema" stays 1: a reader of
// version 1 reads these lines' figures as before, and lines without them still open.
// See tests/engine/tst_line_views.cpp and `paralab-run --steps 2 --ranks 2 --json`.
#pragma once
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "parallel/holdings.h"

namespace paralab {

// Spans one rank's line carries per step at most; the rest are counted in its "spans_dropped"
// (a pipeline of many micro-batches records hundreds; a line stays a few hundred KB at most).
inline constexpr size_t kMaxLineSpans = 512;

// One rank's spans as JSON, in recording order: [{"kind", "start_ms", "end_ms"[, "op"][, "bytes"]}]
// with times in ms after `originNs` (the same steady clock as the spans). At most `cap` of them;
// `*dropped` receives how many more there were.
nlohmann::json spansToJson(const std::vector<Span>& spans, int64_t originNs, size_t cap,
                           int64_t* dropped);
// Read back as spans of step `step` on a clock whose zero is `originNs`. Span::op must be a
// static string: the names read are kept for the life of the process (a bounded set: a name not
// seen among the first 4096 reads as "").
std::vector<Span> spansFromJson(const nlohmann::json& j, int64_t step, int64_t originNs);
// toJson(RankHoldings) read back (its traffic left out: a line's ranks[] carry that per step).
// Throws std::runtime_error naming the field that is missing or wrong.
RankHoldings holdingsFromJson(const nlohmann::json& j);
// toJson(RankHoldings) without "sent_to" and "sent_by_op": what a line's "holdings" carries.
nlohmann::json holdingsLayoutJson(const RankHoldings& h);

// The timeline and holdings of a run whose lines arrive one by one (a job's stdout) or are read
// from a file: the spans of the last kSteps steps, on one time axis, and the latest holdings.
class RunViews {
 public:
  static constexpr int kSteps = 3;  // the timeline's steps (TimelineChart::kSteps)

  // A step's line (its JSON object): its spans, if it has any, and its holdings, if it has them.
  // A line whose "started_ms" (rank 0's start of the step) lies before the last step kept's (a
  // job launched again: its origin is new) drops the steps kept before it. Throws
  // std::runtime_error on a malformed field.
  void add(const nlohmann::json& line);
  void clear();
  // Per rank: the spans of the last kSteps steps, as Session::snapshot hands them out.
  std::vector<std::vector<Span>> spans() const;
  // The latest holdings, each rank's traffic of the last step (`last`, may be null) as its
  // lastStep (the bytes and peers the map writes under each column).
  std::vector<RankHoldings> holdings(const StepMetrics* last) const;
  bool hasSpans() const { return !m_steps.empty(); }
  bool hasHoldings() const { return !m_holdings.empty(); }
  int64_t spansDropped() const;  // over the steps kept, every rank

 private:
  struct StepSpans {
    int64_t step = 0, originNs = 0, endNs = 0, dropped = 0;
    std::vector<std::vector<Span>> ranks;
  };
  std::deque<StepSpans> m_steps;
  std::vector<RankHoldings> m_holdings;
};

// A recorded run's views from `in` (the lines of paralab-run --json): only the last lines that
// carry spans, and the last that carries holdings, are parsed. A line that cannot be read is
// skipped: the figures' reader (readRecordedRun) is the one that says what is wrong with a file.
RunViews readRunViews(std::istream& in);

}  // namespace paralab
