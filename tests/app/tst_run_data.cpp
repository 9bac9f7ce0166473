// The run's data from the engine to the charts and files: loading says how far it is, a CSV
// holds every step of a run far
// longer than what the window keeps in memory (checked against the run's own record), a long
// run is still drawn with its early curve, every live change is marked on every chart over
// steps and in their exports, and what the window holds stays the same however long it trains.
// Run: ctest -R tst_run_data --output-on-failure
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>
#include <map>
#include <nlohmann/json.hpp>

#include "charts/change_markers.h"
#include "charts/chart_hub.h"
#include "charts/latency_chart.h"
#include "charts/loss_chart.h"
#include "charts/metric_history.h"
#include "charts/throughput_chart.h"
#include "charts/timeline_chart.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::readLines;

namespace {

// Smaller than the window tests' quick run: thousands of steps in seconds.
RunConfig tinyConfig(int steps) {
  RunConfig c = test::quickConfig(steps);
  c.hidden = 16;
  c.layers = 1;
  c.batch = 32;
  c.optimizer = "sgd";  // steady at this size for thousands of steps
  c.lr = 0.01;
  c.evalEvery = 0;
  return c;
}

bool runToEnd(MainWindow& w, int timeoutMs = 120000) {
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  // A short run can end inside Start itself (its first poll): already caught counts.
  if (ended.isEmpty() && !ended.wait(timeoutMs)) {
    qWarning("no end of the run in %d ms: %s, %lld steps, start %s", timeoutMs,
             runStateName(w.runState()), (long long)w.history().stepsSeen(),
             w.startAction()->isEnabled() ? "enabled" : "disabled");
    return false;
  }
  if (!ended.at(0).at(0).toBool())
    qWarning("run failed: %s", qPrintable(ended.at(0).at(1).toString()));
  return ended.at(0).at(0).toBool();
}

// A step of a made-up run: the loss falls from 2.3, with a spike at step 137 and the lowest
// point at step 300 before it settles at 0.5 (a learning curve with features to lose).
StepMetrics madeUpStep(int64_t step) {
  StepMetrics m;
  m.step = step;
  m.loss = step == 137 ? 9.0 : step == 300 ? 0.01 : 0.5 + 1.8 * std::exp(-double(step) / 80.0);
  m.stepMs = 2.0 + 0.001 * double(step % 7);
  m.samplesPerS = 16 / (m.stepMs * 1e-3);
  return m;
}

// Every text of an SVG, joined by new lines.
QString svgText(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  QXmlStreamReader svg(&f);
  QStringList texts;
  while (!svg.atEnd())
    if (svg.readNext() == QXmlStreamReader::StartElement && svg.name() == u"text")
      texts << svg.readElementText(QXmlStreamReader::IncludeChildElements);
  return texts.join('\n');
}

}  // namespace

class TestRunData : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void loadingSaysHowFarItIs();  // first: the data set is read, not yet in memory
  void csvHoldsEveryStep();
  void longRunKeepsItsEarlyCurve();
  void movingMeanStartsWhereItsWindowIsFull();
  void liveChangesAreMarked();
  void heldDataDoesNotGrowWithTheRun();
  void runFilesAreRemoved();
};

// While a run loads, the status bar says what it is reading and how far it is, in words and a
// bar (Fashion-MNIST's four files take a second or more).
void TestRunData::loadingSaysHowFarItIs() {
  MainWindow w;
  RunConfig c = tinyConfig(2);
  c.dataset = "fashion-mnist";
  w.configPanel()->setConfig(c);
  auto* state = w.findChild<QLabel*>("stateLabel");
  auto* bar = w.findChild<QProgressBar*>("loadProgress");
  QVERIFY(state && bar);
  QVERIFY(bar->isHidden());
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(state->text().contains("loading — reading Fashion-MNIST"), 10000);
  QVERIFY2(state->text().contains(QRegularExpression("\\(\\d of 4\\)")), qPrintable(state->text()));
  QVERIFY(!bar->isHidden());
  QCOMPARE(bar->maximum(), 4);
  QTRY_VERIFY_WITH_TIMEOUT(w.runState() == RunState::Finished, 60000);
  QTRY_VERIFY(bar->isHidden());
  QVERIFY2(!state->text().contains("loading"), qPrintable(state->text()));
}

