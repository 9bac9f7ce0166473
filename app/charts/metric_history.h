// MetricHistory: what the window holds of the run it shows. Every step goes to the run's file
// (RunFile: every record, for the exports); in memory stays a bounded selection of measured
// steps that keeps the curves' shape for drawing (Envelope), the last steps for the moving
// means, the test-accuracy points and the live changes. Memory is the same after a hundred
// steps or a million. See tests/app/tst_app.cpp (historyStaysBounded) and
// tests/app/tst_run_data.cpp (longRunKeepsItsEarlyCurve).
#pragma once
#include <QString>
#include <QVector>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "charts/envelope.h"
#include "charts/run_file.h"
#include "metrics/metrics.h"

namespace paralab {

class MetricHistory {
 public:
  // One measured step, as the engine reported it, plus the means over the last kMeanWindow
  // steps (NaN until there are kMeanWindow steps: a mean of fewer would bend where the window
  // fills).
  struct Row {
    double step = 0;
    double loss = 0;             // nats
    double lossMean = 0;         // nats, mean of the last kMeanWindow steps
    double samplesPerS = 0;      // measured samples/s of this step
    double samplesPerSMean = 0;  // samples/s over the last kMeanWindow steps
    double stepMs = 0;
    // Rank 0's breakdown of the step, ms (StepMetrics and RankMetrics): the latency chart.
    double dataMs = 0, forwardMs = 0, backwardMs = 0, optimizerMs = 0, commMs = 0, idleMs = 0;
    // --precision bf16|fp16: the step's loss scale (NaN: an fp32 step, none) and the optimizer
    // steps skipped so far on an overflow: the loss-scale chart.
    double lossScale = std::numeric_limits<double>::quiet_NaN();
    double skippedSteps = 0;
  };
  struct Accuracy {
    double step = 0;
    double percent = 0;  // test accuracy, 100 * the engine's fraction
    double loss = -1;    // held-out loss, nats per sample (GPT: per character); -1: not measured
  };
  // A live reconfiguration: applied after step `step`, changing what `text` says.
  struct Change {
    double step = 0;
    QString text;
  };
  static constexpr int kMeanWindow = 20;

  // The means of the last kMeanWindow steps, updated step by step: what fills Row's means,
  // here and where the run file is read back (a CSV of every step).
  class MovingMeans {
   public:
    Row add(const StepMetrics& m);  // the step's row, its means filled in
    void clear() { m_window.clear(); }
    bool isEmpty() const { return m_window.isEmpty(); }
    // Over the last kMeanWindow steps or fewer (0 when empty).
    double stepMs() const;
    double samplesPerS() const;
    double loss() const;

   private:
    QVector<Row> m_window;
  };

  // The run's every step, read back from its file up to the last one appended, each as its
  // row (the moving means made again) with its record: what a chart over steps writes as CSV.
  // A copy stays valid after the history moves on to another run (it shares the file).
  class Steps {
   public:
    // "" or one line saying what could not be read.
    QString forEach(const std::function<void(const Row&, const StepMetrics&)>& f) const;
    bool isEmpty() const { return !m_file || m_last == 0; }

   private:
    friend class MetricHistory;
    std::shared_ptr<const RunFile> m_file;
    int64_t m_last = 0;
  };

  // At most `maxRows` rows and maxRows / 4 accuracy points are held, however long the run.
  // The default draws a chart of any length with a few points per pixel column: about 300
  // stretches, each its first, last and extreme rows.
  explicit MetricHistory(int maxRows = 3200);

  // A step of the run: written to the run file (made at the first step after clear()) and
  // added to what is drawn.
  void append(const StepMetrics& m);
  // The steps appended so far onto the disk (the run file buffers them): after each batch.
  void flush() {
    if (m_file) m_file->flush();
  }
  void addChange(int64_t afterStep, const QString& text);
  void clear();  // a new run: a new run file at its first step

  const QVector<Row>& rows() const { return m_rows.rows(); }
  const QVector<Accuracy>& accuracy() const { return m_accuracy.rows(); }
  const QVector<Change>& changes() const { return m_changes; }
  bool isEmpty() const { return m_stepsSeen == 0; }
  int64_t stepsSeen() const { return m_stepsSeen; }  // every step appended
  int64_t lastStep() const { return m_lastStep; }
  int maxRows() const { return m_maxRows; }
  // Mean step time (ms), samples/s and loss over the last kMeanWindow steps, or fewer at the
  // start of a run (0 when empty).
  double recentStepMs() const { return m_means.stepMs(); }
  double recentSamplesPerS() const { return m_means.samplesPerS(); }
  double recentLoss() const { return m_means.loss(); }

  Steps steps() const {
    Steps s;
    s.m_file = m_file, s.m_last = m_lastStep;
    return s;
  }
  // The file of every step of the run, shared with whoever still shows it (an earlier run's
  // overlay); null before the first step, or when it could not be made.
  std::shared_ptr<const RunFile> runFile() const { return m_file; }
  // Why the run file is missing or misses steps ("" when it holds every step appended).
  QString runFileError() const { return m_file ? m_file->error() : m_fileError; }

 private:
  int m_maxRows;
  Envelope<Row> m_rows;
  Envelope<Accuracy> m_accuracy;
  QVector<Change> m_changes;
  MovingMeans m_means;
  std::shared_ptr<RunFile> m_file;
  QString m_fileError;  // RunFile::create's
  int64_t m_stepsSeen = 0, m_lastStep = 0;
};

}  // namespace paralab
