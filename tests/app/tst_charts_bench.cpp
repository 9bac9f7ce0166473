// The Benchmark chart (lesson benchmarks; the run from a lesson step is in tst_window), offscreen:
// each kind's bars hold the measured or projected values and its CSV the same numbers, the
// roofline and layouts say what is projected, the GPT's latency names its untimed sizes, and
// every text fits at a narrow dock's size and an export's (screenshots/benchmark-*.png).
// Run: ctest -R tst_charts_bench --output-on-failure
#include <QTest>

#include "chart_inputs.h"
#include "charts/bench_chart.h"
#include "text_boxes.h"

using namespace paralab;
using namespace paralab::test;

namespace {

// Every value label and note on the plot inside it and clear of the others; the names under
// the bars clear of each other. Saves the chart as screenshots/benchmark-<name>-<width>.png.
void checkBenchTexts(BenchChart& chart, const QString& name) {
  QList<QRect> shown, ticks;
  for (const test::TextBox& b : test::chartTextBoxes(&chart))
    if (b.owner.endsWith(" item")) {
      QVERIFY2(b.room.contains(b.box), qPrintable(b.describe()));
      for (const QRect& other : shown) QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      shown << b.box;
    } else if (b.owner.endsWith(" tick label") && !b.text.isEmpty() &&
               b.box.top() > chart.axisRect()->bottom()) {  // the names under the bars
      for (const QRect& other : ticks) QVERIFY2(!other.intersects(b.box), qPrintable(b.describe()));
      ticks << b.box;
    }
  QVERIFY(ticks.size() >= 2);
  chart.grab().save(
      QString("%1/benchmark-%2-%3.png").arg(screenshotDir(), name).arg(chart.width()));
}

// The two sizes each chart is drawn at: a narrow dock's and an export's.
void narrowAndExport() {
  QTest::addColumn<QSize>("size");
  QTest::addRow("narrow") << QSize(440, 330);
  QTest::addRow("export") << QSize(1200, 750);
}

}  // namespace

class TestChartsBench : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void benchChartDrawsEachKind_data();
  void benchChartDrawsEachKind();
  void benchChartLabelsTheGpt_data();
  void benchChartLabelsTheGpt();
  void benchChartDrawsTheRoofline_data();
  void benchChartDrawsTheRoofline();
  void benchChartDrawsLayouts_data();
  void benchChartDrawsLayouts();
};

void TestChartsBench::initTestCase() {
  QApplication::setStyle("Fusion");
  QApplication::setPalette(QApplication::style()->standardPalette());
}

void TestChartsBench::benchChartDrawsEachKind_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QSize>("size");
  for (const char* kind : {"gemm-ladder", "simd-width", "false-sharing", "latency"}) {
    QTest::addRow("%s narrow", kind) << QString(kind) << QSize(440, 330);
    QTest::addRow("%s export", kind) << QString(kind) << QSize(1200, 750);
  }
}

