// The lab window's step and sweep charts, offscreen: each fed from a synthetic history or sweep
// shows exactly the values in it (latency, speedup, loss overlays), fits say in words where they
// do not fit, and the model-states formulas give the lesson's numbers. Per-rank charts are in
// tst_charts_ranks.cpp, the Benchmark chart in tst_charts_bench.cpp, exports and real runs in
// tst_charts_runs.cpp. Run: ctest -R tst_charts --output-on-failure
#include <QTest>
#include <cmath>

#include "chart_inputs.h"
#include "text_boxes.h"

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
  void lossOverlays();
  void overlaysCompareLikeWithLike();
  void divergedRunDoesNotSetTheAxis();
  void legendTakesAtMostAThird();
  void gptLegendIsNotCut();
  void noEvaluationNoHeldOutSeries();
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
  const int y =
      int(std::lround(chart.yAxis->coordToPixel(12.5)));  // above fast, below slow, off grid
  const QRect plot = chart.axisRect()->rect();
  const int first = int(chart.xAxis->coordToPixel(50)), last = int(chart.xAxis->coordToPixel(2950));
  QVERIFY(last - first > 200 && first > plot.left() && last < plot.right());
  for (int x = first; x <= last; ++x)
    QVERIFY2(image.pixel(x, y) == compute,
             qPrintable(QString("column %1: %2").arg(x).arg(image.pixel(x, y), 0, 16)));
}

void TestCharts::speedupDrawsTheSweep() {
  const SweepResult strong = analyseSweep(Scaling::Strong, {1, 2, 4, 8}, {100, 56, 31, 19}, 256);
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
  QVERIFY2(chart.fit()->name().contains("(reference)\nfitted on ranks 1–8"),
           qPrintable(chart.fit()->name()));
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
  // The CSV has a row per measured rank count, whole ranks, the fit at each: the ~120 samples
  // that draw the curve are not data.
  QString csv;
  QTextStream out(&csv);
  chart.writeCsv(out);
  const QStringList rows = csv.trimmed().split('\n');
  QCOMPARE(rows.first(), QString("ranks,measured_speedup,efficiency,ideal_speedup,fit_speedup_reference"));
  QCOMPARE(rows.size(), 1 + int(strong.points.size()));
  for (size_t i = 0; i < strong.points.size(); ++i) {
    const QStringList cells = rows[int(i) + 1].split(',');
    const SweepPoint& p = strong.points[i];
    QCOMPARE(cells[0], QString::number(p.ranks));
    const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-8 * std::abs(b); };
    QVERIFY(near(cells[1].toDouble(), p.speedup));  // ten significant digits
    QVERIFY(near(cells[2].toDouble(), p.efficiency));
    QCOMPARE(cells[3], QString::number(p.ranks));
    QVERIFY(near(cells[4].toDouble(), strong.amdahl.speedup(p.ranks)));
  }

  const SweepResult weak = analyseSweep(Scaling::Weak, {1, 2, 4}, {100, 104, 112}, 64);
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
  const SweepResult slower = analyseSweep(Scaling::Strong, {1, 2, 4, 8}, {100, 130, 170, 230}, 256);
  QVERIFY2(slower.amdahl.p < 0, qPrintable(QString::number(slower.amdahl.p)));
  SpeedupChart chart;
  chart.showSweep(slower);
  const QString name = chart.fit()->name();
  QVERIFY2(name.contains("does not fit") && name.contains("slower"), qPrintable(name));
  QVERIFY2(!name.contains(QString::number(slower.amdahl.p, 'f', 3)) && !name.contains("p ="),
           qPrintable(name));
  QCOMPARE(chart.fit()->dataCount(), 0);
  QCOMPARE(chart.measured()->dataCount(), 4);  // the measurement is still shown
  const SweepResult faster = analyseSweep(Scaling::Strong, {1, 2}, {100, 20}, 256);
  QVERIFY(faster.amdahl.p > 1);
  chart.showSweep(faster);
  QVERIFY2(chart.fit()->name().contains("faster than ideal"), qPrintable(chart.fit()->name()));
  const SweepResult weakSlower = analyseSweep(Scaling::Weak, {1, 2, 4}, {100, 250, 600}, 64);
  QVERIFY(weakSlower.gustafson.s > 1);
  chart.showSweep(weakSlower);
  QVERIFY2(chart.fit()->name().startsWith("Gustafson's law does not fit"),
           qPrintable(chart.fit()->name()));
}

