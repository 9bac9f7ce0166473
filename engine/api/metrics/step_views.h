// What a `--json` step line carries for the window's timeline and "what every rank holds" map,
// beside its figures: each rank's spans of the step ("spans" in its ranks[] object, in ms from
// the run's origin, rank 0's, on every rank's clock: cli/line_views.cpp) and, on the
// first line and whenever they change, every rank's
// holdings ("holdings" on the line). paralab-run writes them (cli/line_views.h), and the window's
// Export All writes them again in its run.jsonl (StepViewsLog), both through LineViewsWriter;
// the window reads them back for its MPI jobs and opened runs (RunViews), so those draw as
// thread runs draw.
// The fields are optional and added beside the others, so "schema" stays 1: a reader of
// version 1 reads these lines' figures as before, and lines without them still open.
// See tests/engine/tst_line_views.cpp and `paralab-run --steps 2 --ranks 2 --json`.
#pragma once
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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

// What a run's lines carry beside their figures, written line by line in step order: the one
// writer of paralab-run's lines (cli/line_views.h, where under mpirun each process makes its
// ranks' parts and rank 0 puts every part on the line) and of the window's Export All
// (StepViewsLog).
class LineViewsWriter {
 public:
  // Rank `rank`'s part of a step's line, {"rank"[, "spans"[, "spans_dropped"]][, "holdings"]}:
  // its spans of the step (null: none recorded) as spansToJson writes them, at most
  // kMaxLineSpans in ms after `originNs`, with those past the cap plus `dropped` (spans left
  // out before they came here) counted in "spans_dropped" when any; its holdings' layout
  // (holdingsLayoutJson; null `holdings`: none known) only when it differs from the one in the
  // last part this writer made for `rank`.
  nlohmann::json rankPart(int rank, const std::vector<Span>* spans, int64_t originNs,
                          const RankHoldings* holdings, int64_t dropped = 0);
  // Puts every rank's part of the step on its `line` (toJson(StepMetrics)): each ranks[] object
  // its part's "spans" and "spans_dropped"; the line "started_ms" (rank 0's start of the step,
  // ms after the origin; none: left out) and, when some part carried holdings, "holdings": every
  // rank's latest layout.
  void addTo(nlohmann::json& line, std::optional<double> startedMs,
             const std::vector<nlohmann::json>& parts);

 private:
  std::vector<std::string> m_sent;         // per rank: the layout its last part carried
  std::vector<nlohmann::json> m_holdings;  // every rank's latest layout (where addTo runs)
};

// What the window keeps of the run it shows to write its lines again (Export All's run.jsonl,
// as paralab-run --json writes them): every rank's spans of the last kSteps steps (at most
// kMaxLineSpans a rank a step, the rest counted) and the ranks' holdings each time they changed
// (the last kHoldingChanges times). Older steps' lines go without spans (so do steps no snapshot
// caught: each has the spans of the last TimelineChart::kSteps steps), and lines before the
// oldest change kept without holdings: bounded (about 6 MiB of spans at most), however long the
// run.
class StepViewsLog {
 public:
  static constexpr int kSteps = 64;                     // steps whose spans are kept, at most
  static constexpr size_t kMaxSpans = size_t(1) << 17;  // spans kept in all (48 B each: 6 MiB)
  static constexpr int kHoldingChanges = 16;            // holdings kept (a live change re-shards)

  // What the run shows after its steps up to `lastStep` (Snapshot: stepsDone, spans, holdings):
  // `spans`, per rank, are those of its last steps; of them the steps up to `lastStep` not kept
  // yet are kept (a step still in flight is not: it is kept whole at a later call). `holdings`
  // are kept when they differ from the last kept: from `firstStep` (the first of the steps
  // since the last call) when none is kept yet, else from `lastStep`. A step whose spans start
  // before the last kept step's (a job launched again: its clock is new) drops the spans kept.
  // `leftOut`: spans of these steps left out before they came here (a job's lines, an opened
  // run's), counted with those past the cap in each line's "spans_dropped".
  void add(const std::vector<std::vector<Span>>& spans, const std::vector<RankHoldings>& holdings,
           int64_t firstStep, int64_t lastStep, const std::vector<SpansLeftOut>& leftOut = {});
  void clear();
  // The run's lines written again, in step order: on each, what was kept of its step.
  class Lines {
   public:
    explicit Lines(const StepViewsLog& log) : m_log(log) {}
    // Puts on `line` (toJson(StepMetrics) of the step after the last one given) the spans kept
    // of its step and, where they are others than the line before's, the holdings in force.
    void addTo(nlohmann::json& line);

   private:
    const StepViewsLog& m_log;
    LineViewsWriter m_writer;
    const void* m_held = nullptr;  // the holdings in force at the last line
  };
  int64_t stepsKept() const { return int64_t(m_steps.size()); }
  size_t spansKept() const { return m_spanCount; }

 private:
  struct StepSpans {
    int64_t step = 0;
    int64_t startNs = 0;  // rank 0's first span (any rank's, if it has none)
    std::vector<std::vector<Span>> ranks;
    std::vector<int64_t> dropped;  // per rank, past kMaxLineSpans
  };
  struct Holdings {
    int64_t fromStep = 0;
    std::vector<RankHoldings> ranks;
  };
  std::deque<StepSpans> m_steps;
  std::deque<Holdings> m_holdings;
  std::string m_lastHoldings;  // m_holdings.back() as text, to tell a change
  size_t m_spanCount = 0;
  int64_t m_originNs = -1;  // the first span kept's start: the lines' time origin
};

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
  std::vector<SpansLeftOut> spansLeftOut() const;  // per step kept and rank, where any

 private:
  struct StepSpans {
    int64_t step = 0, originNs = 0, endNs = 0;
    std::vector<std::vector<Span>> ranks;
    std::vector<int64_t> dropped;  // per rank: its "spans_dropped"
  };
  std::deque<StepSpans> m_steps;
  std::vector<RankHoldings> m_holdings;
};

// A recorded run's views from `in` (the lines of paralab-run --json): only the last lines that
// carry spans, and the last that carries holdings, are parsed. A line that cannot be read is
// skipped: the figures' reader (readRecordedRun) is the one that says what is wrong with a file.
RunViews readRunViews(std::istream& in);

}  // namespace paralab