// Each kind's bars hold the measured values and its CSV the same numbers; every value label
// stays inside the plot and clear of the others, at a narrow dock's size and an export's.
void TestChartsBench::benchChartDrawsEachKind() {
  QFETCH(QString, kind);
  QFETCH(QSize, size);
  BenchResult r;
  r.kind = kind.toStdString();
  QList<double> expected;  // the bars, left to right
  if (kind == "gemm-ladder") {
    teach::GemmLadderResult l;
    l.threads = 2, l.corePeakGflops = 109.1, l.peakGflops = 218.2;
    l.blas = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH core SkylakeX";
    for (auto [k, g] : {std::pair{"naive", 1.04},
                        {"simd", 51.5},
                        {"threaded", 98.2},
                        {"tiled", 124.5},
                        {"vendor", 148.7}}) {
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
    l.device = Device::Cpu, l.kernel = "vendor", l.model = ModelKind::Mlp, l.threads = 1;
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
  for (QCPBars* b :
       {chart.rungs(), chart.vendor(), chart.shared(), chart.padded(), chart.cpuRate()})
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it) drawn << it->value;
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
  checkBenchTexts(chart, kind);
}

void TestChartsBench::benchChartDrawsTheRoofline_data() { narrowAndExport(); }

// CPU against GPU: the layers measured here (a small MLP, batch 1 and 256), each GPU bar the
// projection's figure in µs, in the compute-bound bars exactly where the roofline says so, the
// labels "measured on this CPU" and "projected for NVIDIA H100 SXM", and no GPU claimed.
void TestChartsBench::benchChartDrawsTheRoofline() {
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
  QVERIFY(
      chart.projectedLayers(0, true)->name().startsWith("projected for NVIDIA H100 SXM (fp32)"));
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
  for (auto it = chart.cpuLayers()->data()->constBegin();
       it != chart.cpuLayers()->data()->constEnd(); ++it)
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
  QCOMPARE(
      lessons::metricAt(json, "batches[batch=1].layers[layer=fc1].flops_per_byte").value_or(-1),
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

void TestChartsBench::benchChartDrawsLayouts_data() { narrowAndExport(); }

// Lesson 13's layouts: a stacked bar per tp, the parts the projection's split, its TP share
// written above each bar, every part labelled "projected".
void TestChartsBench::benchChartDrawsLayouts() {
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

void TestChartsBench::benchChartLabelsTheGpt_data() { narrowAndExport(); }

// A lesson's `"model": "gpt"` latency block: a batch is windows of T characters, so the bars are
// tokens/s and the x axis counts windows; the sizes the time budget left untimed keep their
// slots and are said on the chart (subtitle, a note in the empty slots where it fits, the CSV),
// never silently missing. At a narrow dock's width and an export's, nothing clipped or
// overlapping.
void TestChartsBench::benchChartLabelsTheGpt() {
  QFETCH(QSize, size);
  // What the block's options become: the GPT on its own text; the MLP's default unchanged.
  lessons::Bench block;
  block.kind = "latency";
  QCOMPARE(BenchRunner::latencyConfig(block).model, ModelKind::Mlp);
  block.options = {{"model", "gpt"}, {"max-batch", 512}, {"hidden", 64}, {"seq", 64}};
  const RunConfig c = BenchRunner::latencyConfig(block);
  QCOMPARE(c.model, ModelKind::Gpt);
  QCOMPARE(c.hidden, 64);
  QCOMPARE(c.seq, 64);
  QCOMPARE(c.heads, 4);  // not given: the default
  QVERIFY2(c.dataset == "fortunes" || c.dataset == "synthetic", c.dataset.c_str());
  QCOMPARE(BenchRunner::latencyBatches(block).back(), 512);

  // The sweep of that block as a 2-core CPU gives it (tokens/s nearly level), its two largest
  // sizes over the 5 s budget.
  const int T = 64;
  LatencySweepResult l;
  l.device = Device::Cpu, l.kernel = "vendor", l.model = ModelKind::Gpt, l.threads = 1;
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
  chart.grab().save(
      QString("%1/benchmark-latency-gpt-%2.png").arg(screenshotDir()).arg(size.width()));

  // With a GPU that timed every size: its bars stand in the CPU's untimed slots, so no note
  // there; the subtitle says which device left them out.
  LatencySweepResult g = l;
  g.device = Device::Cuda, g.kernel = "vendor", g.gpu = "NVIDIA H100 80GB HBM3", g.threads = 0;
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
  chart.grab().save(
      QString("%1/benchmark-latency-gpt-gpu-%2.png").arg(screenshotDir()).arg(size.width()));

  // The MLP's result on the same chart afterwards: its own names again, nothing left over.
  BenchResult mlp;
  mlp.kind = "latency";
  LatencySweepResult m;
  m.device = Device::Cpu, m.kernel = "vendor", m.model = ModelKind::Mlp, m.threads = 1;
  m.points = {{1, 0.03, 33333, 30, 7, 1, 0}};
  mlp.latencyCpu = m;
  chart.showResult(mlp);
  QCOMPARE(chart.cpuRate()->name(), QString("CPU samples/s (bars)"));
  QVERIFY(chart.yAxis->label().contains("samples/s"));
  QVERIFY(!chart.notTimedNote() && chart.labels().isEmpty());
  QVERIFY(!chart.subtitle().contains("not timed"));
}

QTEST_MAIN(TestChartsBench)
#include "tst_charts_bench.moc"
