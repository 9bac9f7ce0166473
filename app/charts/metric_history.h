// MetricHistory: the window's bounded copy of a run's per-step metrics, the data every chart
// draws and exports. Recent steps are kept at full resolution, older ones thinned, so a long
// run stays smooth to plot. See tests/app/tst_app.cpp (historyStaysBounded).
#pragma once
#include <QVector>

#include "metrics/metrics.h"

namespace paralab {

class MetricHistory {
 public:
  // One measured step, as the engine reported it, plus the mean of the last `kMeanWindow`
  // steps (computed before thinning, so it is the same whatever has been dropped since).
  struct Row {
    double step = 0;
    double loss = 0;             // nats
    double lossMean = 0;         // nats, mean of the last kMeanWindow steps
    double samplesPerS = 0;      // measured samples/s of this step
    double samplesPerSMean = 0;  // samples/s over the last kMeanWindow steps
    double stepMs = 0;
    // Rank 0's breakdown of the step, ms (StepMetrics and RankMetrics): the latency chart.
    double dataMs = 0, forwardMs = 0, backwardMs = 0, optimizerMs = 0, commMs = 0, idleMs = 0;
  };
  struct Accuracy {
    double step = 0;
    double percent = 0;  // test accuracy, 100 * the engine's fraction
  };
  static constexpr int kMeanWindow = 20;

  explicit MetricHistory(int maxRows = 2000);

  void append(const StepMetrics& m);
  void clear();

  const QVector<Row>& rows() const { return m_rows; }
  const QVector<Accuracy>& accuracy() const { return m_accuracy; }
  bool isEmpty() const { return m_rows.isEmpty(); }
  int64_t stepsSeen() const { return m_stepsSeen; }  // every step appended, thinned or not
  // Mean step time (ms) and samples/s over the last kMeanWindow steps (0 when empty).
  double recentStepMs() const;
  double recentSamplesPerS() const;

 private:
  template <typename T>
  void thin(QVector<T>& v, int max);

  int m_maxRows;
  QVector<Row> m_rows;
  QVector<Accuracy> m_accuracy;
  // The raw last kMeanWindow steps: the moving means must not see thinned data.
  QVector<Row> m_window;
  int64_t m_stepsSeen = 0;
};

}  // namespace paralab
