// The charts' exports and real runs, offscreen: an empty history clears every chart, a subtitle
// wraps to the chart's width, every export (PNG, PDF, SVG, CSV) decodes, and real short runs
// (4 thread ranks with ZeRO-2, a pipeline, a sweep) are drawn and saved as PNGs under
// <build>/screenshots/. Run: ctest -R tst_charts_runs --output-on-failure
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
#include "chart_inputs.h"

using namespace paralab;
using namespace paralab::test;

class TestChartRuns : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void emptyHistoryClears();
  void subtitleWrapsToTheWidth();
  void exportsDecode();
  void realRuns();
};

void TestChartRuns::initTestCase() {
  QApplication::setStyle("Fusion");
  QApplication::setPalette(QApplication::style()->standardPalette());
}

void TestChartRuns::emptyHistoryClears() {
  // The window resets every chart of the run with an empty history.
  const Snapshot s = syntheticSnapshot(2);
  MemoryChart memory;
  TrafficChart traffic;
  LinkHeatmap links;
  TimelineChart timeline;
  SpeedupChart speedup;
  memory.showSnapshot(s), traffic.showSnapshot(s), links.showSnapshot(s), timeline.showSnapshot(s);
  speedup.showSweep(analyseSweep(Scaling::Strong, {1, 2}, {10, 6}, 64));
  const MetricHistory empty;
  for (Chart* c : std::initializer_list<Chart*>{&memory, &traffic, &links, &timeline}) {
    QVERIFY(c->followsRun());
    QVERIFY(c->pointCount() > 0);
    c->showHistory(empty);
    QCOMPARE(c->pointCount(), 0);
  }
  // A sweep is not a run: a run's reset leaves it drawn (tst_window_trust).
  QVERIFY(!speedup.followsRun());
  const int sweep = speedup.pointCount();
  QVERIFY(sweep > 0);
  speedup.showHistory(empty);
  QCOMPARE(speedup.pointCount(), sweep);
  // A snapshot without new steps or spans leaves them as they are.
  memory.showSnapshot(s);
  memory.showSnapshot(Snapshot{});
  QVERIFY(memory.pointCount() > 0);
}

// A run's description is wider than a chart in a narrow dock: centred, it lost both ends. It
// wraps at its " · " parts instead, every line within the chart, every part kept (a single part
// too long for a whole line is elided in its middle, never cut at an edge).
void TestChartRuns::subtitleWrapsToTheWidth() {
  const QString run =
      "measured · MLP H=128 L=4 · fashion-mnist · B=128 · sync · 4 ranks · tp 2 · pp 2 · "
      "momentum lr 0.05 · link 10 GbE (emulated)";
  TimelineChart chart;
  chart.setSubtitle(run);
  chart.show();  // a hidden widget gets its resize events only when shown
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  QCPTextElement* shown = nullptr;
  for (QCPTextElement* e : chart.findChildren<QCPTextElement*>())
    if (e->text().startsWith("measured")) shown = e;
  QVERIFY(shown);
  for (const int width : {1200, 640, 420, 340}) {
    chart.resize(width, 400);
    const QStringList lines = shown->text().split('\n');
    const QFontMetrics fm(shown->font());
    for (const QString& line : lines)
      QVERIFY2(fm.horizontalAdvance(line) <= width - 16,
               qPrintable(QString("%1 px: '%2' is wider").arg(width).arg(line)));
    QCOMPARE(lines.join(" · "), run);  // broken only between parts: nothing lost
    for (QCPItemText* t : chart.findChildren<QCPItemText*>())  // the empty plot's placeholder
      if (t->visible())
        for (const QString& line : t->text().split('\n'))
          QVERIFY2(QFontMetrics(t->font()).horizontalAdvance(line) <= width - 16,
                   qPrintable(QString("%1 px: '%2' is wider").arg(width).arg(line)));
    QCOMPARE(chart.subtitle(), run);
    if (width == 1200) QCOMPARE(lines.size(), 1);
    if (width == 340) {
      QVERIFY(lines.size() >= 3);
      chart.replot();
      QVERIFY(chart.grab().save(screenshotDir() + "/subtitle-340px.png"));
    }
  }
  chart.setSubtitle("measured · " + QString("x").repeated(200));  // no break fits: elided
  for (const QString& line : shown->text().split('\n'))
    QVERIFY(QFontMetrics(shown->font()).horizontalAdvance(line) <= chart.width() - 16);
  QVERIFY(shown->text().contains(QChar(0x2026)));
}

