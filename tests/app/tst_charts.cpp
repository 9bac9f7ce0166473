// The lab window's measured charts, offscreen: each fed from a synthetic Snapshot or sweep
// shows exactly the values in it, the Chrome trace parses, and the model-states formulas give
// the lesson's numbers. Exports and real runs are in tst_charts_runs.cpp.
// Run: ctest -R tst_charts --output-on-failure
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

#include "chart_inputs.h"
#include "charts/bench_chart.h"
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
#include "text_boxes.h"
#include "train/trainer.h"

using namespace paralab;
using namespace paralab::test;

class TestCharts : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void memoryReference();
  void byteUnits();
  void latencyStacksTheBreakdown();
  void latencyColumnsKeepTheHighestStep();
  void stepAxesTickWholeSteps();
  void speedupDrawsTheSweep();
  void fitOutsideItsRangeIsSaidInWords();
  void efficiencyLabelsStayInThePlot();
  void memoryBarsAreTheSnapshotBytes();
  void trafficBarsAreTheCountedBytes();
  void heatmapCellsAreSentTo();
  void timelineDrawsEverySpan();
  void timelineDrawsTheRing();
  void chromeTraceParses();
  void lossOverlays();
  void holdingsMapDrawsTheSlices();
  void holdingsMapLabelsFitEveryRoom();
  void benchChartDrawsEachKind_data();
  void benchChartDrawsEachKind();
  void benchChartLabelsTheGpt_data();
  void benchChartLabelsTheGpt();
  void benchChartDrawsTheRoofline_data();
  void benchChartDrawsTheRoofline();
  void benchChartDrawsLayouts_data();
  void benchChartDrawsLayouts();
};

void TestCharts::initTestCase() {
  QApplication::setStyle("Fusion");
  QApplication::setPalette(QApplication::style()->standardPalette());
}

// [SECTION] The formulas

void TestCharts::memoryReference() {
  QCOMPARE(optimizerBytesPerParam("sgd"), 0);
  QCOMPARE(optimizerBytesPerParam("momentum"), 4);
  QCOMPARE(optimizerBytesPerParam("adam"), 8);
  const int64_t P = 1000;
  const int N = 4;
  // Adam: 16P; ZeRO-1 4P + 4P + 8P/N; ZeRO-2 4P + 12P/N; ZeRO-3 16P/N.
  QCOMPARE(modelStatesReference(P, 0, 8, N)->total(), 16000.0);
  QCOMPARE(modelStatesReference(P, 1, 8, N)->total(), 4000.0 + 4000.0 + 2000.0);
  QCOMPARE(modelStatesReference(P, 2, 8, N)->total(), 4000.0 + 3000.0);
  QCOMPARE(modelStatesReference(P, 3, 8, N)->total(), 4000.0);
  // Momentum: 12P; ZeRO-1 4P + 4P + 4P/N.
  QCOMPARE(modelStatesReference(P, 0, 4, N)->total(), 12000.0);
  QCOMPARE(modelStatesReference(P, 1, 4, N)->total(), 9000.0);
  QCOMPARE(modelStatesReference(P, 2, 4, N)->total(), 6000.0);
  QCOMPARE(modelStatesReference(P, 3, 4, N)->total(), 3000.0);
  // SGD keeps no state: 8P.
  QCOMPARE(modelStatesReference(P, 0, 0, N)->total(), 8000.0);
  // The parts.
  const auto z2 = *modelStatesReference(P, 2, 8, N);
  QCOMPARE(z2.params, 4000.0);
  QCOMPARE(z2.grads, 1000.0);
  QCOMPARE(z2.optimizer, 2000.0);
  // The formulas as the lessons write them.
  QCOMPARE(modelStatesReference(P, 0, 8, N)->formula, QString("4P + 4P + 8P = 16P"));
  QCOMPARE(modelStatesReference(P, 1, 8, N)->formula, QString("4P + 4P + 8P/N"));
  QCOMPARE(modelStatesReference(P, 1, 4, N)->formula, QString("4P + 4P + 4P/N"));
  QCOMPARE(modelStatesReference(P, 2, 8, N)->formula, QString("4P + 12P/N"));
  QCOMPARE(modelStatesReference(P, 3, 8, N)->formula, QString("16P/N"));
  QVERIFY(!modelStatesReference(P, 4, 8, N));
  QVERIFY(!modelStatesReference(P, 1, 8, 0));
  // From a run's configuration: only where the lesson states the formula.
  RunConfig c;
  c.ranks = 4, c.zero = 2, c.optimizer = "adam";
  QCOMPARE(modelStatesReference(c, P)->total(), 7000.0);
  c.strategy = "hogwild";
  QVERIFY(!modelStatesReference(c, P));
  c.strategy = "sync", c.tp = 2, c.zero = 0;
  QVERIFY(!modelStatesReference(c, P));
}

void TestCharts::byteUnits() {
  QCOMPARE(byteUnitFor(1000).name, QString("B"));
  QCOMPARE(byteUnitFor(1024).name, QString("KiB"));
  QCOMPARE(byteUnitFor(5.0 * 1024 * 1024).bytes, 1024.0 * 1024.0);
  QCOMPARE(byteUnitFor(3e12).name, QString("GiB"));
  QCOMPARE(formatBytes(512), QString("512 B"));
  QCOMPARE(formatBytes(1.5 * 1024 * 1024), QString("1.50 MiB"));
}

// [SECTION] Each chart shows exactly what it was given

// A dozen steps on a chart a third of a small window wide: the step axis reads 0, 2, 4 ...,
// never 2.5 (there is no half step). Loss, throughput and latency share the axis.
void TestCharts::stepAxesTickWholeSteps() {
  MetricHistory h;
  for (int64_t i = 1; i <= 12; ++i) h.append(syntheticStep(i, 2));
  LossChart loss;
  LatencyChart latency;
  for (Chart* c : std::initializer_list<Chart*>{&loss, &latency}) {
    c->resize(460, 300);
    c->showHistory(h);
    c->replot();
    const QVector<double> ticks = c->xAxis->tickVector();
    QVERIFY2(ticks.size() >= 3, qPrintable(c->stem()));
    for (double t : ticks)
      QVERIFY2(t == std::floor(t), qPrintable(QString("%1: a tick at %2").arg(c->stem()).arg(t)));
  }
}

void TestCharts::latencyStacksTheBreakdown() {
  const Snapshot s = syntheticSnapshot(2);
  MetricHistory h;
  for (const StepMetrics& m : s.steps) h.append(m);
  LatencyChart chart;
  chart.showHistory(h);
  const QList<const StackBand*> bands = chart.bands();
  QCOMPARE(bands.size(), 4);
  for (const StackBand* band : bands) {
    QCOMPARE(band->keys().size(), int(s.steps.size()));
    QVERIFY(chart.legend->itemWithPlottable(band));
    QCOMPARE(band->brush().color().alpha(), 255);  // opaque: the bands below do not show through
  }
  for (const StepMetrics& m : s.steps) {
    const double compute = m.dataMs + m.forwardMs + m.backwardMs;
    const double x = double(m.step);
    // The band tops are the running sums, in the order compute, optimizer, comm, idle.
    QCOMPARE(bands[0]->topAt(x), compute);
    QCOMPARE(bands[1]->topAt(x), compute + m.optimizerMs);
    QCOMPARE(bands[2]->topAt(x), compute + m.optimizerMs + m.ranks[0].commMs);
    QCOMPARE(bands[3]->topAt(x), compute + m.optimizerMs + m.ranks[0].commMs + m.ranks[0].idleMs);
    QCOMPARE(valueAt(chart.wall(), x), m.stepMs);
  }
  QVERIFY(bands[2]->name().contains("overlap"));
  // Drawn: in the middle of each step's bar, each band's colour halfway up its part.
  chart.resize(480, 320);
  chart.replot();
  const QImage image = chart.toPixmap(480, 320, 1.0).toImage();
  int checked = 0;
  for (const StepMetrics& m : s.steps) {
    const int x = int(std::lround(chart.xAxis->coordToPixel(double(m.step))));
    double bottom = 0;
    for (const StackBand* band : bands) {
      const double top = band->topAt(double(m.step));
      const double y0 = chart.yAxis->coordToPixel(bottom), y1 = chart.yAxis->coordToPixel(top);
      bottom = top;
      // Thick enough to hold a pixel of its own, clear of the wall line and its antialiasing.
      const double wallY = chart.yAxis->coordToPixel(m.stepMs);
      const int y = int(std::lround((y0 + y1) / 2));
      if (y0 - y1 < 6 || std::abs(y - wallY) < 4) continue;
      QCOMPARE(image.pixelColor(x, y).rgb(), band->brush().color().rgb());
      ++checked;
    }
  }
  QVERIFY2(checked >= 2, qPrintable(QString("%1 band middles checked").arg(checked)));
  QVERIFY(chart.toolTip().contains("overlap"));
  // The CSV holds the parts, not the sums.
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("step,compute_ms,optimizer_ms,comm_ms,idle_ms,step_ms"));
  QCOMPARE(csv.size(), 1 + int(s.steps.size()));
  const StepMetrics& m1 = s.steps[0];
  QCOMPARE(csv[1], QString("1,%1,%2,%3,%4,%5")
                       .arg(m1.dataMs + m1.forwardMs + m1.backwardMs)
                       .arg(m1.optimizerMs)
                       .arg(m1.ranks[0].commMs)
                       .arg(m1.ranks[0].idleMs)
                       .arg(m1.stepMs));
}

