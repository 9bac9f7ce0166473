// TimelineChart: a Gantt chart of the last steps, a row per rank coloured by what it did
// (data, forward, backward, optimizer, idle) with its communication in a thinner row under it,
// so overlap and pipeline bubbles show. Context parallelism's ring: the time a K/V block the
// rank sent is in flight fills a third, thinnest lane, green where the rank computed meanwhile
// (hidden) and red where it did not (exposed). Drag and wheel pan and zoom time; hover names
// the span.
// See tests/app/tst_charts.cpp (timelineDrawsEverySpan, timelineDrawsTheRing) and
// screenshots/timeline*.png.
#pragma once
#include <QString>
#include <array>
#include <vector>

#include "charts/chart.h"
#include "parallel/pipeline/schedule_file.h"
#include "session.h"

namespace paralab {

class RectLayer;

class TimelineChart : public Chart {
  Q_OBJECT
 public:
  // Steps shown; ask the session for their spans: snapshot(from, TimelineChart::kSteps).
  static constexpr int kSteps = 3;

  explicit TimelineChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  // The spans of the last kSteps steps in `snapshot` (none: left as it is), and how many of
  // theirs the lines left out (Snapshot::spansLeftOut, said in the legend: droppedText()).
  // While the user has zoomed or panned, the view holds still; a double-click follows the run
  // again.
  void showSnapshot(const Snapshot& snapshot);
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;
  // What the empty chart says (an opened file without spans says why).
  using Chart::setPlaceholderText;
  // Spans of the steps drawn that their lines did not record (a job's or an opened run's
  // "spans_dropped": past kMaxLineSpans a rank a step), said by a line of the legend,
  // droppedText(), while nonzero. Each snapshot drawn sets it; a new run (clear()) has none.
  void setSpansDropped(int64_t count);
  int64_t spansDropped() const { return m_dropped; }
  QString droppedText() const;  // "" when none
  // A planned schedule (the learner's grid, schedule_file.h), drawn beside the measured steps:
  // to the right of the last one, its slots sharing that step's time, each rank's cells in its
  // compute row, pale with an outline. Empty: none.
  void setPlan(const ScheduleGrid& plan);
  const ScheduleGrid& plan() const { return m_plan; }
  // The spans drawn as a Chrome trace (chrome_trace.h); "" or what failed.
  QString writeChromeTrace(const QString& path) const;

  // One drawn bar. Idle bars are not spans: the gaps no span of the rank covers inside a
  // step (from the first span of any rank in that step to the last), as idle_ms counts them.
  struct Bar {
    int rank = 0;
    SpanKind kind = SpanKind::Idle;
    double startMs = 0, endMs = 0;  // from the first span drawn
    int64_t bytes = 0;
    QString op;
    int64_t step = 0;
  };
  const std::vector<Bar>& bars() const { return m_bars; }
  // Waiting bars, drawn hatched in the compute row: a rank inside a transfer with no compute span
  // at the same time (a pipeline's bubble; an all-reduce not overlapped). Derived from the comm
  // spans, so not in bars() nor the CSV; kind Comm, op "waiting".
  const std::vector<Bar>& waiting() const { return m_waiting; }
  // A K/V block of the ring in flight (ring_attention.h: op "send→recv · ring ..."): drawn in
  // the ring lane, not the communication row.
  static bool isRingTransfer(const Bar& b);
  // Of the ring's time in flight in the steps drawn (every rank's, summed), the share under the
  // same rank's compute spans: hidden behind it. Negative: no ring drawn.
  double ringHiddenShare() const { return m_ringHidden; }
  // What hovering at (time ms, row coordinate) shows, "" over no bar.
  QString describeAt(double timeMs, double row) const;
  // The row coordinates of a rank's compute row and of its thinner communication row.
  static QCPRange computeRow(int rank) { return {rank + 0.06, rank + 0.58}; }
  static QCPRange commRow(int rank) { return {rank + 0.62, rank + 0.86}; }
  static QCPRange ringRow(int rank) { return {rank + 0.89, rank + 0.99}; }  // cp's ring lane
  // The ring lane's parts: in flight while the rank computed (hidden) or not (exposed).
  const std::vector<Bar>& ringParts() const { return m_ringParts; }
  bool following() const { return m_follow; }

 protected:
  bool event(QEvent* event) override;  // tooltips
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  void fitRowLabels();   // after each layout: the rows' labels their height allows
  void fitStepLabels();  // after each layout: step labels that clear one another
  void draw(std::vector<std::vector<Span>> spans);

  void drawPlan(double fromMs, double stepMs);  // after the measured bars: where, how long

  std::array<RectLayer*, 6> m_layers{};  // by SpanKind
  ScheduleGrid m_plan;
  std::array<RectLayer*, 3> m_planLayers{};  // planned F, B, W
  std::vector<Bar> m_bars;
  std::vector<Bar> m_waiting;
  RectLayer* m_waitingLayer = nullptr;
  RectLayer* m_ringHiddenLayer = nullptr;   // the ring lane, where the rank computed
  RectLayer* m_ringExposedLayer = nullptr;  // the ring lane, where it did not
  std::vector<Bar> m_ringParts;             // op "hidden" or "exposed"
  double m_ringHidden = -1;
  RectLayer* m_droppedLayer = nullptr;  // no rectangles: its legend line says what is missing
  int64_t m_dropped = 0;
  std::vector<std::vector<Span>> m_spans;    // the spans drawn, per rank (for the trace)
  std::vector<std::vector<Span>> m_pending;  // newer spans held back while not following
  int64_t m_pendingDropped = 0;              // what their lines left out
  QString m_emulated;
  QList<QCPAbstractItem*> m_marks;  // step boundaries and their labels
  bool m_follow = true;
  bool m_settingRange = false;  // our own range changes are not the user's zoom
  int m_rankRows = 0;           // ranks drawn (0: none), for the room above rank 0
  struct RowLabels {
    bool comm = false;  // a "comm" label on each rank's second row
    bool ring = false;  // a "ring" label on each rank's third lane (cp's ring drawn)
    int every = 0;      // a "rank N" label on every `every`-th rank (0: not labelled yet)
  } m_rowLabels;
};

}  // namespace paralab
