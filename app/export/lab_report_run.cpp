// A lesson step run for the lab report (see lab_report_run.h): the same engine doors the window
// uses (Session, the sweep and benchmark jobs) and the same charts, drawn as Export All draws.
// See tests/app/tst_lab_report.cpp.
#include "export/lab_report_run.h"

#include <QThread>
#include <memory>

#include "bench_runner.h"
#include "charts/bench_chart.h"
#include "charts/loss_chart.h"
#include "charts/memory_chart.h"
#include "charts/metric_history.h"
#include "charts/speedup_chart.h"
#include "charts/throughput_chart.h"
#include "charts/timeline_chart.h"
#include "charts/traffic_chart.h"
#include "describe.h"
#include "engine_bridge.h"
#include "jobs/bench_job.h"
#include "jobs/sweep_job.h"
#include "session.h"
#include "window/run_text.h"

namespace paralab {

using namespace paralab::lessons;

namespace {

// The figure in the report: a 16:10 chart laid out as the window lays it out at 640 px wide,
// so that on a page's text width its labels print at about 7 to 9 pt, in 2.5 times the pixels
// so that it stays sharp on paper (1600 × 1000).
constexpr QSize kFigure{640, 400};
constexpr double kFigureScale = 2.5;

QString str(const std::string& s) { return QString::fromStdString(s); }

QString runWords(const RunConfig& c) { return str(describeRun(c).line()); }

// Waits for `done`, asking `keepGoing` between looks; false when cancelled.
bool waitFor(const std::function<bool()>& done, const std::function<bool()>& keepGoing) {
  while (!done()) {
    if (keepGoing && !keepGoing()) return false;
    QThread::msleep(20);
  }
  return true;
}

// The chart a step's compared metric is read from in the window: the bytes from the traffic
// chart, memory from the memory chart, times within a step from the timeline, the loss from
// the loss chart, and the step's speed from the throughput chart. A step that compares nothing
// shows its run's loss curve, the first chart the window shows.
std::unique_ptr<Chart> chartFor(const Step& s) {
  // A choice prediction reads its choices' metrics ("ranks[0].idle_ms", ...) instead.
  const QString m = s.compare                                  ? s.compare->metric
                    : s.prediction && s.prediction->isChoice() ? s.prediction->choices[0].metric
                                                               : QString();
  if (m.contains("bytes")) return std::make_unique<TrafficChart>();
  if (m.contains("mem.")) return std::make_unique<MemoryChart>();
  if (m.contains("comm_ms") || m.contains("idle_ms") || m.contains("compute_ms") ||
      m.contains("bubble") || m.contains("backward_ms"))
    return std::make_unique<TimelineChart>();
  if (m.isEmpty() || m.contains("loss") || m.contains("staleness") || m.contains("accuracy"))
    return std::make_unique<LossChart>();
  return std::make_unique<ThroughputChart>();
}

// In the print look, dark on white, as every exported figure (chart_export.cpp).
QString draw(Chart& chart, const QString& png, LabStepRun& out) {
  chart.resize(kFigure);
  chart.applyLook(Chart::printLook());
  chart.fitSubtitle(kFigure.width());
  chart.replot();
  out.chartTitle = chart.title();
  if (!chart.savePng(png, kFigure.width(), kFigure.height(), kFigureScale))
    return QObject::tr("cannot write '%1'").arg(png);
  out.chartPng = png;
  return {};
}

void measureChoiceOr(const Step& s, LabStepRun& out, const std::function<void()>& numeric,
                     const std::function<ChoiceMeasurement()>& choice) {
  if (s.prediction && s.prediction->isChoice())
    out.choice = choice();
  else
    numeric();
}

void runExperiment(const Step& s, const RunConfig& config, const QString& png, LabStepRun& out,
                   const std::function<bool()>& keepGoing) {
  if (config.steps == 0) {
    out.error = QObject::tr("the experiment runs without end; the report runs bounded runs");
    return;
  }
  if (runPlace(config) != RunPlace::Threads) {
    out.error = QObject::tr("its ranks run as processes (%1 backend): run it in the window")
                    .arg(str(nameOf(config.backend)));
    return;
  }
  Session session;
  if (const std::string err = session.start(config); !err.empty()) {
    out.error = str(err);
    return;
  }
  MetricHistory history;
  QList<QJsonObject> steps;
  Snapshot last, now;
  int64_t seen = 0;
  const bool finished = waitFor(
      [&] {
        now = session.snapshot(seen, TimelineChart::kSteps);
        for (const StepMetrics& m : now.steps) {
          history.append(m);
          steps << stepJson(m);
        }
        if (!now.steps.empty()) {
          history.flush();
          last = now;
        }
        seen = now.stepsDone;
        session.release(seen);
        return now.state == RunState::Finished || now.state == RunState::Failed;
      },
      keepGoing);
  if (!finished) {
    session.stop();
    out.error = QObject::tr("cancelled");
    return;
  }
  if (now.state == RunState::Failed) {
    out.error = QObject::tr("the run failed: %1").arg(str(now.error));
    return;
  }
  std::unique_ptr<Chart> chart = chartFor(s);
  chart->setSubtitle(runSubtitle(last.config));
  if (auto* loss = dynamic_cast<LossChart*>(chart.get())) loss->showRunOf(last.config);
  chart->showHistory(history);
  if (auto* c = dynamic_cast<TrafficChart*>(chart.get())) c->showSnapshot(last);
  if (auto* c = dynamic_cast<MemoryChart*>(chart.get())) c->showSnapshot(last);
  if (auto* c = dynamic_cast<TimelineChart*>(chart.get())) c->showSnapshot(last);
  out.error = draw(*chart, png, out);
  measureChoiceOr(
      s, out,
      [&] {
        if (s.compare) out.measured = measuredValue(*s.compare, steps, &out.error);
      },
      [&] { return measuredChoice(*s.prediction, steps); });
}

// Waits for an engine job (a sweep, a benchmark): true with its result, false with `out.error`
// saying why not (cancelled, or the job's one line).
template <typename Job>
bool finishJob(Job& job, const std::function<bool()>& keepGoing, LabStepRun& out) {
  if (!waitFor([&] { return job.finished(); }, keepGoing)) {
    job.cancel();
    out.error = QObject::tr("cancelled");
    return false;
  }
  if (!job.error().empty() || !job.result()) {
    out.error = str(job.error());
    return false;
  }
  return true;
}

void runSweep(const Step& s, const RunConfig& base, const QString& png, LabStepRun& out,
              const std::function<bool()>& keepGoing) {
  jobs::SweepRequest request{
      .base = base,
      .ranks = std::vector<int>(s.sweep->ranks.begin(), s.sweep->ranks.end()),
      .steps = s.sweep->steps,
      .warmup = s.sweep->warmup};
  auto job = jobs::startSweep(request, {});
  if (!finishJob(*job, keepGoing, out)) return;
  const SweepResult& result = *job->result();
  SpeedupChart chart;
  chart.showSweep(result, describeSweep(base, result));
  out.error = draw(chart, png, out);
  const QJsonObject json = sweepJson(result, base);
  measureChoiceOr(
      s, out,
      [&] {
        if (s.compare) out.measured = measuredValue(*s.compare, json, &out.error);
      },
      [&] { return measuredChoice(*s.prediction, json); });
}

void runBench(const Step& s, const RunConfig& settings, const QString& png, LabStepRun& out,
              const std::function<bool()>& keepGoing) {
  auto job = jobs::startBench(BenchRunner::request(*s.bench, settings), {});
  if (!finishJob(*job, keepGoing, out)) return;
  BenchChart chart;
  chart.showResult(*job->result());
  out.error = draw(chart, png, out);
  const QJsonObject json = benchJson(*job->result());
  measureChoiceOr(
      s, out,
      [&] {
        if (s.compare) out.measured = measuredValue(*s.compare, json, &out.error);
      },
      [&] { return measuredChoice(*s.prediction, json); });
}

}  // namespace

bool stepRuns(const Step& step) {
  return step.experiment || step.sweep || (step.bench && !step.bench->kind.isEmpty());
}

LabStepRun runLabStep(const Step& s, const QString& pngPath,
                      const std::function<bool()>& keepGoing) {
  LabStepRun out;
  if (!stepRuns(s)) return out;
  QString error;
  const std::optional<RunConfig> config =
      configFromExperiment(s.experiment.value_or(QJsonObject()), &error);
  if (!config) {
    out.error = error;
    return out;
  }
  if (s.bench && !s.bench->kind.isEmpty()) {
    QStringList keys;
    for (auto it = s.bench->options.begin(); it != s.bench->options.end(); ++it)
      keys << it.key() + " " + it.value().toVariant().toString();
    out.run = QObject::tr("benchmark %1%2, measured on this machine's CPU")
                  .arg(s.bench->kind, keys.isEmpty() ? QString() : " (" + keys.join(", ") + ")");
    runBench(s, *config, pngPath, out, keepGoing);
  } else if (s.sweep) {
    QStringList ranks;
    for (int n : s.sweep->ranks) ranks << QString::number(n);
    out.run = QObject::tr("%1 · swept over %2 ranks, %3 timed steps each")
                  .arg(runWords(*config), ranks.join(", "))
                  .arg(s.sweep->steps);
    runSweep(s, *config, pngPath, out, keepGoing);
  } else {
    out.run = QObject::tr("%1 · %2 steps").arg(runWords(*config)).arg(config->steps);
    runExperiment(s, *config, pngPath, out, keepGoing);
  }
  return out;
}

}  // namespace paralab