// Thousands of steps on a few hundred pixels: a column holding a slow step and fast ones shows
// the slow step's compute, as a line through all of them would (never a smoothed middle).
void TestCharts::latencyColumnsKeepTheHighestStep() {
  MetricHistory h;
  for (int64_t i = 1; i <= 3000; ++i) {
    StepMetrics m = syntheticStep(i, 1);
    m.dataMs = 0, m.backwardMs = 0, m.optimizerMs = 0, m.ranks[0].commMs = 0, m.ranks[0].idleMs = 0;
    m.forwardMs = i % 7 == 0 ? 20.0 : 5.0;  // every seventh step slow
    // The history keeps each stretch's slowest step by its throughput (MetricHistory).
    m.samplesPerS = 1000.0 / m.forwardMs;
    m.stepMs = 25.0;  // the wall line clear of the pixels looked at
    h.append(m);
  }
  LatencyChart chart;
  chart.resize(420, 300);
  chart.showHistory(h);
  chart.replot();
  const QImage image = chart.toPixmap(420, 300, 1.0).toImage();
  const QRgb compute = chart.bands()[0]->brush().color().rgb();
  const int y = int(std::lround(chart.yAxis->coordToPixel(12.5)));  // above fast, below slow, off grid
  const QRect plot = chart.axisRect()->rect();
  const int first = int(chart.xAxis->coordToPixel(50)), last = int(chart.xAxis->coordToPixel(2950));
  QVERIFY(last - first > 200 && first > plot.left() && last < plot.right());
  for (int x = first; x <= last; ++x)
    QVERIFY2(image.pixel(x, y) == compute, qPrintable(QString("column %1: %2").arg(x).arg(image.pixel(x, y), 0, 16)));
}

void TestCharts::speedupDrawsTheSweep() {
  const SweepResult strong = analyseSweep("strong", {1, 2, 4, 8}, {100, 56, 31, 19}, 256);
  SpeedupChart chart;
  chart.showSweep(strong);
  QCOMPARE(chart.measured()->dataCount(), 4);
  for (const SweepPoint& p : strong.points) {
    QCOMPARE(valueAt(chart.measured(), p.ranks), p.speedup);
    // The fit line passes through the fit's own values at every rank count.
    QCOMPARE(valueAt(chart.fit(), p.ranks), strong.amdahl.speedup(p.ranks));
  }
  QCOMPARE(valueAt(chart.ideal(), 8), 8.0);
  QVERIFY(chart.fit()->name().contains("Amdahl"));
  QVERIFY(chart.fit()->name().contains(QString::number(strong.amdahl.p, 'f', 3)));
  // Ranks beyond the machine's cores are marked; within them, nothing is.
  QVERIFY(!chart.coresLine());  // cores not known
  SweepResult onTwoCores = strong;
  onTwoCores.cores = 2;
  chart.showSweep(onTwoCores);
  QVERIFY(chart.coresLine());
  QCOMPARE(chart.coresLine()->point1->coords().x(), 2.0);
  SweepResult onEight = strong;
  onEight.cores = 8;
  chart.showSweep(onEight);
  QVERIFY(!chart.coresLine());
  chart.showSweep(strong);
  QVERIFY(chart.fit()->name().contains("R²"));
  QVERIFY(chart.fit()->name().contains("reference"));
  // The fit says what it stands on: the ranks it was fitted on and, where the machine's cores
  // are known, whether they shared them.
  QVERIFY2(chart.fit()->name().contains("(reference)\nfitted on ranks 1–8"), qPrintable(chart.fit()->name()));
  chart.showSweep(onTwoCores);
  QVERIFY2(chart.fit()->name().contains("(reference)\nfitted on ranks 1–8, cores shared past 2"),
           qPrintable(chart.fit()->name()));
  chart.showSweep(onEight);
  QVERIFY2(chart.fit()->name().contains("(reference)\nfitted on ranks 1–8, a core each"),
           qPrintable(chart.fit()->name()));
  chart.showSweep(strong);
  for (int i = 0; i < chart.fit()->dataCount(); ++i) {
    const double n = (chart.fit()->data()->begin() + i)->key;
    QVERIFY(qFuzzyCompare((chart.fit()->data()->begin() + i)->value, strong.amdahl.speedup(n)));
  }

  const SweepResult weak = analyseSweep("weak", {1, 2, 4}, {100, 104, 112}, 64);
  chart.showSweep(weak);
  QCOMPARE(chart.measured()->dataCount(), 3);
  QVERIFY(chart.fit()->name().contains("Gustafson"));
  for (const SweepPoint& p : weak.points)
    QCOMPARE(valueAt(chart.fit(), p.ranks), weak.gustafson.speedup(p.ranks));
  QVERIFY(chart.yAxis->label().contains("scaled"));
}

// Slower with every rank added: the fitted p is −1.1, no fraction of any work. The legend says
// in words that the law does not fit, shows no number, and no fit line is drawn as if it were
// a reference to trust; a fit inside 0..1 still shows its p.
void TestCharts::fitOutsideItsRangeIsSaidInWords() {
  const SweepResult slower = analyseSweep("strong", {1, 2, 4, 8}, {100, 130, 170, 230}, 256);
  QVERIFY2(slower.amdahl.p < 0, qPrintable(QString::number(slower.amdahl.p)));
  SpeedupChart chart;
  chart.showSweep(slower);
  const QString name = chart.fit()->name();
  QVERIFY2(name.contains("does not fit") && name.contains("slower"), qPrintable(name));
  QVERIFY2(!name.contains(QString::number(slower.amdahl.p, 'f', 3)) && !name.contains("p ="),
           qPrintable(name));
  QCOMPARE(chart.fit()->dataCount(), 0);
  QCOMPARE(chart.measured()->dataCount(), 4);  // the measurement is still shown
  const SweepResult faster = analyseSweep("strong", {1, 2}, {100, 20}, 256);
  QVERIFY(faster.amdahl.p > 1);
  chart.showSweep(faster);
  QVERIFY2(chart.fit()->name().contains("faster than ideal"), qPrintable(chart.fit()->name()));
  const SweepResult weakSlower = analyseSweep("weak", {1, 2, 4}, {100, 250, 600}, 64);
  QVERIFY(weakSlower.gustafson.s > 1);
  chart.showSweep(weakSlower);
  QVERIFY2(chart.fit()->name().startsWith("Gustafson's law does not fit"),
           qPrintable(chart.fit()->name()));
}

