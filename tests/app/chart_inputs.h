// What the chart suites share: synthetic snapshots whose every number is distinct (so a value
// drawn in the wrong place shows), readers of what a chart drew and exported, and short real
// runs saved as screenshots under <build>/screenshots/.
#pragma once
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>
#include <chrono>
#include <set>
#include <thread>
#include "charts/byte_units.h"
#include "charts/holdings_map.h"
#include "charts/latency_chart.h"
#include "charts/link_heatmap.h"
#include "charts/loss_chart.h"
#include "charts/memory_chart.h"
#include "charts/memory_reference.h"
#include "charts/metric_history.h"
#include "charts/speedup_chart.h"
#include "charts/timeline_chart.h"
#include "charts/traffic_chart.h"
#include "export/chart_export.h"
#include "export/chrome_trace.h"
#include "train/trainer.h"

namespace paralab::test {

// [SECTION] Synthetic inputs: every number distinct, so a value drawn in the wrong place shows.

inline StepMetrics syntheticStep(int64_t step, int ranks) {
  StepMetrics m;
  m.step = step;
  m.loss = 2.0 / double(step);
  m.stepMs = 10.0 + double(step);
  m.samplesPerS = 1000.0;
  m.dataMs = 0.5, m.forwardMs = 2.0 + 0.1 * double(step), m.backwardMs = 4.0, m.optimizerMs = 1.0;
  for (int r = 0; r < ranks; ++r) {
    RankMetrics rm;
    rm.rank = r;
    rm.commMs = 3.0 + r;
    rm.idleMs = 0.25 * double(step);
    for (int c = 0; c < kMemCategories; ++c)
      rm.mem.current[size_t(c)] = (int64_t(c) + 1) * 1000003 + int64_t(r) * 7919;
    rm.mem.peakTotal = rm.mem.total() + 123457 * (r + 1);
    rm.sentTo.assign(size_t(ranks), 0);
    for (int to = 0; to < ranks; ++to)
      if (to != r) rm.sentTo[size_t(to)] = int64_t(1 + r * ranks + to) * 4096 + 17;
    // Two ops on two groups; their bytes add up to the rank's totals.
    rm.ops = {{"allreduce", "dp", 3, 500000 + 11 * r, 500001 + 13 * r, 1.5},
              {"allgather", "tp", 1, 250000 + 17 * r, 249999 + 19 * r, 0.5}};
    for (const OpTraffic& o : rm.ops) rm.bytesSent += o.bytesSent, rm.bytesRecv += o.bytesRecv;
    m.ranks.push_back(rm);
  }
  return m;
}

inline Snapshot syntheticSnapshot(int ranks) {
  Snapshot s;
  s.state = RunState::Running;
  s.config.ranks = ranks;
  s.config.zero = 2;
  s.config.optimizer = "adam";
  s.parameterCount = 100000;
  s.stepsDone = 5;
  for (int64_t i = 1; i <= 5; ++i) s.steps.push_back(syntheticStep(i, ranks));
  // Spans of 5 steps, per rank: data, forward, backward with an all-reduce under it, optimizer.
  s.spans.resize(size_t(ranks));
  for (int r = 0; r < ranks; ++r)
    for (int64_t step = 1; step <= 5; ++step) {
      const int64_t t = step * 10'000'000 + r * 200'000;  // ns
      auto& v = s.spans[size_t(r)];
      v.push_back({SpanKind::Data, t, t + 500'000, 0, "", step});
      v.push_back({SpanKind::Forward, t + 500'000, t + 2'500'000, 0, "layer 0", step});
      v.push_back({SpanKind::Backward, t + 3'000'000, t + 7'000'000, 0, "layer 0", step});
      v.push_back({SpanKind::Comm, t + 4'000'000, t + 7'500'000, 1 << 20, "allreduce ring", step});
      v.push_back({SpanKind::Optimizer, t + 7'500'000, t + 8'500'000, 0, "", step});
    }
  return s;
}

inline QStringList csvLines(const Chart& chart) {
  QString text;
  QTextStream out(&text);
  chart.writeCsv(out);
  out.flush();
  return text.split('\n', Qt::SkipEmptyParts);
}

inline double valueAt(const QCPBars* bars, double key) {
  for (const QCPBarsData& d : *bars->data())
    if (qFuzzyCompare(d.key + 10, key + 10)) return d.value;
  return std::numeric_limits<double>::quiet_NaN();
}

// A traffic bar's bytes: no bar at the key is none sent (the chart leaves zeros out).
inline double bytesAt(const QCPBars* bars, double key, double unit) {
  const double v = valueAt(bars, key);
  return std::isnan(v) ? 0.0 : v * unit;
}

inline double valueAt(const QCPGraph* g, double key) {
  for (const QCPGraphData& d : *g->data())
    if (qFuzzyCompare(d.key + 10, key + 10)) return d.value;
  return std::numeric_limits<double>::quiet_NaN();
}

// A real run on thread ranks, to its end; the snapshot holds every step and the last spans.
inline Snapshot runToEnd(const RunConfig& c) {
  Session session;
  const std::string err = session.start(c);
  if (!err.empty()) qFatal("start: %s", err.c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const RunState st = session.snapshot(std::numeric_limits<int64_t>::max()).state;
    if (st == RunState::Finished || st == RunState::Failed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Snapshot s = session.snapshot(0, TimelineChart::kSteps);
  if (s.state != RunState::Finished)
    qWarning("run ended %s: %s", runStateName(s.state), s.error.c_str());
  return s;
}

inline RunConfig quickRun() {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = 128;
  c.layers = 2;
  c.batch = 256;
  c.steps = 40;
  c.evalEvery = 0;
  c.optimizer = "adam";
  c.lr = 0.002;
  return c;
}

inline QString screenshotDir() {
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  return dir;
}

// The export (as a report gets it) and the widget as a dock shows it, on a dark desktop.
inline void saveScreenshot(Chart& chart, const QString& name) {
  const QString path = screenshotDir() + '/' + name + ".png";
  QCOMPARE(exportChart(chart, path, ExportFormat::Png), QString());
  QPalette dark(QColor(45, 45, 48), QColor(30, 30, 32));
  dark.setColor(QPalette::WindowText, QColor(230, 230, 230));
  dark.setColor(QPalette::Base, QColor(30, 30, 32));
  dark.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
  chart.setPalette(dark);
  chart.resize(640, 420);
  chart.replot();
  QVERIFY(chart.grab().save(screenshotDir() + '/' + name + "-dock-dark.png"));
}

}  // namespace paralab::test
