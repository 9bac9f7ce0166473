// Training through emulated failures (train/goodput.h): checkpoints every K steps change nothing
// of the training; with failures the run redoes the lost steps from its last checkpoint and ends
// where the uninterrupted run ends (the same last loss, exactly), reporting the failures, the
// time lost and the checkpoints' cost; Young/Daly's interval is sqrt(2 C MTBF). A sweep over K
// prints goodput beside Young/Daly's optimum (not asserted: wall time). Run: ctest -R tst_goodput
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "config.h"
#include "loss_trajectory.h"
#include "metrics/span_recorder.h"
#include "train/goodput.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig run(int steps) {
  RunConfig c = test::smallRun(64, 2, 64);
  c.ranks = 2;
  c.steps = steps;
  return c;
}

}  // namespace

class TstGoodput : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  std::string file() const { return m_dir.filePath("goodput.ckpt").toStdString(); }

 private slots:
  void youngDaly() {
    QCOMPARE(youngDalyIntervalS(0.5, 100), 10.0);
    QCOMPARE(youngDalyIntervalS(2, 4), 4.0);
  }

  void refused() {
    RunConfig c = run(10);
    c.checkpointEvery = 5;
    QCOMPARE(QString::fromStdString(c.validate().value_or("")),
             QString("checkpoint-every: checkpoints on a schedule go with --mtbf (failures to "
                     "recover from)"));
    c.mtbfS = -1;
    QVERIFY(QString::fromStdString(c.validate().value_or("")).startsWith("mtbf: "));
  }

  // No failure within the run: checkpoints every 5 steps, the training unchanged.
  void checkpointsChangeNothing() {
    RunConfig c = run(20);
    const std::vector<double> plain = test::lossTrajectory(c, 20);
    c.mtbfS = 86400;
    c.checkpointEvery = 5;
    Trainer t(c);
    std::vector<double> losses;
    const GoodputReport r =
        trainWithFailures(t, file(), [&](const StepMetrics& m) { losses.push_back(m.loss); });
    QCOMPARE(losses, plain);
    QCOMPARE(r.failures, 0);
    QCOMPARE(r.stepsRun, int64_t(20));
    QCOMPARE(r.checkpoints, 3);  // after steps 5, 10 and 15; none after the last
    QCOMPARE(r.lostS, 0.0);
    QVERIFY(r.checkpointCostS > 0 && r.goodput > 0);
    QCOMPARE(r.youngDalyS, std::sqrt(2 * r.checkpointCostS * 86400));
  }

  // Failures about every fifth of the run: steps are redone from the last checkpoint, and the
  // run ends where the uninterrupted one does.
  void failuresRedoFromTheCheckpoint() {
    RunConfig c = run(300);
    const int64_t t0 = nowNs();
    const std::vector<double> plain = test::lossTrajectory(c, 300);
    const double plainS = double(nowNs() - t0) * 1e-9;
    c.mtbfS = plainS / 5;
    c.checkpointEvery = 10;
    Trainer t(c);
    std::vector<double> losses;
    const GoodputReport r =
        trainWithFailures(t, file(), [&](const StepMetrics& m) { losses.push_back(m.loss); });
    qInfo(
        "MTBF %.3f s: %d failures, %lld steps run for 300, %.3f s lost, %d checkpoints of "
        "%.4f s, goodput %.0f steps/s, Young/Daly %.1f steps",
        c.mtbfS, r.failures, (long long)r.stepsRun, r.lostS, r.checkpoints, r.checkpointCostS,
        r.goodput, r.youngDalySteps);
    QVERIFY(r.failures >= 1);
    QCOMPARE(int64_t(losses.size()), r.stepsRun);
    QVERIFY(r.stepsRun > 300);
    QVERIFY(r.lostS > 0);
    QCOMPARE(losses.back(), plain.back());
    QCOMPARE(t.stepsDone(), int64_t(300));
  }

  // The sweep: goodput for K = 1 .. 64 beside Young/Daly's optimum (printed).
  void sweepOverK() {
    RunConfig c = run(200);
    const int64_t t0 = nowNs();
    (void)test::lossTrajectory(c, 200);
    c.mtbfS = double(nowNs() - t0) * 1e-9 / 4;
    for (int k : {1, 2, 4, 8, 16, 32, 64}) {
      c.checkpointEvery = k;
      Trainer t(c);
      const GoodputReport r = trainWithFailures(t, file());
      qInfo(
          "K %3d: goodput %7.0f steps/s, %2d failures, lost %.3f s, checkpoints %.3f s "
          "(C %.4f s); Young/Daly K = %.1f",
          k, r.goodput, r.failures, r.lostS, r.checkpointS, r.checkpointCostS, r.youngDalySteps);
      QVERIFY(r.goodput > 0);
    }
  }
};

QTEST_GUILESS_MAIN(TstGoodput)
#include "tst_goodput.moc"