// Points close together at the foot of the plot (the ideal line goes to 16): each efficiency
// label shown lies inside the plot and clear of the others; one with no room is left out.
void TestCharts::efficiencyLabelsStayInThePlot() {
  const SweepResult crowded =
      analyseSweep("strong", {1, 2, 4, 8, 16}, {10, 6.2, 4.1, 3.3, 3.0}, 512);
  SpeedupChart chart;
  chart.resize(440, 330);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showSweep(crowded);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  QList<QRect> shown;
  int visible = 0;
  for (const test::TextBox& b : test::chartTextBoxes(&chart))
    if (b.owner.endsWith(" item") && b.text.endsWith("%")) {
      ++visible;
      QVERIFY2(b.room.contains(b.box), qPrintable(b.describe()));  // the plot
      for (const QRect& other : shown) QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      shown << b.box;
    }
  QVERIFY2(visible >= 3, qPrintable(QString("only %1 of 5 labels shown").arg(visible)));
}

void TestCharts::memoryBarsAreTheSnapshotBytes() {
  const Snapshot s = syntheticSnapshot(4);
  MemoryChart chart;
  chart.showSnapshot(s);
  const StepMetrics& last = s.steps.back();
  const double unit = chart.unitBytes();
  QCOMPARE(unit, 1024.0 * 1024.0);  // the largest value is a few MiB
  for (const RankMetrics& r : last.ranks)
    for (int c = 0; c < kMemCategories; ++c) {
      const double drawn = valueAt(chart.bars(MemCategory(c)), r.rank - 0.12);
      QCOMPARE(drawn * unit, double(r.mem.current[size_t(c)]));  // not recomputed: the bytes
    }
  // The reference: 4P + 12P/N of P = 100000 at N = 4, beside each rank.
  QCOMPARE(chart.referenceBars()->dataCount(), 4);
  QCOMPARE(valueAt(chart.referenceBars(), 0.26) * unit, 400000.0 + 300000.0);
  QVERIFY(chart.referenceBars()->name().contains("4P + 12P/N"));
  QVERIFY(chart.referenceBars()->name().contains("reference"));
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,params_bytes,grads_bytes,optimizer_bytes,activations_bytes,"
                           "comm_bytes,workspace_bytes,peak_bytes,model_states_reference_bytes"));
  QCOMPARE(csv.size(), 5);
  const MemorySnapshot& m2 = last.ranks[2].mem;
  QCOMPARE(csv[3], QString("2,%1,%2,%3,%4,%5,%6,%7,700000")
                       .arg(m2.current[0])
                       .arg(m2.current[1])
                       .arg(m2.current[2])
                       .arg(m2.current[3])
                       .arg(m2.current[4])
                       .arg(m2.current[5])
                       .arg(m2.peakTotal));
  // No formula for a tensor-parallel run: no reference bars.
  Snapshot tp = s;
  tp.config.tp = 2, tp.config.zero = 0;
  chart.showSnapshot(tp);
  QCOMPARE(chart.referenceBars()->dataCount(), 0);
}

void TestCharts::trafficBarsAreTheCountedBytes() {
  const Snapshot s = syntheticSnapshot(4);
  TrafficChart chart;
  chart.showSnapshot(s);
  QCOMPARE(chart.layers().size(), 2);  // allgather (tp), allreduce (dp)
  const double unit = chart.unitBytes();
  for (const RankMetrics& r : s.steps.back().ranks)
    for (const OpTraffic& o : r.ops) {
      QCPBars* layer = nullptr;
      for (QCPBars* b : chart.layers())
        if (b->name() == QString("%1 (%2)").arg(o.op.c_str(), o.group.c_str())) layer = b;
      QVERIFY(layer);
      QCOMPARE(bytesAt(layer, r.rank + TrafficChart::kSentOffset, unit), double(o.bytesSent));
      QCOMPARE(bytesAt(layer, r.rank + TrafficChart::kRecvOffset, unit), double(o.bytesRecv));
    }
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,op,group,calls,bytes_sent,bytes_recv,ms"));
  QCOMPARE(csv.size(), 1 + 4 * 2);
  QCOMPARE(csv[1], QString("0,allreduce,dp,3,500000,500001,1.5"));

  // A step without the per-op split still shows the rank's totals, as one layer.
  Snapshot bare = s;
  for (RankMetrics& r : bare.steps.back().ranks) r.ops.clear();
  chart.showSnapshot(bare);
  QCOMPARE(chart.layers().size(), 1);
  const RankMetrics& r1 = bare.steps.back().ranks[1];
  QCOMPARE(bytesAt(chart.layers()[0], 1 + TrafficChart::kSentOffset, chart.unitBytes()),
           double(r1.bytesSent));
}

void TestCharts::heatmapCellsAreSentTo() {
  const Snapshot s = syntheticSnapshot(4);
  LinkHeatmap chart;
  chart.showSnapshot(s);
  const double unit = chart.unitBytes();
  for (const RankMetrics& r : s.steps.back().ranks)
    for (int to = 0; to < 4; ++to) {
      const int64_t b = r.sentTo[size_t(to)];
      if (b == 0)
        QVERIFY(std::isnan(chart.cell(r.rank, to)));  // no traffic: no colour
      else
        QCOMPARE(chart.cell(r.rank, to) * unit, double(b));
    }
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0],
           QString("from_rank,to_rank_0_bytes,to_rank_1_bytes,to_rank_2_bytes,to_rank_3_bytes"));
  const auto& row3 = s.steps.back().ranks[3].sentTo;
  QCOMPARE(csv[4], QString("3,%1,%2,%3,0").arg(row3[0]).arg(row3[1]).arg(row3[2]));
}

void TestCharts::timelineDrawsEverySpan() {
  const Snapshot s = syntheticSnapshot(2);
  TimelineChart chart;
  chart.resize(800, 500);
  chart.showSnapshot(s);
  // Only the last kSteps steps, every span of them, in its rank's row.
  int spans = 0, idle = 0;
  std::set<int64_t> steps;
  for (const TimelineChart::Bar& b : chart.bars()) {
    steps.insert(b.step);
    if (b.kind == SpanKind::Idle)
      ++idle;
    else
      ++spans;
  }
  QCOMPARE(int(steps.size()), TimelineChart::kSteps);
  QCOMPARE(*steps.begin(), int64_t(5 - TimelineChart::kSteps + 1));
  QCOMPARE(spans, 2 * 5 * TimelineChart::kSteps);
  // The gap between forward and backward, and rank 0 ends before rank 1: idle bars.
  QVERIFY(idle >= 2 * TimelineChart::kSteps);
  // Times: from the first span drawn, in ms; a comm span keeps its bytes and op.
  const auto comm = std::find_if(chart.bars().begin(), chart.bars().end(),
                                 [](const auto& b) { return b.kind == SpanKind::Comm; });
  QVERIFY(comm != chart.bars().end());
  QCOMPARE(comm->startMs, 4.0);
  QCOMPARE(comm->endMs, 7.5);
  QCOMPARE(comm->bytes, int64_t(1 << 20));
  // Hover: op, bytes and duration; over the thin communication row, not the compute row.
  const QString hover = chart.describeAt(5.0, TimelineChart::commRow(0).center());
  QVERIFY2(
      hover.contains("allreduce ring") && hover.contains("1.00 MiB") && hover.contains("3.500 ms"),
      qPrintable(hover));
  QVERIFY(chart.describeAt(5.0, TimelineChart::computeRow(0).center()).contains("backward"));
  // Waiting: the all-reduce outlasts backward by 0.5 ms (7.0 -> 7.5) with nothing to compute,
  // once per rank and step, hatched in the compute row and named on hover.
  QCOMPARE(int(chart.waiting().size()), 2 * TimelineChart::kSteps);
  for (const TimelineChart::Bar& w : chart.waiting())
    QVERIFY2(qFuzzyCompare(w.endMs - w.startMs, 0.5),
             qPrintable(QString::number(w.endMs - w.startMs)));
  QCOMPARE(chart.waiting().front().startMs, 7.0);
  const QString waitHover = chart.describeAt(7.25, TimelineChart::computeRow(0).center());
  QVERIFY2(waitHover.contains("waiting"), qPrintable(waitHover));
  QCOMPARE(chart.pointCount(), int(chart.bars().size()));
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,row,kind,op,step,start_ms,end_ms,duration_ms,bytes"));
  QCOMPARE(csv.size(), 1 + int(chart.bars().size()));
  // Zoomed by the user: newer snapshots wait until a double-click.
  QVERIFY(chart.following());
  chart.xAxis->setRange(1, 2);
  QVERIFY(!chart.following());
}