// Points close together at the foot of the plot (the ideal line goes to 16): each efficiency
// label shown lies inside the plot and clear of the others; one with no room is left out.
void TestCharts::efficiencyLabelsStayInThePlot() {
  const SweepResult crowded =
      analyseSweep(Scaling::Strong, {1, 2, 4, 8, 16}, {10, 6.2, 4.1, 3.3, 3.0}, 512);
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

// A history of `steps` steps whose loss falls from `start` (or, `diverging`, grows 10× a step).
static MetricHistory lossHistory(int steps, double start, bool diverging = false) {
  MetricHistory h;
  for (int64_t i = 1; i <= steps; ++i) {
    StepMetrics m = syntheticStep(i, 1);
    m.loss = diverging ? start * std::pow(10.0, double(i)) : start / double(i);
    h.append(m);
  }
  return h;
}

// A GPT run's loss chart overlays earlier GPT runs on the same text, not the MLP's Fashion-MNIST
// runs (another scale, another unit); a run of the same model and data stays.
void TestCharts::overlaysCompareLikeWithLike() {
  LossChart chart;
  RunConfig mlp;
  RunConfig mlp4 = mlp;
  mlp4.ranks = 4;
  RunConfig gpt;
  gpt.model = ModelKind::Gpt;
  gpt.dataset = "fortunes";
  chart.showRunOf(mlp);
  chart.showHistory(lossHistory(30, 2));
  chart.keepAsOverlay(LossChart::runLabel(mlp), mlp);
  chart.showRunOf(mlp4);
  chart.showHistory(lossHistory(30, 2));
  QCOMPARE(chart.overlayCount(), 1);  // the same model and data: compared
  chart.keepAsOverlay(LossChart::runLabel(mlp4), mlp4);
  chart.showRunOf(gpt);
  QCOMPARE(chart.overlayCount(), 0);  // a GPT on text: the MLP's runs are not its measure
  chart.showHistory(lossHistory(30, 4));
  for (int run = 0; run < LossChart::kMaxOverlays + 2; ++run)
    chart.keepAsOverlay(QString("gpt %1").arg(run), gpt);
  chart.showRunOf(gpt);
  QVERIFY(LossChart::kMaxOverlays <= 5);  // a few, not a legend of a dozen runs
  QCOMPARE(chart.overlayCount(), LossChart::kMaxOverlays);
}

// One run that diverged (loss to 10^15) kept as an overlay: the axis still fits the run shown.
void TestCharts::divergedRunDoesNotSetTheAxis() {
  LossChart chart;
  chart.showHistory(lossHistory(30, 2, true));
  chart.keepAsOverlay("diverged");
  QVERIFY(chart.overlayDiverged(0));
  QVERIFY(chart.overlay(0)->name().contains("diverged"));
  const MetricHistory shown = lossHistory(30, 2);
  chart.showHistory(shown);
  QVERIFY2(chart.yAxis->range().upper < 3 * 2.0,
           qPrintable(QString("the axis reaches %1").arg(chart.yAxis->range().upper)));
  QVERIFY(chart.yAxis->range().upper >= 2.0);  // the run shown is all in view
}

// Four earlier runs with long names in a short chart: the legend never takes more than a third
// of the chart; the run's own series keep their names.
void TestCharts::legendTakesAtMostAThird() {
  for (const QSize size : {QSize(420, 260), QSize(640, 300), QSize(900, 420)}) {
    LossChart chart;
    chart.resize(size);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.showHistory(lossHistory(30, 2));
    for (int run = 0; run < LossChart::kMaxOverlays; ++run)
      chart.keepAsOverlay(QString("sync · %1 ranks · ZeRO-2 · tp 2 · pp 2 · adam lr 0.001 · "
                                  "bucket 25 MB")
                              .arg(2 << run));
    chart.replot(QCustomPlot::rpImmediateRefresh);
    const int legend = chart.legend->outerRect().height();
    QVERIFY2(legend <= size.height() / Chart::kLegendShare,
             qPrintable(QString("at %1×%2 the legend is %3 px tall")
                            .arg(size.width())
                            .arg(size.height())
                            .arg(legend)));
    QVERIFY(chart.legend->hasItemWithPlottable(chart.graph(0)));  // the run's own loss
  }
}

// The GPT's series have longer names than the MLP's: relaid, none is cut ("loss, mean of las").
void TestCharts::gptLegendIsNotCut() {
  LossChart chart;
  chart.resize(460, 300);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.showHistory(lossHistory(30, 4));
  chart.replot(QCustomPlot::rpImmediateRefresh);
  RunConfig gpt;
  gpt.model = ModelKind::Gpt;
  gpt.dataset = "fortunes";
  chart.showRunOf(gpt);
  chart.replot(QCustomPlot::rpImmediateRefresh);
  QList<TextBox> legend;
  for (const TextBox& b : chartTextBoxes(&chart))
    if (b.owner.endsWith(" legend")) legend << b;
  QVERIFY(legend.size() >= 4);
  const QStringList cut = clipped(legend);
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join('\n')));
}


// A run with eval-every 0 measures nothing held out: its loss chart names no accuracy or
// held-out loss in the legend, draws no accuracy axis and writes no such CSV column; a run that
// evaluates gets all three back.
void TestCharts::noEvaluationNoHeldOutSeries() {
  LossChart chart;
  chart.resize(640, 360);
  const auto legendNames = [&] {
    QStringList names;
    for (int i = 0; i < chart.legend->itemCount(); ++i)
      if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.legend->item(i)))
        names << item->plottable()->name();
    return names.join(" | ");
  };
  const auto csvHeader = [&] {
    QString csv;
    QTextStream out(&csv);
    chart.writeCsv(out);
    return csv.section('\n', 0, 0);
  };
  RunConfig quiet;
  quiet.evalEvery = 0;
  chart.showRunOf(quiet);
  chart.showHistory(lossHistory(30, 2));
  QVERIFY2(!legendNames().contains("test accuracy") && !legendNames().contains("held-out"),
           qPrintable(legendNames()));
  QVERIFY(!chart.yAxis2->visible());
  QCOMPARE(csvHeader(), QString("step,loss_nats,loss_mean20_nats"));
  RunConfig evaluated;
  evaluated.evalEvery = 10;
  chart.showRunOf(evaluated);
  QVERIFY2(legendNames().contains("test accuracy") && legendNames().contains("held-out loss"),
           qPrintable(legendNames()));
  QVERIFY(chart.yAxis2->visible());
  QCOMPARE(csvHeader(), QString("step,loss_nats,loss_mean20_nats,test_accuracy_percent,test_loss_nats"));
}

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