// More steps than the history keeps: the CSVs still have every one, equal to the run file's.
void TestRunData::csvHoldsEveryStep() {
  const int steps = 7000;
  MainWindow w;
  w.configPanel()->setConfig(tinyConfig(steps));
  QVERIFY(runToEnd(w));
  QCOMPARE(w.history().stepsSeen(), int64_t(steps));
  QVERIFY2(w.history().rows().size() < steps / 2, "the history reduced what it draws");

  // The run's own record: its file, every line as paralab-run --json prints it.
  std::vector<nlohmann::json> record;
  QFile file(w.history().runFile()->path());
  QVERIFY(file.open(QIODevice::ReadOnly));
  while (!file.atEnd()) record.push_back(nlohmann::json::parse(file.readLine().toStdString()));
  QCOMPARE(int(record.size()), steps);
  QCOMPARE(record.front().at("schema").get<int>(), kMetricsSchema);

  QTemporaryDir dir;
  QCOMPARE(w.exportAllTo(dir.path()), QString());
  const QStringList loss = readLines(dir.filePath("loss.csv"));
  const QStringList rate = readLines(dir.filePath("throughput.csv"));
  const QStringList latency = readLines(dir.filePath("latency.csv"));
  for (const QStringList* csv : {&loss, &rate, &latency}) QCOMPARE(csv->size(), 1 + steps);
  for (int i = 0; i < steps; ++i) {
    const nlohmann::json& r = record[size_t(i)];
    const QStringList l = loss[i + 1].split(','), t = rate[i + 1].split(','),
                      p = latency[i + 1].split(',');
    QCOMPARE(l[0].toLongLong(), r.at("step").get<int64_t>());
    QCOMPARE(t[0], l[0]);
    QCOMPARE(p[0], l[0]);
    // Ten significant digits of the same numbers.
    QVERIFY(qAbs(l[1].toDouble() / r.at("loss").get<double>() - 1) < 1e-9);
    QVERIFY(qAbs(t[1].toDouble() / r.at("samples_per_s").get<double>() - 1) < 1e-9);
    QVERIFY(qAbs(p[5].toDouble() / r.at("step_ms").get<double>() - 1) < 1e-9);
  }
  // The mean of the last 20 steps, made again from the file, as drawn.
  const auto& last = w.history().rows().back();
  QVERIFY(qAbs(loss.last().split(',')[2].toDouble() / last.lossMean - 1) < 1e-9);
}

// 50,000 steps kept in a few thousand rows, which still hold the early spike and dip, and the
// loss chart draws them.
void TestRunData::longRunKeepsItsEarlyCurve() {
  MetricHistory h;
  for (int64_t s = 1; s <= 50000; ++s) h.append(madeUpStep(s));
  QVERIFY(h.rows().size() < h.maxRows());
  QCOMPARE(h.rows().front().step, 1.0);
  QCOMPARE(h.rows().back().step, 50000.0);
  LossChart chart;
  chart.showHistory(h);
  QCPGraph* drawn = chart.graph(0);  // loss, each step
  QCOMPARE(drawn->dataCount(), int(h.rows().size()));
  auto valueAt = [&](double step) {
    const auto it = drawn->data()->findBegin(step, false);
    return it != drawn->data()->constEnd() && it->key == step ? it->value : -1.0;
  };
  QCOMPARE(valueAt(1), madeUpStep(1).loss);
  QCOMPARE(valueAt(137), 9.0);   // the early maximum
  QCOMPARE(valueAt(300), 0.01);  // and minimum
  // Around them, the fall of the curve is there at the chart's resolution: no stretch of the
  // first 2000 steps without a point is wider than 1 % of the run (5 px of a 500 px plot).
  double previous = 0;
  for (const auto& r : h.rows()) {
    if (r.step > 2000) break;
    QVERIFY2(r.step - previous <= 50000.0 / 100, qPrintable(QString::number(r.step)));
    previous = r.step;
  }
  // Drawn points are measured ones: each is the made-up step of that number.
  for (const auto& r : h.rows()) QCOMPARE(r.loss, madeUpStep(int64_t(r.step)).loss);
}