// Context parallelism's ring (ring_attention.h): a block in flight is drawn in a lane of its
// own, cut where the rank computed (hidden) and where not (exposed), measured from the spans:
// in flight 0 -> 2 ms, forward 0.1 -> 1.5 ms, so 1.4 of 2 ms hid.
void TestCharts::timelineDrawsTheRing() {
  auto ns = [](double ms) { return int64_t(ms * 1e6); };
  Snapshot s;
  s.spans = {{Span{SpanKind::Comm, ns(0), ns(0.1), 4096, "send p2p", 1},
              Span{SpanKind::Comm, ns(0), ns(2), 4096, "send→recv · ring K/V forward, step 1 of 1", 1},
              Span{SpanKind::Forward, ns(0.1), ns(1.5), 0, "", 1},
              Span{SpanKind::Comm, ns(1.5), ns(2.2), 4096, "recv p2p", 1}}};
  TimelineChart chart;
  chart.resize(800, 400);
  chart.showSnapshot(s);
  int ring = 0;
  for (const TimelineChart::Bar& b : chart.bars()) ring += TimelineChart::isRingTransfer(b);
  QCOMPARE(ring, 1);
  QVERIFY(qFuzzyCompare(chart.ringHiddenShare(), 0.7));
  double hidden = 0, exposed = 0;
  for (const TimelineChart::Bar& p : chart.ringParts())
    (p.op == "hidden" ? hidden : exposed) += p.endMs - p.startMs;
  QVERIFY(qFuzzyCompare(hidden, 1.4));
  QVERIFY(qFuzzyCompare(exposed, 0.6));  // 0 -> 0.1 in the send, 1.5 -> 2 in the recv
  const QString inFlight = chart.describeAt(1.0, TimelineChart::ringRow(0).center());
  QVERIFY2(inFlight.contains("ring K/V forward"), qPrintable(inFlight));
  const QString call = chart.describeAt(1.8, TimelineChart::commRow(0).center());
  QVERIFY2(call.contains("recv p2p"), qPrintable(call));
  bool listed = false;
  for (int i = 0; i < chart.legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.legend->item(i)))
      listed = listed || item->plottable()->name().contains("hidden behind compute: 70%");
  QVERIFY(listed);
  // No ring: no share, no legend entry.
  chart.showSnapshot(syntheticSnapshot(2));
  QCOMPARE(chart.ringHiddenShare(), -1.0);
}

void TestCharts::chromeTraceParses() {
  const Snapshot s = syntheticSnapshot(3);
  const QByteArray json = chromeTraceJson(s.spans, "pcie");
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
  const QJsonArray events = doc.object()["traceEvents"].toArray();
  QCOMPARE(doc.object()["otherData"].toObject()["emulated"].toString(), QString("pcie"));
  std::map<int, int> perRank;
  int comm = 0;
  for (const QJsonValue& v : events) {
    const QJsonObject e = v.toObject();
    if (e["ph"].toString() != "X") continue;
    ++perRank[e["pid"].toInt()];
    QVERIFY(e["dur"].toDouble() > 0);
    QVERIFY(e["ts"].toDouble() >= 0);
    if (e["cat"].toString() == "comm") {
      ++comm;
      QCOMPARE(e["tid"].toInt(), 1);
      QCOMPARE(e["args"].toObject()["bytes"].toInteger(), qint64(1 << 20));
      QCOMPARE(e["args"].toObject()["op"].toString(), QString("allreduce ring"));
      QCOMPARE(e["dur"].toDouble(), 3500.0);  // µs
    } else {
      QCOMPARE(e["tid"].toInt(), 0);
    }
  }
  QCOMPARE(int(perRank.size()), 3);
  for (const auto& [rank, n] : perRank) QCOMPARE(n, int(s.spans[size_t(rank)].size()));
  QCOMPARE(comm, 3 * 5);
  // Written to a file, whole.
  QTemporaryDir dir;
  QCOMPARE(writeChromeTrace(dir.filePath("trace.json"), s.spans), QString());
  QFile f(dir.filePath("trace.json"));
  QVERIFY(f.open(QIODevice::ReadOnly));
  QVERIFY(QJsonDocument::fromJson(f.readAll()).isObject());
}

void TestCharts::lossOverlays() {
  LossChart chart;
  MetricHistory h;
  for (int64_t i = 1; i <= 30; ++i) h.append(syntheticStep(i, 1));
  chart.showHistory(h);
  for (int run = 0; run < LossChart::kMaxOverlays + 2; ++run)
    chart.keepAsOverlay(QString("run %1").arg(run));
  QCOMPARE(chart.overlayCount(), LossChart::kMaxOverlays);
  // The oldest went; the newest is named in the legend, and faded.
  QVERIFY(chart.overlay(0)->name().startsWith("run 2"));
  QVERIFY(chart.overlay(LossChart::kMaxOverlays - 1)->name().contains("earlier run"));
  QVERIFY(chart.overlay(0)->pen().color().alpha() < 255);
  // The mean, from the step its window of kMeanWindow steps is full.
  QCOMPARE(chart.overlay(0)->dataCount(), int(h.rows().size()) - MetricHistory::kMeanWindow + 1);
  QCOMPARE(chart.overlay(0)->data()->begin()->value,
           h.rows()[MetricHistory::kMeanWindow - 1].lossMean);
  // The current run's points survive a new history; the CSV names every overlay.
  chart.showHistory(h);
  QCOMPARE(chart.overlayCount(), LossChart::kMaxOverlays);
  const QStringList csv = csvLines(chart);
  QVERIFY(csv[0].contains("[run 6]"));
  // step, loss, its mean, test accuracy, held-out loss, then the kept runs
  QCOMPARE(csv[0].split(',').size(), 5 + LossChart::kMaxOverlays);
  chart.clearOverlays();
  QCOMPARE(chart.overlayCount(), 0);
  QCOMPARE(chart.graphCount(), 4);
  QCOMPARE(csvLines(chart)[0].split(',').size(), 5);

  RunConfig c;
  QCOMPARE(LossChart::runLabel(c), QString("serial · momentum lr 0.05"));
  c.ranks = 4, c.zero = 2;
  QVERIFY(LossChart::runLabel(c).startsWith("sync · 4 ranks · ZeRO-2"));
}

// Real sharding metadata from a Trainer (the session does not carry it yet).
RunConfig holdingsRun(RunConfig c) {
  c.dataset = "synthetic";
  c.hidden = 32;
  c.batch = 48;
  c.evalEvery = 0;
  c.optimizer = "adam";
  return c;
}

std::vector<RankHoldings> holdingsOf(const RunConfig& c) {
  Trainer t(holdingsRun(c));
  t.step();
  return t.holdings();
}

const HoldingsMap::Cell* findCell(const HoldingsMap& map, int rank, const QString& row,
                                  HoldingKind k) {
  for (const auto& c : map.cells())
    if (c.rank == rank && c.row == row && c.kind == k) return &c;
  return nullptr;
}

