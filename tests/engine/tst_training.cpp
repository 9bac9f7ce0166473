// The serial engine really learns: on Fashion-MNIST the loss falls and test accuracy
// reaches 80% within a bounded number of steps; the run is reproducible by seed.
// Run: ctest -R tst_training
#include <QtTest>

#include "train/trainer.h"

using namespace paralab;

class TstTraining : public QObject {
  Q_OBJECT
 private slots:
  void fashionMnistReaches80Percent() {
    RunConfig c;
    c.dataDir = PARALAB_FMNIST_DIR;
    c.hidden = 128;
    c.layers = 2;
    c.batch = 128;
    c.steps = 300;
    c.optimizer = "momentum";
    c.lr = 0.05;
    c.evalEvery = 0;
    Trainer t(c);
    double first = 0, lastAvg = 0;
    for (int s = 0; s < c.steps; ++s) {
      const StepMetrics m = t.step();
      QVERIFY(std::isfinite(m.loss));
      if (s == 0) first = m.loss;
      if (s >= c.steps - 20) lastAvg += m.loss / 20;
    }
    QVERIFY2(first > 2.0, qPrintable(QString::number(first)));  // ~ln(10) at the start
    QVERIFY2(lastAvg < 0.6, qPrintable(QString("mean loss of the last 20 steps %1").arg(lastAvg)));
    const double acc = t.evaluate(0);  // the whole 10 000-image test split
    qInfo("test accuracy after %d steps: %.4f", c.steps, acc);
    QVERIFY2(acc >= 0.80, qPrintable(QString::number(acc)));
  }

  void everyOptimizerLearnsSynthetic_data() {
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<double>("lr");
    QTest::newRow("sgd") << "sgd" << 0.1;
    QTest::newRow("momentum") << "momentum" << 0.05;
    QTest::newRow("adam") << "adam" << 0.002;
  }
  void everyOptimizerLearnsSynthetic() {
    QFETCH(QString, optimizer);
    QFETCH(double, lr);
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 64;
    c.batch = 64;
    c.optimizer = optimizer.toStdString();
    c.lr = lr;
    c.evalEvery = 0;
    Trainer t(c);
    double first = 0, last = 0;
    for (int s = 0; s < 150; ++s) {
      const double loss = t.step().loss;
      if (s < 10) first += loss / 10;
      if (s >= 140) last += loss / 10;
    }
    QVERIFY2(last < 0.8 * first, qPrintable(QString("%1 -> %2").arg(first).arg(last)));
  }

  void sameSeedSameTrajectory() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 32;
    c.evalEvery = 0;
    Trainer a(c), b(c);
    for (int s = 0; s < 5; ++s) QCOMPARE(a.step().loss, b.step().loss);
  }

  void divergenceIsReportedWithTheCause() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 64;
    c.batch = 64;
    c.optimizer = "sgd";
    c.lr = 5.0;  // far too large: the loss overflows within a few steps
    c.evalEvery = 0;
    Trainer t(c);
    try {
      for (int s = 0; s < 200; ++s) t.step();
      QFAIL("expected the run to diverge");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("lower the learning rate"), e.what());
    }
  }

  void bucketedAllReduceOverlapsBackward() {
    // Bucketed data parallelism starts a bucket's all-reduce while backward goes on with
    // earlier units: a comm span of the step overlaps a backward span in time. The per-tensor
    // version all-reduces only after backward: no overlap.
    for (const char* version : {"bucket", "per-tensor"}) {
      RunConfig c;
      c.dataset = "synthetic";
      c.hidden = 128;
      c.layers = 4;
      c.batch = 256;
      c.ranks = 2;
      c.dpVersion = *fromName<DpVersion>(version);
      c.bucketMb = 0.1;
      c.evalEvery = 0;
      Trainer t(c);
      bool overlapped = false;
      // Up to 20 steps: on a busy machine the communication thread may be scheduled late in
      // some steps; one overlapped step proves the mechanism.
      for (int s = 1; s <= 20 && !overlapped; ++s) {
        t.step();
        const auto spans = t.spans(0).since(s);
        for (const Span& comm : spans)
          for (const Span& bwd : spans)
            if (comm.kind == SpanKind::Comm && bwd.kind == SpanKind::Backward &&
                comm.startNs < bwd.endNs && bwd.startNs < comm.endNs)
              overlapped = true;
      }
      QCOMPARE(overlapped, std::string(version) == "bucket");
    }
  }

  void metricsAreFilledIn() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 16;
    c.evalEvery = 2;
    c.evalSamples = 100;
    Trainer t(c);
    const StepMetrics m1 = t.step();
    QCOMPARE(m1.step, 1);
    QVERIFY(!m1.testAccuracy);
    const StepMetrics m2 = t.step();
    QVERIFY(m2.testAccuracy && *m2.testAccuracy >= 0 && *m2.testAccuracy <= 1);
    QVERIFY(m2.stepMs > 0 && m2.samplesPerS > 0);
    QCOMPARE(m2.ranks.size(), size_t(1));
    const int64_t P = t.parameterCount();
    QCOMPARE(m2.ranks[0].mem[MemCategory::Params], 4 * P);
    QCOMPARE(m2.ranks[0].mem[MemCategory::Optimizer], 4 * P);  // momentum: one buffer
    QVERIFY(m2.ranks[0].mem[MemCategory::Activations] > 0);
    // Spans of the step: data, then a forward span per unit (in_proj, blocks, classifier),
    // a backward span per unit, the optimizer; in order and not overlapping (one rank).
    const auto spans = t.spans().since(2);
    const int units = c.layers + 2;
    QCOMPARE(int(spans.size()), 2 + 2 * units);
    QCOMPARE(spans.front().kind, SpanKind::Data);
    for (int u = 0; u < units; ++u) {
      QCOMPARE(spans[size_t(1 + u)].kind, SpanKind::Forward);
      QCOMPARE(spans[size_t(1 + units + u)].kind, SpanKind::Backward);
    }
    QCOMPARE(spans.back().kind, SpanKind::Optimizer);
    for (size_t i = 1; i < spans.size(); ++i) QVERIFY(spans[i].startNs >= spans[i - 1].endNs);
    // One rank: no traffic, and the spans cover nearly all of the step.
    QCOMPARE(m2.ranks[0].bytesSent, 0);
    QVERIFY(m2.ranks[0].idleMs < m2.stepMs);
  }
};

QTEST_GUILESS_MAIN(TstTraining)
#include "tst_training.moc"
