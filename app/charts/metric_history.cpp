// MetricHistory: bounded per-step data for the charts (see metric_history.h).
// See tests/app/tst_app.cpp (historyStaysBounded).
#include "charts/metric_history.h"

namespace paralab {

MetricHistory::MetricHistory(int maxRows) : m_maxRows(std::max(maxRows, 16)) {}

void MetricHistory::clear() {
  m_rows.clear();
  m_accuracy.clear();
  m_window.clear();
  m_stepsSeen = 0;
}

void MetricHistory::append(const StepMetrics& m) {
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
  m_window.push_back(r);
  if (m_window.size() > kMeanWindow) m_window.removeFirst();
  // Throughput over the window is samples done / time taken (each step did samplesPerS *
  // stepMs / 1000 samples), not the plain mean of per-step rates, which overweights fast steps.
  double samples = 0, ms = 0;
  for (const Row& w : m_window) {
    r.lossMean += w.loss;
    samples += w.samplesPerS * w.stepMs;
    ms += w.stepMs;
  }
  r.lossMean /= m_window.size();
  r.samplesPerSMean = ms > 0 ? samples / ms : r.samplesPerS;
  m_window.back() = r;

  m_rows.push_back(r);
  if (m.testAccuracy) m_accuracy.push_back({r.step, 100.0 * *m.testAccuracy});
  ++m_stepsSeen;
  thin(m_rows, m_maxRows);
  thin(m_accuracy, m_maxRows / 4);
}

// When full, every second point of the older half goes: the newest half stays at full
// resolution and each older stretch keeps half the points of the one after it. Points kept
// are measured values, never averages, so the charts only ever show what was measured.
template <typename T>
void MetricHistory::thin(QVector<T>& v, int max) {
  if (v.size() < max) return;
  const int half = int(v.size()) / 2;
  int out = 0;
  for (int i = 0; i < half; i += 2) v[out++] = v[i];
  for (int i = half; i < v.size(); ++i) v[out++] = v[i];
  v.resize(out);
}

double MetricHistory::recentStepMs() const {
  if (m_window.isEmpty()) return 0;
  double sum = 0;
  for (const Row& r : m_window) sum += r.stepMs;
  return sum / m_window.size();
}

double MetricHistory::recentSamplesPerS() const {
  return m_window.isEmpty() ? 0 : m_window.back().samplesPerSMean;
}

}  // namespace paralab