void TestCharts::holdingsMapDrawsTheSlices() {
  QCOMPARE(HoldingsMap::rowOf("block0.fc1.weight"), QString("block0"));
  QCOMPARE(HoldingsMap::rowOf("block1 (flat)"), QString("block1"));
  QCOMPARE(HoldingsMap::rowOf("block0.expert2.fc1.weight"), QString("block0.expert2"));

  // ZeRO-3 over 4 ranks: rank r holds the r-th quarter of every layer's params, grads and
  // optimizer state, and the r-th quarter of the batch.
  RunConfig z;
  z.ranks = 4, z.zero = 3, z.layers = 2;
  HoldingsMap map;
  map.showHoldings(holdingsOf(z));
  QCOMPARE(map.rows().front(), QString("batch"));
  QVERIFY(map.rows().contains("block1"));
  QCOMPARE(map.rows().back(), QString("classifier"));
  for (int r = 0; r < 4; ++r) {
    for (HoldingKind k : {HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer}) {
      const auto* c = findCell(map, r, "block0", k);
      QVERIFY(c);
      QCOMPARE(int(c->parts.size()), 1);
      QVERIFY2(
          std::abs(c->parts[0].first - r / 4.0) < 1e-3 &&
              std::abs(c->parts[0].second - (r + 1) / 4.0) < 1e-3,
          qPrintable(
              QString("rank %1: %2..%3").arg(r).arg(c->parts[0].first).arg(c->parts[0].second)));
    }
    const auto* batch = findCell(map, r, "batch", HoldingKind::Batch);
    QVERIFY(batch);
    QCOMPARE(batch->parts[0].first, r / 4.0);
  }
  // Tensor and pipeline parallel 2 x 2: a stage holds only its layers, and the two tp ranks
  // of a stage hold different parts of each block that together make the whole block.
  RunConfig m;
  m.ranks = 4, m.tp = 2, m.pp = 2, m.layers = 2, m.microbatches = 2;
  map.showHoldings(holdingsOf(m));
  QVERIFY(findCell(map, 0, "block0", HoldingKind::Params));
  QVERIFY(!findCell(map, 0, "block1", HoldingKind::Params));
  QVERIFY(findCell(map, 2, "block1", HoldingKind::Params));
  double covered = 0;
  for (int r : {0, 1})
    for (const auto& [a, b] : findCell(map, r, "block0", HoldingKind::Params)->parts)
      covered += b - a;
  QVERIFY2(covered > 1.0 && covered < 1.5,
           qPrintable(QString::number(covered)));  // layer norms on both
  // Hover names the slices: fc1's columns of the tensor-parallel split.
  QVERIFY(findCell(map, 1, "block0", HoldingKind::Params)
              ->items.join('\n')
              .contains("fc1.weight: cols 64–128 of 128"));
  const QStringList csv = csvLines(map);
  QCOMPARE(csv[0], QString("rank,row,tensor,kind,dim,begin,end,total,rows,cols,bytes"));
  QVERIFY(csv.size() > 20);
  map.showHistory(MetricHistory());
  QCOMPARE(map.pointCount(), 0);

  // For a look: ZeRO-3, tensor x pipeline, experts spread over ranks.
  const std::pair<const char*, RunConfig> looks[] = {{"holdings-zero3", z}, {"holdings-tp-pp", m}};
  for (const auto& [name, config] : looks) {
    HoldingsMap shown;
    shown.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(config))));
    shown.showHoldings(holdingsOf(config));
    saveScreenshot(shown, name);
  }
  // The GPT's selective recomputation: a "recomputed" row under the activations, hatched, its
  // legend entry saying what is recomputed; its bytes one block's attention probabilities of
  // the rank's windows, [B, NH, T, T]. Both bars say their bytes.
  RunConfig g;
  g.model = "gpt", g.ranks = 2, g.layers = 2, g.heads = 4, g.seq = 16, g.recompute = "selective";
  HoldingsMap gpt;
  gpt.showHoldings(holdingsOf(g));
  QCOMPARE(gpt.rows().mid(0, 3), QStringList({"batch", "activations", "recomputed"}));
  auto legendNames = [](const HoldingsMap& m) {
    QStringList names;
    for (int i = 0; i < m.legend->itemCount(); ++i)
      if (auto* p = qobject_cast<QCPPlottableLegendItem*>(m.legend->item(i)))
        names << p->plottable()->name();
    return names;
  };
  QVERIFY2(legendNames(gpt).contains("recomputed in backward: attention probabilities"),
           qPrintable(legendNames(gpt).join(", ")));
  for (int r = 0; r < 2; ++r) {
    const auto* kept = findCell(gpt, r, "activations", HoldingKind::Activations);
    const auto* redo = findCell(gpt, r, "recomputed", HoldingKind::Activations);
    QVERIFY(kept && redo);
    QCOMPARE(redo->bytes, int64_t(48 / 2) * 4 * 16 * 16 * 4);  // windows x NH x T x T floats
    QVERIFY(kept->bytes > redo->bytes);
    QCOMPARE(redo->parts, kept->parts);  // the same rows: the rank's half of the batch
    QVERIFY(redo->items.join('\n').contains("attention probabilities"));
  }
  gpt.resize(1200, 750);
  gpt.replot();
  QStringList shownBytes;
  for (const QCPItemText* t : gpt.findChildren<QCPItemText*>())
    if (t->visible() && t->text().contains("iB")) shownBytes << t->text();  // KiB, MiB
  QVERIFY2(shownBytes.size() == 4, qPrintable(shownBytes.join(" | ")));  // 2 bars x 2 ranks
  gpt.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(g))));
  saveScreenshot(gpt, "holdings-gpt-selective");
  // Nothing recomputed (the MLP under tp x pp): no such row, and the entry leaves the legend.
  gpt.showHoldings(holdingsOf(m));
  QVERIFY(!gpt.rows().contains("recomputed"));
  QVERIFY(!legendNames(gpt).join(",").contains("recomputed"));

  RunConfig e;
  e.model = "moe", e.ranks = 4, e.ep = 4, e.experts = 4, e.layers = 2;
  HoldingsMap experts;
  experts.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(e))));
  experts.showHoldings(holdingsOf(e));
  saveScreenshot(experts, "holdings-moe-ep");
}

// A mixture of experts on 8 ranks (14 rows, 8 columns, each column's traffic on two lines) in
// the rooms a dock gives it, large to small and back, and fed again in the small one (a window
// re-feeds its charts when their text changes): every frame drawn has row and column labels
// fitted to that frame's plot, none clipped, none overlapping another. Measured right after one
// replot, with no events between: what is on screen, not what a later replot would correct.
void TestCharts::holdingsMapLabelsFitEveryRoom() {
  RunConfig e;
  e.model = "moe", e.ranks = 8, e.ep = 4, e.experts = 4, e.layers = 2;
  const std::vector<RankHoldings> eight = holdingsOf(e);
  RunConfig two;
  two.ranks = 2, two.layers = 2;
  const std::vector<RankHoldings> small = holdingsOf(two);

  HoldingsMap map;
  map.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(e))));
  map.resize(1200, 750);
  map.show();
  QVERIFY(QTest::qWaitForWindowExposed(&map));
  auto problems = [&](const QString& where) {
    map.replot(QCustomPlot::rpImmediateRefresh);
    const QList<test::TextBox> boxes = test::chartTextBoxes(&map);
    QStringList out;
    for (const QString& c : test::clipped(boxes)) out << where + ": clipped: " + c;
    for (const QString& o : test::overlapping(boxes)) out << where + ": overlap: " + o;
    return out;
  };
  QStringList found;
  map.showHoldings(eight);
  found += problems("fed at 1200x750");
  for (const QSize room : {QSize(900, 600), QSize(640, 420), QSize(460, 330), QSize(455, 340)}) {
    map.resize(room);
    found += problems(QString("resized to %1x%2").arg(room.width()).arg(room.height()));
  }
  // Fed again where it is small: the same run, then another, then the 8 ranks again.
  for (const auto* h : {&eight, &small, &eight}) {
    map.showHoldings(*h);
    found += problems(QString("fed %1 ranks at 455x340").arg(h->size()));
    QCOMPARE(map.xAxis->tickVectorLabels().size(), int(h->size()));  // this run's columns
    QCOMPARE(map.xAxis->range().upper, double(h->size()));
  }
  QVERIFY(map.grab().save(screenshotDir() + "/holdings-moe-8-ranks-small.png"));
  // Labels thinned for a small room come back in a large one.
  map.resize(1200, 750);
  found += problems("grown to 1200x750");
  QVERIFY2(found.isEmpty(), qPrintable(found.join('\n')));
  QVERIFY(map.yAxis->tickVectorLabels().contains("block0.expert1"));  // every row named
  QVERIFY(map.xAxis->tickVectorLabels().value(0).startsWith("rank 0"));
  QCOMPARE(map.xAxis->tickVectorLabels().size(), 8);  // the current run's columns
}

