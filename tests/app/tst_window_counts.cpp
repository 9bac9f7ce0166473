// Lesson 4's GPU steps run from the window, offscreen: divergence, coalescing and the GEMM on the
// GPU count their kernels' source on this CPU and chart the hand-worked counts (50 % lanes; 1
// against 32 lines; 2n³/32 loads; a 32-way bank conflict), labelled counted, not timed; its SIMD
// steps name the dispatched level; lesson 5 measures the GIL. Charts: <build>/screenshots/.
// Run: ctest -R tst_window_counts --output-on-failure
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <QTextDocumentFragment>
#include <unistd.h>

#include <cmath>

#include "bench_runner.h"
#include "capabilities.h"
#include "charts/bench_chart.h"
#include "charts/chart_hub.h"
#include "main_window.h"
#include "panels/lesson_dock.h"
#include "teach/gil.h"
#include "window_test.h"

using namespace paralab;

namespace {

// Opens lesson `slug` at the step titled `title`, locks `prediction` and runs its benchmark:
// the chart, once it has drawn.
BenchChart* runStep(MainWindow& w, const QString& slug, const QString& title,
                    const QString& prediction, int timeoutMs = 60000) {
  LessonDock* dock = w.lessonDock();
  for (int i = 0; i < dock->lessons().size(); ++i)
    if (dock->lessons()[i].slug == slug) {
      dock->openLesson(i);
      const QList<lessons::Step>& steps = dock->lessons()[i].steps;
      for (int s = 0; s < steps.size(); ++s)
        if (steps[s].title == title) dock->openPage(s + 1);
    }
  if (!dock->currentStep() || dock->currentStep()->title != title || !dock->currentStep()->bench)
    return nullptr;
  if (!dock->predictionLocked()) {
    dock->findChild<QLineEdit*>("lessonPrediction")->setText(prediction);
    dock->findChild<QPushButton*>("lessonLock")->click();
  }
  QSignalSpy finished(w.benchRunner(), &BenchRunner::finished);
  dock->findChild<QPushButton*>("lessonRun")->click();
  if (!finished.wait(timeoutMs) && finished.isEmpty()) return nullptr;
  if (!finished.at(0).at(1).toString().isEmpty()) {
    qWarning("%s", qPrintable(finished.at(0).at(1).toString()));
    return nullptr;
  }
  auto* chart = w.chartHub()->find<BenchChart>();
  if (chart) {  // for a look at the chart: <build>/screenshots/benchmark-<step>.png
    chart->resize(1000, 600);
    chart->replot();
    const QString name = title.toLower().replace(QRegularExpression("[^a-z0-9]+"), "-");
    chart->toPixmap(1000, 600).save(paralab::test::screenshotDir() + "/benchmark-" + name + ".png");
  }
  return chart;
}

// The value of the comparison's row labelled `label` ("Counted", "Measured"), as shown (to 4
// significant digits: 16384 reads 1.638e+04).
double shownRow(const QString& html, const QString& label) {
  const QRegularExpression row(label + "</td><td><b>([0-9.,]+(?:e[+-]?[0-9]+)?)");
  const QRegularExpressionMatch m = row.match(html);
  return m.hasMatch() ? QLocale().toDouble(m.captured(1)) : -1;
}

const char* kCounted = "counted by executing the kernel source, not timed";

}  // namespace