// The mean of the last 20 steps is drawn from step 20, where there are 20 steps to average: a
// mean of fewer would fall with the early losses and bend where its window fills.
void TestRunData::movingMeanStartsWhereItsWindowIsFull() {
  MetricHistory h;
  for (int64_t s = 1; s <= 60; ++s) h.append(madeUpStep(s));
  LossChart chart;
  chart.showHistory(h);
  QCPGraph* mean = chart.graph(1);
  QCOMPARE(mean->dataCount(), 60 - MetricHistory::kMeanWindow + 1);
  QCOMPARE(mean->data()->begin()->key, double(MetricHistory::kMeanWindow));
  double sum = 0;
  for (int64_t s = 1; s <= MetricHistory::kMeanWindow; ++s) sum += madeUpStep(s).loss;
  QCOMPARE(mean->data()->begin()->value, sum / MetricHistory::kMeanWindow);
  QVERIFY(std::isnan(h.rows()[0].lossMean));
  QCOMPARE(h.recentLoss(), h.rows().back().lossMean);
}

// Two live changes: two numbered markers with legend entries on each chart over steps, at the
// steps the engine applied them after, and the same in the exported figures.
void TestRunData::liveChangesAreMarked() {
  MainWindow w;
  RunConfig c = tinyConfig(0);
  c.ranks = 2;
  w.configPanel()->setConfig(c);
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 5, 20000);
  for (int zero : {1, 0}) {
    RunConfig next = w.configPanel()->config();
    next.zero = zero;
    w.configPanel()->setConfig(next);
    QTRY_COMPARE_WITH_TIMEOUT(w.runConfig().zero, zero, 20000);
    const int64_t seen = w.history().stepsSeen();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() > seen + 3, 20000);
  }
  w.pause();
  QCOMPARE(w.history().changes().size(), 2);
  QCOMPARE(w.liveChanges().size(), 2);
  const MetricHistory::Change first = w.history().changes()[0];
  QVERIFY2(first.text.contains("zero 0 → 1"), qPrintable(first.text));
  QVERIFY(w.liveChanges()[0].startsWith(QString("after step %1:").arg(qlonglong(first.step))));
  // The steps the engine changed after, from the run's record: ZeRO-1 reduce-scatters the
  // gradients where plain data parallelism all-reduces them.
  std::map<int64_t, QString> gradientOp;  // rank 0's, per step
  QVERIFY(w.history()
              .steps()
              .forEach([&](const MetricHistory::Row&, const StepMetrics& m) {
                for (const OpTraffic& op : m.ranks.at(0).ops)
                  if (op.op == "allreduce" || op.op == "reducescatter")
                    gradientOp[m.step] = QString::fromStdString(op.op);
              })
              .isEmpty());
  const auto after = [&](int i) { return int64_t(w.history().changes()[i].step); };
  QCOMPARE(gradientOp[after(0)], QString("allreduce"));
  QCOMPARE(gradientOp[after(0) + 1], QString("reducescatter"));
  QCOMPARE(gradientOp[after(1)], QString("reducescatter"));
  QCOMPARE(gradientOp[after(1) + 1], QString("allreduce"));
  QTemporaryDir dir;
  QCOMPARE(w.exportAllTo(dir.path()), QString());
  const QList<Chart*> overSteps = {w.chartHub()->find<LossChart>(),
                                   w.chartHub()->find<ThroughputChart>(),
                                   w.chartHub()->find<LatencyChart>()};
  for (Chart* chart : overSteps) {
    QVERIFY(chart && chart->changeMarkers());
    QCOMPARE(chart->changeMarkers()->count(), 2);
    // Drawn between the last step under the old settings and the first under the new.
    QList<double> lines;
    for (int i = 0; i < chart->itemCount(); ++i)
      if (auto* line = qobject_cast<QCPItemStraightLine*>(chart->item(i)))
        lines << line->point1->coords().x();
    QCOMPARE(lines, (QList<double>{after(0) + 0.5, after(1) + 0.5}));
    const QStringList legend = chart->changeMarkers()->legendTexts();
    QCOMPARE(legend.size(), 2);
    QVERIFY2(legend[0].startsWith(QString("1 · after step %1: ").arg(qlonglong(first.step))),
             qPrintable(legend[0]));
    QVERIFY2(legend[1].startsWith("2 · after step "), qPrintable(legend[1]));
    // In the chart's legend, drawn with the series, and so in every export of it.
    const QString text = svgText(dir.filePath(chart->stem() + ".svg"));
    for (const QString& entry : legend)
      QVERIFY2(text.contains(entry.section(':', 0, 0)), qPrintable(chart->stem() + ": " + text));
    // Kept for a look (screenshots/ in the build tree, beside tst_app's).
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots";
    QDir().mkpath(shots);
    QFile::remove(shots + "/live-changes-" + chart->stem() + ".png");
    QFile::copy(dir.filePath(chart->stem() + ".png"),
                shots + "/live-changes-" + chart->stem() + ".png");
  }
  w.reset();
  for (Chart* chart : overSteps) QCOMPARE(chart->changeMarkers()->count(), 0);
}