void TestChartRuns::exportsDecode() {
  const Snapshot s = syntheticSnapshot(4);
  MetricHistory h;
  for (const StepMetrics& m : s.steps) h.append(m);
  LatencyChart latency;
  SpeedupChart speedup;
  MemoryChart memory;
  TrafficChart traffic;
  LinkHeatmap links;
  TimelineChart timeline;
  latency.showHistory(h);
  speedup.showSweep(analyseSweep(Scaling::Strong, {1, 2, 4}, {100, 60, 40}, 64));
  memory.showSnapshot(s), traffic.showSnapshot(s), links.showSnapshot(s), timeline.showSnapshot(s);
  const QList<Chart*> charts{&latency, &speedup, &memory, &traffic, &links, &timeline};
  QTemporaryDir dir;
  QStringList written;
  const QSize size(800, 500);
  QCOMPARE(exportAllCharts(charts, dir.path(), &written, size), QString());
  QCOMPARE(written.size(), charts.size() * 4);
  for (Chart* chart : charts) {
    const QString stem = dir.filePath(chart->stem());
    const QImage png(stem + ".png");
    QCOMPARE(png.size(), size);
    QFile pdf(stem + ".pdf");
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QVERIFY(pdf.read(5).startsWith("%PDF"));
    QFile svgFile(stem + ".svg");
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    QXmlStreamReader svg(&svgFile);
    int elements = 0;
    while (!svg.atEnd())
      if (svg.readNext() == QXmlStreamReader::StartElement) ++elements;
    QVERIFY2(!svg.hasError(), qPrintable(stem + ": " + svg.errorString()));
    QVERIFY(elements > 10);
    QFile csvFile(stem + ".csv");
    QVERIFY(csvFile.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList csv = QString::fromUtf8(csvFile.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(csv, csvLines(*chart));  // the file is the table the chart holds
    QVERIFY2(csv.size() > 1, qPrintable(stem));
    for (const QString& row : csv.mid(1))
      QCOMPARE(row.count(','), csv[0].count(','));  // a header and rectangular rows
  }
}

// [SECTION] Real runs, drawn and saved for a look

void TestChartRuns::realRuns() {
  // 4 thread ranks, ZeRO-2 with Adam.
  RunConfig c = quickRun();
  c.ranks = 4;
  c.zero = 2;
  const Snapshot zero = runToEnd(c);
  QCOMPARE(zero.state, RunState::Finished);
  QCOMPARE(int(zero.spans.size()), 4);
  // The per-op split covers every byte the communicator counted.
  for (const RankMetrics& r : zero.steps.back().ranks) {
    int64_t sent = 0, recv = 0;
    for (const OpTraffic& o : r.ops) sent += o.bytesSent, recv += o.bytesRecv;
    QCOMPARE(sent, r.bytesSent);
    QCOMPARE(recv, r.bytesRecv);
    QVERIFY(!r.ops.empty());
  }
  MetricHistory h;
  for (const StepMetrics& m : zero.steps) h.append(m);
  const QString subtitle =
      QString("measured · ZeRO-2, 4 thread ranks, Adam, MLP H=%1 L=%2, batch %3")
          .arg(c.hidden)
          .arg(c.layers)
          .arg(c.batch);
  LatencyChart latency;
  MemoryChart memory;
  TrafficChart traffic;
  LinkHeatmap links;
  TimelineChart timeline;
  for (Chart* chart : std::initializer_list<Chart*>{&latency, &memory, &traffic, &links, &timeline})
    chart->setSubtitle(subtitle);
  latency.showHistory(h);
  memory.showSnapshot(zero);
  traffic.showSnapshot(zero);
  links.showSnapshot(zero);
  timeline.showSnapshot(zero);
  QVERIFY(memory.referenceBars()->dataCount() == 4);
  saveScreenshot(latency, "latency");
  saveScreenshot(memory, "memory");
  saveScreenshot(traffic, "traffic");
  saveScreenshot(links, "links");
  saveScreenshot(timeline, "timeline");
  QCOMPARE(timeline.writeChromeTrace(screenshotDir() + "/timeline-trace.json"), QString());

  // A pipeline: 4 stages, 4 micro-batches; bubbles show as idle.
  RunConfig p = quickRun();
  p.layers = 4;
  p.ranks = 4;
  p.pp = 4;
  p.microbatches = 4;
  p.optimizer = "momentum";
  p.lr = 0.02;
  if (const auto err = p.validate())
    QSKIP(qPrintable("pipeline not available: " + QString::fromStdString(*err)));
  const Snapshot pipe = runToEnd(p);
  QCOMPARE(pipe.state, RunState::Finished);
  TimelineChart pipeline;
  pipeline.setSubtitle(
      QString("measured · pipeline, 4 stages, 4 micro-batches (%1)").arg(p.schedule.c_str()));
  pipeline.showSnapshot(pipe);
  saveScreenshot(pipeline, "timeline-pipeline");
  // The bubble is visible: every stage spends time in a transfer with nothing to compute.
  for (int r = 0; r < 4; ++r) {
    double waited = 0;
    for (const TimelineChart::Bar& w : pipeline.waiting())
      if (w.rank == r) waited += w.endMs - w.startMs;
    QVERIFY2(waited > 0, qPrintable(QString("stage %1 never waits").arg(r)));
  }
  TrafficChart pipeTraffic;
  pipeTraffic.setSubtitle(pipeline.subtitle());
  pipeTraffic.showSnapshot(pipe);
  saveScreenshot(pipeTraffic, "traffic-pipeline");
  // send (pp) and recv (pp) share the point-to-point colour: each legend entry still has its own.
  QVERIFY(pipeTraffic.layers().size() >= 2);
  for (int i = 0; i < pipeTraffic.layers().size(); ++i)
    for (int j = i + 1; j < pipeTraffic.layers().size(); ++j)
      QVERIFY2(pipeTraffic.layers()[i]->brush().color() != pipeTraffic.layers()[j]->brush().color(),
               qPrintable(pipeTraffic.layers()[i]->name() + " looks like " +
                          pipeTraffic.layers()[j]->name()));
  LinkHeatmap pipeLinks;
  pipeLinks.setSubtitle(pipeline.subtitle());
  pipeLinks.showSnapshot(pipe);
  saveScreenshot(pipeLinks, "links-pipeline");

  // Loss overlays: serial, sync DP and Hogwild on one chart.
  LossChart loss;
  for (const char* strategy : {"serial", "sync", "hogwild"}) {
    RunConfig l = quickRun();
    l.steps = 120;
    l.optimizer = "sgd";
    l.lr = 0.05;
    if (std::string(strategy) != "serial") l.ranks = 4, l.strategy = strategy;
    const Snapshot run = runToEnd(l);
    MetricHistory lh;
    for (const StepMetrics& m : run.steps) lh.append(m);
    loss.showHistory(lh);
    if (std::string(strategy) != "hogwild")
      loss.keepAsOverlay(LossChart::runLabel(l));
    else
      loss.setSubtitle("measured · now: " + LossChart::runLabel(l));
  }
  saveScreenshot(loss, "loss-overlays");

  // A strong-scaling sweep at 1, 2, 4 ranks.
  // Wide layers, so compute outweighs the all-reduce.
  RunConfig sw = quickRun();
  sw.hidden = 512;
  sw.batch = 512;
  const SweepResult sweep = runSweep(sw, {1, 2, 4}, 8, 2);
  SpeedupChart speedup;
  speedup.setSubtitle(QString("measured · strong scaling, MLP H=512, global batch 512, median of "
                              "8 steps, on %1 cores")
                          .arg(std::thread::hardware_concurrency()));
  speedup.showSweep(sweep);
  saveScreenshot(speedup, "speedup");
}

QTEST_MAIN(TestChartRuns)
#include "tst_charts_runs.moc"
