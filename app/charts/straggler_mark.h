// StragglerMark: the rank that was the straggler (metrics/straggler.h: slowest, at least 1.5 x the
// median compute) in most of the last kSteps steps, from the steps' measured per-rank compute,
// never from the injected --straggler: named in the status bar and marked on the timeline's row.
// See tests/app/tst_window_failures.cpp (stragglerIsMarked, evenRunMarksNobody).
#pragma once
#include <QLabel>
#include <QObject>
#include <deque>

#include "metrics/metrics.h"

class QCPItemText;

namespace paralab {

class TimelineChart;

class StragglerMark : public QObject {
  Q_OBJECT
 public:
  static constexpr int kSteps = 8;  // K: the last steps read

  // `status` gets the label (hidden while nobody is marked); `timeline` the mark on its row.
  StragglerMark(QWidget* status, TimelineChart* timeline);
  QLabel* label() const { return m_label; }
  // New steps of the run shown (in order); the mark follows their last kSteps.
  void feed(const std::vector<StepMetrics>& steps);
  void clear();                        // a new run: nobody marked
  int rank() const { return m_rank; }  // -1: nobody
  // Of the last steps read, how many named `rank()` the straggler.
  int stepsNamed() const { return m_named; }
  int stepsRead() const { return int(m_steps.size()); }

 private:
  void show();

  QLabel* m_label;
  TimelineChart* m_timeline;
  QCPItemText* m_mark = nullptr;  // on the timeline, at the rank's row
  std::deque<StepMetrics> m_steps;
  int m_rank = -1, m_named = 0;
};

}  // namespace paralab