// What the window holds after N steps and after 3N: the same bounds, whatever N (the history's
// rows, the charts' points, items and legend entries, the timeline's spans).
void TestRunData::heldDataDoesNotGrowWithTheRun() {
  MainWindow w;
  RunConfig c = tinyConfig(0);
  c.evalEvery = 25;
  c.evalSamples = 64;
  w.configPanel()->setConfig(c);
  w.resize(1600, 1000);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.chartHub()->showEveryChart();
  w.startAction()->trigger();
  struct Held {
    int64_t steps = 0;
    int rows = 0, accuracy = 0, points = 0, items = 0, legend = 0;
    size_t spans = 0;
  };
  const auto held = [&] {
    Held h;
    h.steps = w.history().stepsSeen();
    h.rows = int(w.history().rows().size());
    h.accuracy = int(w.history().accuracy().size());
    for (Chart* chart : w.charts()) {
      h.points += chart->pointCount();
      h.items += chart->itemCount();
      h.legend += chart->legend->itemCount();
    }
    for (const auto& rank : w.chartHub()->lastSnapshot().spans) h.spans += rank.size();
    return h;
  };
  // From N, the history has begun to reduce what it keeps (past maxRows steps).
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= w.history().maxRows() + 1000, 100000);
  const Held early = held();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 3 * early.steps, 150000);
  const Held late = held();
  w.pause();
  qInfo(
      "held after %lld / %lld steps: rows %d / %d, accuracy %d / %d, points %d / %d, items %d / "
      "%d, spans %zu / %zu",
      (long long)early.steps, (long long)late.steps, early.rows, late.rows, early.accuracy,
      late.accuracy, early.points, late.points, early.items, late.items, early.spans, late.spans);
  const int maxRows = w.history().maxRows();
  for (const Held& h : {early, late}) {
    QVERIFY(h.rows < maxRows);
    QVERIFY(h.accuracy < maxRows / 4);
    // Points: loss (3 series), throughput (2) and latency (5) draw at most the rows each; the
    // charts of the last step a few per rank.
    QVERIFY2(h.points < 10 * maxRows + 1000, qPrintable(QString::number(h.points)));
    QVERIFY2(h.items < 200, qPrintable(QString::number(h.items)));
    QVERIFY2(h.legend < 80, qPrintable(QString::number(h.legend)));
    // The spans of the timeline's last steps: a handful per rank and step.
    QVERIFY2(h.spans < size_t(200 * c.ranks * TimelineChart::kSteps),
             qPrintable(QString::number(h.spans)));
  }
  QVERIFY(late.items <= early.items + 4);  // the same items, give or take a changed label
  w.reset();
}

// A run's file goes when nothing shows the run any more: kept while the loss chart overlays
// it, removed when the overlay goes or the window closes.
void TestRunData::runFilesAreRemoved() {
  QString first, second;
  {
    MainWindow w;
    w.configPanel()->setConfig(tinyConfig(30));
    QVERIFY(runToEnd(w));
    first = w.history().runFile()->path();
    QVERIFY(QFile::exists(first));
    QVERIFY(runToEnd(w));  // the first run stays under the second, faded
    second = w.history().runFile()->path();
    QVERIFY(first != second);
    QVERIFY(QFile::exists(first));
    w.chartHub()->find<LossChart>()->clearOverlays();
    QVERIFY(!QFile::exists(first));
    QVERIFY(QFile::exists(second));
  }
  QVERIFY(!QFile::exists(second));
  // None of this process's is left (other test programs may be writing theirs meanwhile).
  const QString mine = QString("run-%1-*.jsonl").arg(QCoreApplication::applicationPid());
  QVERIFY(QDir(RunFile::defaultDir()).entryList({mine}, QDir::Files).isEmpty());
}

QTEST_MAIN(TestRunData)
#include "tst_run_data.moc"
