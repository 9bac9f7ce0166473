// The loss-scale chart (app/charts/loss_scale_chart.h), offscreen: a run's fp16 loss scale and
// its skipped steps drawn as the steps carried them, its CSV the same numbers, its labels; an
// fp32 run leaves it empty (and out of Export All); a real fp16 run's steps drawn.
// Run: ctest -R tst_loss_scale_chart --output-on-failure
#include <QApplication>
#include <QTest>

#include "charts/loss_scale_chart.h"
#include "charts/metric_history.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

StepMetrics stepWith(int64_t step, std::optional<double> scale, int64_t skipped) {
  StepMetrics m;
  m.step = step;
  m.loss = 1;
  m.lossScale = scale;
  if (scale) m.skippedSteps = skipped;
  return m;
}

}  // namespace

class TestLossScaleChart : public QObject {
  Q_OBJECT
 private slots:
  void drawsTheScaleAndSkippedSteps() {
    // 2^16, an overflow at step 2 (skipped, halved), then two clean steps of window 2: doubled.
    const std::vector<std::pair<double, int64_t>> figures = {
        {65536, 0}, {65536, 1}, {32768, 1}, {32768, 1}, {65536, 1}};
    MetricHistory h;
    for (size_t i = 0; i < figures.size(); ++i)
      h.append(stepWith(int64_t(i) + 1, figures[i].first, figures[i].second));
    LossScaleChart chart;
    chart.resize(800, 500);
    chart.showHistory(h);
    QVERIFY(!chart.showsNothing());
    QCOMPARE(chart.scale()->dataCount(), int(figures.size()));
    for (size_t i = 0; i < figures.size(); ++i) {
      QCOMPARE((chart.scale()->data()->begin() + int(i))->value, figures[i].first);
      QCOMPARE((chart.skipped()->data()->begin() + int(i))->value, double(figures[i].second));
    }
    QVERIFY(chart.yAxis->scaleType() == QCPAxis::stLogarithmic);
    QVERIFY(chart.yAxis->range().contains(65536) && chart.yAxis->range().contains(32768));
    QVERIFY(chart.yAxis2->range().contains(1));
    QCOMPARE(chart.scale()->name(), QString("loss scale S"));
    QVERIFY(chart.skipped()->name().contains("skipped"));
    QString csv;
    QTextStream out(&csv);
    chart.writeCsv(out);
    const QStringList rows = csv.trimmed().split('\n');
    QCOMPARE(rows.first(), QString("step,loss_scale,skipped_steps"));
    QCOMPARE(rows.size(), 1 + int(figures.size()));
    QCOMPARE(rows[3], QString("3,32768,1"));
    QVERIFY(!chart.toPixmap(800, 500).isNull());
  }

  void emptyForAnFp32Run() {
    MetricHistory h;
    for (int s = 1; s <= 3; ++s) h.append(stepWith(s, std::nullopt, 0));
    LossScaleChart chart;
    chart.showHistory(h);
    QVERIFY2(chart.showsNothing(), "an fp32 run has no loss scale: left out of Export All");
    QCOMPARE(chart.scale()->dataCount(), 0);
  }

  // A real fp16 run: every step's scale, from the engine's own step lines.
  void realFp16Run() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 32;
    c.evalEvery = 0;
    c.precision = Dtype::Fp16;
    c.lossScaleWindow = 2;
    Trainer t(c);
    MetricHistory h;
    for (int s = 0; s < 8; ++s) h.append(t.step());
    LossScaleChart chart;
    chart.showHistory(h);
    QCOMPARE(chart.scale()->dataCount(), 8);
    QCOMPARE(chart.scale()->data()->begin()->value, 65536.0);
  }
};

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  TestLossScaleChart t;
  return QTest::qExec(&t, argc, argv);
}
#include "tst_loss_scale_chart.moc"
