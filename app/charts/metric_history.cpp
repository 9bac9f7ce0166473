// MetricHistory: the run's steps to the run file, and a bounded, shape-keeping selection of
// them for the charts (see metric_history.h).
// See tests/app/tst_app.cpp (historyStaysBounded).
#include "charts/metric_history.h"

#include <limits>

namespace paralab {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

// [SECTION] Moving means

MetricHistory::Row MetricHistory::MovingMeans::add(const StepMetrics& m) {
  Row r;
  r.step = double(m.step);
  r.loss = m.loss;
  r.samplesPerS = m.samplesPerS;
  r.stepMs = m.stepMs;
  r.dataMs = m.dataMs;
  r.forwardMs = m.forwardMs;
  r.backwardMs = m.backwardMs;
  r.optimizerMs = m.optimizerMs;
  if (!m.ranks.empty()) r.commMs = m.ranks[0].commMs, r.idleMs = m.ranks[0].idleMs;
  if (m.lossScale) r.lossScale = *m.lossScale;
  r.skippedSteps = double(m.skippedSteps.value_or(0));
  m_window.push_back(r);
  if (m_window.size() > kMeanWindow) m_window.removeFirst();
  const bool full = m_window.size() == kMeanWindow;
  r.lossMean = full ? loss() : kNaN;
  r.samplesPerSMean = full ? samplesPerS() : kNaN;
  return r;
}

double MetricHistory::MovingMeans::loss() const {
  double sum = 0;
  for (const Row& w : m_window) sum += w.loss;
  return m_window.isEmpty() ? 0 : sum / m_window.size();
}

double MetricHistory::MovingMeans::stepMs() const {
  double sum = 0;
  for (const Row& w : m_window) sum += w.stepMs;
  return m_window.isEmpty() ? 0 : sum / m_window.size();
}

// Samples done over the time taken (each step did samplesPerS * stepMs / 1000 samples), not the
// plain mean of per-step rates, which overweights fast steps.
double MetricHistory::MovingMeans::samplesPerS() const {
  double samples = 0, ms = 0;
  for (const Row& w : m_window) samples += w.samplesPerS * w.stepMs, ms += w.stepMs;
  if (ms > 0) return samples / ms;
  return m_window.isEmpty() ? 0 : m_window.back().samplesPerS;
}

// [SECTION] History

// The extremes that shape each chart: loss, throughput (and so step time, its inverse at the
// run's batch) and communication (the latency chart's most changeable band).
MetricHistory::MetricHistory(int maxRows)
    : m_maxRows(maxRows),
      m_rows(maxRows, {&Row::loss, &Row::samplesPerS, &Row::commMs}),
      m_accuracy(maxRows / 4, {&Accuracy::percent}) {}

void MetricHistory::clear() {
  m_rows.clear();
  m_accuracy.clear();
  m_changes.clear();
  m_means.clear();
  m_file.reset();
  m_fileError.clear();
  m_stepsSeen = m_lastStep = 0;
}

void MetricHistory::append(const StepMetrics& m) {
  if (!m_file && m_fileError.isEmpty()) m_file = RunFile::create(&m_fileError);
  if (m_file) m_file->append(m);
  const Row r = m_means.add(m);
  m_rows.add(r);
  if (m.testAccuracy) m_accuracy.add({r.step, 100.0 * *m.testAccuracy, m.testLoss.value_or(-1)});
  ++m_stepsSeen;
  m_lastStep = m.step;
}

QString MetricHistory::Steps::forEach(
    const std::function<void(const Row&, const StepMetrics&)>& f) const {
  if (isEmpty()) return {};
  MovingMeans means;
  return m_file->forEachStep(
      [&](const StepMetrics& m) {
        f(means.add(m), m);
        return true;
      },
      m_last);
}

void MetricHistory::addChange(int64_t afterStep, const QString& text) {
  m_changes.push_back({double(afterStep), text});
}

}  // namespace paralab