class TestWindowCounts : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { paralab::test::startAsANewLearner(); }

  // Lesson 4's steps on SIMD lanes and the roofline name the vector level this machine's kernels
  // were dispatched to, as the simd GEMM rung does, not a width written into the lesson.
  void lessonFourNamesTheDispatchedLevel() {
    MainWindow w;
    const QString level = QString::fromStdString(simdLevelName());
    const QString full = QString("%1, %2 floats per instruction").arg(level).arg(simdLevelFloats());
    int naming = 0;
    for (const lessons::Lesson& l : w.lessonDock()->lessons()) {
      if (l.slug != "04-cpu-gpu") continue;
      for (const lessons::Step& s : l.steps) {
        QVERIFY2(!s.markdown.contains("$simd"), qPrintable(s.title));
        if (s.title == "Cores and lanes" || s.title.startsWith("Each layer on this CPU")) {
          QVERIFY2(s.markdown.contains(full), qPrintable(s.title + ": " + s.markdown));
          ++naming;
        }
        if (s.title == "One instruction, many lanes") {
          QVERIFY2(s.markdown.contains("here " + level + "."), qPrintable(s.markdown));
          ++naming;
        }
      }
    }
    QCOMPARE(naming, 3);
  }

  // Branch on lane parity: 50 % of the lanes per path; on the warp index: all of them.
  void divergenceStepShowsHalfTheLanes() {
    MainWindow w;
    BenchChart* chart = runStep(w, "04-cpu-gpu", "Warp divergence", "75");
    QVERIFY(chart && chart->result() && chart->result()->gpuCounts);
    QCOMPARE(chart->rungs()->dataCount(), 2);
    QCOMPARE(chart->rungs()->data()->at(0)->value, 50.0);
    QCOMPARE(chart->rungs()->data()->at(1)->value, 100.0);
    QVERIFY2(chart->subtitle().contains(kCounted), qPrintable(chart->subtitle()));
    QVERIFY(chart->rungs()->name().contains(kCounted));
    const QString text = w.lessonDock()->comparisonText();
    QCOMPARE(shownRow(text, "Counted"), 50.0);
    qInfo("%s", qPrintable(QTextDocumentFragment::fromHtml(text).toPlainText().simplified()));
  }

  // Lines per warp load equal the stride (1 coalesced, 32 at a stride of 32 floats); sectors
  // are four per line up to one per lane; the comparison is their ratio, 32 / 4.
  void coalescingStepShowsOneLineAgainstThirtyTwo() {
    MainWindow w;
    BenchChart* chart = runStep(w, "04-cpu-gpu", "Coalescing", "4");
    QVERIFY(chart && chart->result() && chart->result()->gpuCounts);
    QCOMPARE(chart->shared()->dataCount(), 6);
    const QList<double> lines = {1, 2, 4, 8, 16, 32}, sectors = {4, 8, 16, 32, 32, 32};
    for (int i = 0; i < 6; ++i) {
      QCOMPARE(chart->shared()->data()->at(i)->value, lines[i]);
      QCOMPARE(chart->padded()->data()->at(i)->value, sectors[i]);
    }
    QCOMPARE(chart->tickLabels().first(), QString("1"));
    QCOMPARE(chart->tickLabels().last(), QString("32"));
    QVERIFY2(chart->subtitle().contains(kCounted), qPrintable(chart->subtitle()));
    QCOMPARE(shownRow(w.lessonDock()->comparisonText(), "Counted"), 8.0);
  }

  // 64 × 64 × 64: the naive kernel loads 2·64 floats per element of C, the tiled ones 2·64/32;
  // lanes down a column of the unpadded tile hit one bank 32 times, the padded tile once.
  void gemmStepShowsLoadsSavedAndBankConflicts() {
    MainWindow w;
    BenchChart* chart = runStep(w, "04-cpu-gpu", "The GEMM ladder on the GPU", "1000");
    QVERIFY(chart && chart->result() && chart->result()->gpuCounts);
    QCOMPARE(chart->shared()->dataCount(), 4);
    const QList<double> loads = {128, 4, 4, 4}, passes = {0, 1, 32, 1};
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(chart->shared()->data()->at(i)->value, loads[i]);
      QCOMPARE(chart->padded()->data()->at(i)->value, passes[i]);
    }
    QVERIFY2(chart->subtitle().contains(kCounted), qPrintable(chart->subtitle()));
    QVERIFY(std::abs(shownRow(w.lessonDock()->comparisonText(), "Counted") - 16384) < 10);
  }

  // The GIL: two threads of one Python process are no faster than one, two processes are.
  void gilStepMeasuresThreadsBelowProcesses() {
    if (access(teach::gilPython(), X_OK) != 0)
      QSKIP("Debian's python3 is not installed: the GIL step cannot run here");
    MainWindow w;
    BenchChart* chart = runStep(w, "05-data-parallel", "The GIL, measured", "2", 240000);
    QVERIFY(chart && chart->result() && chart->result()->gil);
    const teach::GilResult& r = *chart->result()->gil;
    QVERIFY2(r.notRun.empty(), r.notRun.c_str());
    QVERIFY(r.points.size() >= 2 && r.points[1].workers == 2);
    qInfo("2 workers: threads %.2fx, processes %.2fx (%d cores)", r.points[1].threadsSpeedup,
          r.points[1].processesSpeedup, r.cores);
    // What the chart and the comparison show is what was measured.
    QCOMPARE(chart->shared()->data()->at(1)->value, r.points[1].threadsSpeedup);
    QCOMPARE(chart->padded()->data()->at(1)->value, r.points[1].processesSpeedup);
    QVERIFY2(chart->subtitle().contains(QString("%1 core").arg(r.cores)),
             qPrintable(chart->subtitle()));
    const double shown = shownRow(w.lessonDock()->comparisonText(), "Measured");
    QVERIFY(std::abs(shown - r.points[1].threadsSpeedup) < 1e-3 * r.points[1].threadsSpeedup + 1e-3);
    if (r.cores < 2) QSKIP("one core: processes cannot run at once here either");
    // Two processes can only show the GIL's absence when two cores are free for them; when other
    // programs keep the cores busy, two processes run no faster than one and the run shows
    // nothing either way: said, not passed.
    if (r.points[1].processesSpeedup < 1.25)
      QSKIP(qPrintable(QString("the cores were busy: two processes ran %1x as fast as one, so "
                               "this run cannot show what the GIL costs threads")
                           .arg(r.points[1].processesSpeedup, 0, 'f', 2)));
    QVERIFY(r.points[1].threadsSpeedup < r.points[1].processesSpeedup);
  }
};

QTEST_MAIN(TestWindowCounts)
#include "tst_window_counts.moc"