// [SECTION] The Benchmark chart (lesson benchmarks; the run from a lesson step is in tst_window)

void TestCharts::benchChartDrawsEachKind_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QSize>("size");
  for (const char* kind : {"gemm-ladder", "simd-width", "false-sharing", "latency"}) {
    QTest::addRow("%s narrow", kind) << QString(kind) << QSize(440, 330);
    QTest::addRow("%s export", kind) << QString(kind) << QSize(1200, 750);
  }
}

// Each kind's bars hold the measured values and its CSV the same numbers; every value label
// stays inside the plot and clear of the others, at a narrow dock's size and an export's.
void TestCharts::benchChartDrawsEachKind() {
  QFETCH(QString, kind);
  QFETCH(QSize, size);
  BenchResult r;
  r.kind = kind.toStdString();
  QList<double> expected;  // the bars, left to right
  if (kind == "gemm-ladder") {
    teach::GemmLadderResult l;
    l.threads = 2, l.corePeakGflops = 109.1, l.peakGflops = 218.2;
    l.blas = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH core SkylakeX";
    for (auto [k, g] : {std::pair{"naive", 1.04}, {"simd", 51.5}, {"threaded", 98.2},
                        {"tiled", 124.5}, {"vendor", 148.7}}) {
      l.rungs.push_back({k, 512, g, 3, ""});
      expected << g;
    }
    r.ladder = l;
  } else if (kind == "simd-width") {
    // A CPU without AVX-512: its bar is left out and the subtitle says why.
    teach::SimdWidthResult w;
    w.points = {{1, "scalar", 4.4, ""},
                {4, "SSE", 15.4, ""},
                {8, "AVX2", 33.2, ""},
                {16, "AVX-512", 0, "this CPU has no AVX-512 FMA instructions"}};
    expected << 4.4 << 15.4 << 33.2;
    r.simd = w;
    r.repeats = 5;
  } else if (kind == "false-sharing") {
    teach::FalseSharingSweep f;
    f.increments = 2'000'000, f.cores = 2;
    f.points = {{1, 6.9, 7.9}, {2, 34.8, 6.8}, {3, 49.3, 32.4}};
    for (const auto& p : f.points) expected << p.sharedNs << p.paddedNs;
    r.falseSharing = f;
  } else {
    LatencySweepResult l;
    l.device = "cpu", l.kernel = "vendor", l.model = "mlp", l.threads = 1;
    l.parameterCount = 365706;
    for (int b = 1, i = 0; b <= 4096; b *= 2, ++i) {
      LatencyPoint p;
      p.batch = b;
      p.msPerForward = 0.03 * std::pow(b, 0.8);
      p.samplesPerS = b / (p.msPerForward * 1e-3);
      l.points.push_back(p);
      expected << p.samplesPerS;
    }
    r.latencyCpu = l;
    r.gpuNotRun = "no CUDA driver is installed";
    r.latencyModel = "mlp H=128, L=2, 365,706 parameters, fashion-mnist test samples";
  }
  BenchChart chart;
  chart.resize(size);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showResult(r);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  QCOMPARE(chart.pointCount(), int(expected.size()));
  QList<double> drawn;
  for (QCPBars* b : {chart.rungs(), chart.vendor(), chart.shared(), chart.padded(),
                     chart.cpuRate()})
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it)
      drawn << it->value;
  std::sort(drawn.begin(), drawn.end());
  QList<double> sorted = expected;
  std::sort(sorted.begin(), sorted.end());
  QCOMPARE(drawn, sorted);
  if (kind == "latency") {
    QVERIFY(chart.subtitle().contains("GPU half not run here (no CUDA driver"));
    QCOMPARE(chart.cpuLatency()->dataCount(), 13);
  }
  if (kind == "gemm-ladder") QVERIFY(chart.peak()->name().contains("(reference formula)"));
  if (kind == "simd-width") {
    // Each measured width inside its reference outline: lanes × the scalar rate.
    QCOMPARE(chart.ideal()->dataCount(), 3);
    QCOMPARE(chart.ideal()->data()->at(2)->value, 8 * 4.4);
    QVERIFY(chart.ideal()->name().contains("(reference formula)"));
    QVERIFY(chart.subtitle().contains("not run: this CPU has no AVX-512"));
    QCOMPARE(chart.tickLabels().size(), 4);
    QVERIFY(chart.tickLabels()[2].startsWith("AVX2 (8 lanes)"));
    // What a step's comparison reads: the widths that ran, by lane count.
    const QJsonObject json = benchJson(r);
    QCOMPARE(lessons::metricAt(json, "widths[lanes=8].gflops").value_or(-1), 33.2);
    QVERIFY(!lessons::metricAt(json, "widths[lanes=16].gflops"));
  }
  QString csv;
  QTextStream out(&csv);
  chart.writeCsv(out);
  const QStringList rows = csv.trimmed().split('\n');
  const int rowsOf = kind == "false-sharing" ? 4 : kind == "latency" ? 14 : 6;
  QCOMPARE(rows.size(), kind == "simd-width" ? 5 : rowsOf);
  if (kind == "simd-width") {
    QCOMPARE(rows[0], QString("isa,lanes,gflops,lanes_times_scalar_gflops_reference,skipped"));
    QCOMPARE(rows[3], QString("AVX2,8,33.2,35.2,"));
    QVERIFY(rows[4].startsWith("AVX-512,16,,,this CPU has no"));
  }
  QList<QRect> shown, ticks;
  for (const test::TextBox& b : test::chartTextBoxes(&chart))
    if (b.owner.endsWith(" item")) {
      QVERIFY2(b.room.contains(b.box), qPrintable(b.describe()));
      for (const QRect& other : shown)
        QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      shown << b.box;
    } else if (b.owner.endsWith(" tick label") && !b.text.isEmpty() &&
               b.box.top() > chart.axisRect()->bottom()) {  // the names under the bars
      for (const QRect& other : ticks)
        QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      ticks << b.box;
    }
  QVERIFY(ticks.size() >= 2);
  QDir().mkpath(QString(PARALAB_BINARY_DIR) + "/screenshots");
  chart.grab().save(QString("%1/screenshots/benchmark-%2-%3.png")
                        .arg(PARALAB_BINARY_DIR, kind)
                        .arg(size.width()));
}

// Every value label and note on the plot inside it and clear of the others; the names under
// the bars clear of each other. Saves the chart as screenshots/benchmark-<name>-<width>.png.
static void checkBenchTexts(BenchChart& chart, const QString& name) {
  QList<QRect> shown, ticks;
  for (const test::TextBox& b : test::chartTextBoxes(&chart))
    if (b.owner.endsWith(" item")) {
      QVERIFY2(b.room.contains(b.box), qPrintable(b.describe()));
      for (const QRect& other : shown)
        QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      shown << b.box;
    } else if (b.owner.endsWith(" tick label") && !b.text.isEmpty() &&
               b.box.top() > chart.axisRect()->bottom()) {
      for (const QRect& other : ticks)
        QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      ticks << b.box;
    }
  QVERIFY(ticks.size() >= 2);
  QDir().mkpath(QString(PARALAB_BINARY_DIR) + "/screenshots");
  chart.grab().save(QString("%1/screenshots/benchmark-%2-%3.png")
                        .arg(PARALAB_BINARY_DIR, name)
                        .arg(chart.width()));
}

void TestCharts::benchChartDrawsTheRoofline_data() {
  QTest::addColumn<QSize>("size");
  QTest::addRow("narrow") << QSize(440, 330);
  QTest::addRow("export") << QSize(1200, 750);
}

// CPU against GPU: the layers measured here (a small MLP, batch 1 and 256), each GPU bar the
// projection's figure in µs, in the compute-bound bars exactly where the roofline says so, the
// labels "measured on this CPU" and "projected for NVIDIA H100 SXM", and no GPU claimed.
void TestCharts::benchChartDrawsTheRoofline() {
  QFETCH(QSize, size);
  teach::RooflineOptions o;
  o.hidden = 32, o.layers = 2, o.batches = {1, 256}, o.repeats = 1, o.measureGpu = false;
  BenchResult r;
  r.kind = "roofline";
  r.roofline = teach::runRoofline(o);
  r.roofline->gpuNotRun = "no GPU here";
  BenchChart chart;
  chart.resize(size);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showResult(r);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  const int layers = int(r.roofline->batches[0].layers.size());
  QCOMPARE(chart.cpuLayers()->dataCount(), 2 * (layers + 1));  // the layers and the step
  QCOMPARE(chart.gpuLayers()->dataCount(), 0);
  QVERIFY(chart.cpuLayers()->name().startsWith("measured on this CPU"));
  QVERIFY(chart.projectedLayers(0, true)->name().startsWith("projected for NVIDIA H100 SXM (fp32)"));
  QStringList legend;
  for (int i = 0; i < chart.legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.legend->item(i)))
      legend << item->plottable()->name();
  QVERIFY2(legend.filter(QRegularExpression("^measured on this CPU")).size() == 1 &&
               legend.contains("projected for NVIDIA H100 SXM (fp32)") &&
               legend.filter("memory-bound").size() == 1,
           qPrintable(legend.join('|')));
  QVERIFY(chart.projectedLayers(1, false)->name().startsWith("projected for NVIDIA A100"));
  QCOMPARE(chart.yAxis->scaleType(), QCPAxis::stLogarithmic);
  // H100's bars: each layer's projected µs, compute-bound ones among the solid bars only.
  QList<double> solid, hatched, expectSolid, expectHatched, cpu, expectCpu;
  for (auto it = chart.projectedLayers(0, true)->data()->constBegin();
       it != chart.projectedLayers(0, true)->data()->constEnd(); ++it)
    solid << it->value;
  for (auto it = chart.projectedLayers(0, false)->data()->constBegin();
       it != chart.projectedLayers(0, false)->data()->constEnd(); ++it)
    hatched << it->value;
  for (auto it = chart.cpuLayers()->data()->constBegin(); it != chart.cpuLayers()->data()->constEnd(); ++it)
    cpu << it->value;
  for (const teach::RooflineBatch& b : r.roofline->batches) {
    for (const teach::RooflineLayer& l : b.layers) {
      (l.projected[0].computeBound ? expectSolid : expectHatched) << l.projected[0].seconds * 1e6;
      expectCpu << l.cpuSeconds * 1e6;
    }
    expectCpu << b.cpuStepSeconds() * 1e6;
  }
  const auto near = [](QList<double> a, QList<double> b) {  // the step bars may add to either
    std::sort(a.begin(), a.end());
    for (double v : b)
      if (std::none_of(a.begin(), a.end(), [&](double x) { return std::abs(x - v) <= 1e-9 * v; }))
        return false;
    return true;
  };
  QVERIFY(near(solid, expectSolid));
  QVERIFY(near(hatched, expectHatched));
  QVERIFY(near(cpu, expectCpu));
  QCOMPARE(solid.size() + hatched.size(), 2 * (layers + 1));
  QVERIFY(!expectHatched.isEmpty());
  QVERIFY(chart.subtitle().contains("no GPU here"));
  QVERIFY(chart.subtitle().contains("nothing ran on a GPU"));
  // Each batch named above its group, with its step measured here and projected for the H100.
  const QStringList notes = chart.plotTexts();
  QCOMPARE(notes.size(), 2);
  QVERIFY(notes[0].startsWith("batch 1"));
  QVERIFY(notes[1].startsWith("batch 256"));
  if (size.width() >= 1000) {  // in full where there is room; the batch alone in a narrow dock
    QVERIFY(notes[0].startsWith("batch 1\nstep: this CPU "));
    QVERIFY(notes[1].contains("\nH100 SXM ") && notes[1].endsWith(" (projected)"));
  }
  // What a step's comparison reads.
  const QJsonObject json = benchJson(r);
  const teach::RooflineLayer& fc1 = r.roofline->batches[0].layers[2];
  QCOMPARE(lessons::metricAt(json, "batches[batch=1].layers[layer=fc1].flops_per_byte").value_or(-1),
           fc1.projected[0].intensity());
  QCOMPARE(lessons::metricAt(json, "batches[batch=1].layers[layer=fc1].projected[gpu=h100-sxm].ms")
               .value_or(-1),
           fc1.projected[0].seconds * 1e3);
  QString csv;
  QTextStream out(&csv);
  chart.writeCsv(out);
  const QStringList rows = csv.trimmed().split('\n');
  QCOMPARE(rows.size(), 1 + 2 * layers);
  QVERIFY(rows[0].startsWith("batch,layer,count,flops,bytes,cpu_measured_us"));
  checkBenchTexts(chart, "roofline");
}

void TestCharts::benchChartDrawsLayouts_data() {
  QTest::addColumn<QSize>("size");
  QTest::addRow("narrow") << QSize(440, 330);
  QTest::addRow("export") << QSize(1200, 750);
}

// Lesson 13's layouts: a stacked bar per tp, the parts the projection's split, its TP share
// written above each bar, every part labelled "projected".
void TestCharts::benchChartDrawsLayouts() {
  QFETCH(QSize, size);
  BenchResult r;
  r.kind = "layouts";
  r.layouts = teach::runLayoutProjection({});
  BenchChart chart;
  chart.resize(size);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showResult(r);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  QCOMPARE(chart.splitBars(0)->dataCount(), 2);
  for (int i = 0; i < 4; ++i) QVERIFY(chart.splitBars(i)->name().endsWith("(projected)"));
  for (int p = 0; p < 2; ++p) {
    const teach::LayoutPoint& pt = r.layouts->points[size_t(p)];
    double sum = 0;
    for (int i = 0; i < 4; ++i) sum += chart.splitBars(i)->data()->at(p)->value;
    QVERIFY(std::abs(sum - pt.projection.split.total()) <= 1e-9 * sum);
    QCOMPARE(chart.splitBars(1)->data()->at(p)->value, pt.projection.split.tpComm);
    const QString share = QString("TP comm %1%").arg(100 * pt.tpShare(), 0, 'f', 1);
    QVERIFY2(chart.plotTexts().filter(share).size() == 1, qPrintable(chart.plotTexts().join('|')));
  }
  QVERIFY(chart.tickLabels()[1].contains("across 2 nodes"));
  QVERIFY(chart.subtitle().startsWith("Projected, not measured"));
  const QJsonObject json = benchJson(r);
  QVERIFY(lessons::metricAt(json, "layouts[tp=16].tp_share").value_or(0) >
          lessons::metricAt(json, "layouts[tp=8].tp_share").value_or(1));
  checkBenchTexts(chart, "layouts");
}

void TestCharts::benchChartLabelsTheGpt_data() {
  QTest::addColumn<QSize>("size");
  QTest::addRow("narrow") << QSize(440, 330);
  QTest::addRow("export") << QSize(1200, 750);
}

// A lesson's `"model": "gpt"` latency block: a batch is windows of T characters, so the bars are
// tokens/s and the x axis counts windows; the sizes the time budget left untimed keep their
// slots and are said on the chart (subtitle, a note in the empty slots where it fits, the CSV),
// never silently missing. At a narrow dock's width and an export's, nothing clipped or
// overlapping.
void TestCharts::benchChartLabelsTheGpt() {
  QFETCH(QSize, size);
  // What the block's options become: the GPT on its own text; the MLP's default unchanged.
  lessons::Bench block;
  block.kind = "latency";
  QCOMPARE(QString::fromStdString(BenchRunner::latencyConfig(block).model), QString("mlp"));
  block.options = {{"model", "gpt"}, {"max-batch", 512}, {"hidden", 64}, {"seq", 64}};
  const RunConfig c = BenchRunner::latencyConfig(block);
  QCOMPARE(QString::fromStdString(c.model), QString("gpt"));
  QCOMPARE(c.hidden, 64);
  QCOMPARE(c.seq, 64);
  QCOMPARE(c.heads, 4);  // not given: the default
  QVERIFY2(c.dataset == "fortunes" || c.dataset == "synthetic", c.dataset.c_str());
  QCOMPARE(BenchRunner::latencyBatches(block).back(), 512);

  // The sweep of that block as a 2-core CPU gives it (tokens/s nearly level), its two largest
  // sizes over the 5 s budget.
  const int T = 64;
  LatencySweepResult l;
  l.device = "cpu", l.kernel = "vendor", l.model = "gpt", l.threads = 1;
  l.parameterCount = 118898, l.tokensPerSample = T;
  QList<double> expected;
  for (int b = 1; b <= 128; b *= 2) {
    LatencyPoint p;
    p.batch = b;
    p.msPerForward = 0.52 * b * (1 + 0.02 * std::log2(b));
    p.samplesPerS = b / (p.msPerForward * 1e-3);
    p.tokensPerS = p.samplesPerS * T;
    l.points.push_back(p);
    expected << p.tokensPerS;
  }
  l.notTimed = {256, 512};
  l.notTimedWhy =
      "one forward at batch 256 (16384 tokens) took 0.55 s, and timing a batch size "
      "takes 11 forwards: over the sweep's 5 s per size";
  BenchResult r;
  r.kind = "latency";
  r.latencyCpu = l;
  r.gpuNotRun = "no CUDA driver is installed";
  r.latencyModel = "GPT H=64, L=2, 4 heads, T=64, 118,898 parameters, fortunes test windows";
  r.latencyBudgetMs = LatencySweepOptions{}.maxMsPerSize;

  BenchChart chart;
  chart.resize(size);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showResult(r);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  chart.replot(QCustomPlot::rpImmediateRefresh);  // the axis labels chosen for the layout
  QList<double> drawn;
  for (auto it = chart.cpuRate()->data()->constBegin(); it != chart.cpuRate()->data()->constEnd();
       ++it)
    drawn << it->value;
  QCOMPARE(drawn, expected);
  QCOMPARE(chart.cpuLatency()->dataCount(), 8);
  QVERIFY2(chart.xAxis->label().startsWith("batch (windows"), qPrintable(chart.xAxis->label()));
  if (size.width() >= 1200)
    QCOMPARE(chart.xAxis->label(), QString("batch (windows of 64 characters)"));
  QVERIFY2(chart.yAxis->label().contains("tokens/s"), qPrintable(chart.yAxis->label()));
  QVERIFY(chart.yAxis2->label().contains("ms per forward") || chart.yAxis2->label() == "ms (log)");
  QCOMPARE(chart.cpuRate()->name(), QString("CPU tokens/s (bars)"));
  QVERIFY2(chart.subtitle().contains("forward only: GPT H=64"), qPrintable(chart.subtitle()));
  // The untimed sizes: their slots on the axis, said in the subtitle and the CSV's comments.
  QCOMPARE(chart.tickLabels(),
           QStringList({"1", "2", "4", "8", "16", "32", "64", "128", "256", "512"}));
  QVERIFY2(chart.subtitle().contains("not timed: batch 256 to 512 (over the 5 s budget per size)"),
           qPrintable(chart.subtitle()));
  QCOMPARE(chart.labels(), QStringList{"not timed: " + QString::fromStdString(l.notTimedWhy)});
  if (size.width() >= 1200) {
    QVERIFY(chart.notTimedNote());
    QCOMPARE(chart.notTimedNote()->text(), QString("not timed"));
  }
  QString csv;
  QTextStream out(&csv);
  chart.writeCsv(out);
  const QStringList rows = csv.trimmed().split('\n');
  QCOMPARE(rows.size(), 11);
  QCOMPARE(rows[0], QString("batch,tokens_per_forward,cpu_ms_per_forward,cpu_tokens_per_s,"
                            "gpu_ms_per_forward,gpu_tokens_per_s"));
  QVERIFY2(rows[1].startsWith("1,64,0.52,"), qPrintable(rows[1]));
  QCOMPARE(rows[10], QString("512,32768,,,,"));
  // What a step's comparison reads: the CPU's rows, with tokens/s for the GPT.
  const QJsonObject json = benchJson(r);
  QCOMPARE(lessons::metricAt(json, "latency[batch=64].tokens_per_s").value_or(-1), expected[6]);
  QVERIFY(!lessons::metricAt(json, "latency[batch=256].tokens_per_s"));

  const QList<TextBox> boxes = chartTextBoxes(&chart);
  const QStringList cut = clipped(boxes), meet = overlapping(boxes);
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join('\n')));
  QVERIFY2(meet.isEmpty(), qPrintable(meet.join('\n')));
  QDir().mkpath(QString(PARALAB_BINARY_DIR) + "/screenshots");
  chart.grab().save(QString("%1/screenshots/benchmark-latency-gpt-%2.png")
                        .arg(PARALAB_BINARY_DIR)
                        .arg(size.width()));

  // With a GPU that timed every size: its bars stand in the CPU's untimed slots, so no note
  // there; the subtitle says which device left them out.
  LatencySweepResult g = l;
  g.device = "cuda", g.kernel = "vendor", g.gpu = "NVIDIA H100 80GB HBM3", g.threads = 0;
  g.notTimed.clear(), g.notTimedWhy.clear();
  for (int b = 256; b <= 512; b *= 2) {
    LatencyPoint p = g.points.back();
    p.batch = b;
    g.points.push_back(p);
  }
  for (LatencyPoint& p : g.points) {
    p.msPerForward = 0.2 + 0.004 * p.batch;  // launches first, then the lanes fill
    p.samplesPerS = p.batch / (p.msPerForward * 1e-3);
    p.tokensPerS = p.samplesPerS * T;
  }
  r.latencyGpu = g;
  chart.showResult(r);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  QCOMPARE(chart.gpuRate()->dataCount(), 10);
  QCOMPARE(chart.gpuRate()->name(), QString("GPU tokens/s (bars)"));
  QVERIFY(!chart.notTimedNote());
  QVERIFY2(chart.subtitle().contains("not timed on the CPU: batch 256 to 512"),
           qPrintable(chart.subtitle()));
  csv.clear();
  chart.writeCsv(out);
  QVERIFY2(csv.trimmed().split('\n')[10].startsWith("512,32768,,,2.248,"), qPrintable(csv));
  const QList<TextBox> withGpu = chartTextBoxes(&chart);
  QVERIFY2(clipped(withGpu).isEmpty(), qPrintable(clipped(withGpu).join('\n')));
  QVERIFY2(overlapping(withGpu).isEmpty(), qPrintable(overlapping(withGpu).join('\n')));
  chart.grab().save(QString("%1/screenshots/benchmark-latency-gpt-gpu-%2.png")
                        .arg(PARALAB_BINARY_DIR)
                        .arg(size.width()));

  // The MLP's result on the same chart afterwards: its own names again, nothing left over.
  BenchResult mlp;
  mlp.kind = "latency";
  LatencySweepResult m;
  m.device = "cpu", m.kernel = "vendor", m.model = "mlp", m.threads = 1;
  m.points = {{1, 0.03, 33333, 30, 7, 1, 0}};
  mlp.latencyCpu = m;
  chart.showResult(mlp);
  QCOMPARE(chart.cpuRate()->name(), QString("CPU samples/s (bars)"));
  QVERIFY(chart.yAxis->label().contains("samples/s"));
  QVERIFY(!chart.notTimedNote() && chart.labels().isEmpty());
  QVERIFY(!chart.subtitle().contains("not timed"));
}

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
