// Live reconfiguration: a run re-sharded under another layout between steps goes on from the
// same parameters and optimizer state, so for synchronous strategies the loss continues the
// uninterrupted serial trajectory (1e-5 relative: summation order, as in
// tst_parallel_equals_serial), a --model moe run included. Run: ctest -R tst_reconfigure
#include <QtTest>
#include <chrono>
#include <thread>

#include "loss_trajectory.h"
#include "session.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig base() {
  RunConfig c;
  c.dataset = "synthetic";
  c.hidden = 32;
  c.layers = 2;
  c.batch = 48;
  c.evalEvery = 0;
  return c;
}

std::vector<double> uninterrupted(const RunConfig& c, int steps) {
  Trainer t(c);
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) out.push_back(t.step().loss);
  return out;
}

}  // namespace

class TstReconfigure : public QObject {
  Q_OBJECT
 private slots:
  void continuesTheTrajectory_data() {
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<QStringList>("layouts");  // "strategy:ranks[:zero]" applied in turn
    QTest::newRow("serial -> DP 4 -> serial") << "momentum" << QStringList{"sync:4", "sync:1"};
    QTest::newRow("serial -> ZeRO-3 x3 -> ZeRO-1 x2")
        << "adam" << QStringList{"sync:3:3", "sync:2:1"};
    QTest::newRow("DP 2 -> ps-sync 4 -> ZeRO-2 x4")
        << "adam" << QStringList{"sync:2", "ps-sync:4", "sync:4:2"};
  }
  void continuesTheTrajectory() {
    QFETCH(QString, optimizer);
    QFETCH(QStringList, layouts);
    RunConfig c = base();
    c.optimizer = optimizer.toStdString();
    if (optimizer == "adam") c.lr = 0.002;
    const int per = 8;
    const std::vector<double> ref = uninterrupted(c, per * int(layouts.size() + 1));
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(c);
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (const QString& layout : layouts) {
      const QStringList parts = layout.split(':');
      RunConfig next = c;
      next.strategy = parts[0].toStdString();
      next.ranks = parts[1].toInt();
      next.zero = parts.size() > 2 ? parts[2].toInt() : 0;
      next.servers = std::min(2, next.ranks);
      const TrainingState state = trainer->saveState();
      QCOMPARE(state.step, int64_t(got.size()));
      trainer = std::make_unique<Trainer>(next);
      trainer->loadState(state);
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "against the uninterrupted run");
  }

  void sessionReconfiguresWhileRunning() {
    RunConfig c = base();
    c.steps = 400;  // long enough that pause() lands well before the end, even on a busy machine
    const std::vector<double> ref = uninterrupted(c, c.steps);
    Session s;
    QCOMPARE(QString::fromStdString(s.start(c)), QString());
    s.pause();  // hold the run wherever it is, and step it to at least step 5
    QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().state == RunState::Paused, 20000);
    while (s.snapshot().stepsDone < 5) {
      const int64_t before = s.snapshot().stepsDone;
      s.stepOnce();
      QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().stepsDone == before + 1, 20000);
    }
    const int64_t switched = s.snapshot().stepsDone;  // the 4-rank layout takes over here
    QVERIFY2(switched < 300, "the run should have been paused early");
    RunConfig four = c;
    four.ranks = 4;
    QCOMPARE(QString::fromStdString(s.reconfigure(four)), QString());
    QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().config.ranks == 4, 20000);  // applied while paused
    s.resume();
    QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().state == RunState::Finished, 30000);
    const Snapshot snap = s.snapshot();
    QCOMPARE(snap.stepsDone, int64_t(c.steps));
    QVERIFY(snap.notice.empty());
    QCOMPARE(snap.steps.back().ranks.size(), size_t(4));  // the end ran on 4 ranks
    for (int i = 0; i < c.steps; ++i)
      QCOMPARE(snap.steps[size_t(i)].step, int64_t(i + 1));  // numbering goes on
    // The trajectory property holds to 1e-5 over tens of steps (tst_parallel_equals_serial's
    // 50); rounding differences then grow, as between any two summation orders.
    for (int i = 0; i < int(switched) + 50; ++i) {
      QVERIFY2(std::abs(snap.steps[size_t(i)].loss - ref[size_t(i)]) <= 1e-5 * ref[size_t(i)],
               qPrintable(QString("step %1").arg(i + 1)));
    }
  }

  // A --model moe run changes its ranks and expert-parallel degree live (2 ranks ep 1 -> 4
  // ranks ep 2): the experts move to their new ranks and the loss goes on along the
  // uninterrupted run's, to tst_moe's 1e-5 (the dp ranks' summation order; no routing flip at
  // this size within 30 steps).
  void sessionReconfiguresMoe() {
    RunConfig c = base();
    c.model = ModelKind::Moe;
    c.experts = 4;
    c.topk = 2;
    c.capacityFactor = 4.0;  // no token dropped, as in tst_moe
    c.ranks = 2;
    c.steps = 30;
    const std::vector<double> ref = uninterrupted(c, c.steps);
    Session s;
    QCOMPARE(QString::fromStdString(s.start(c, true)), QString());
    for (int64_t done = 0; done < 6; ++done) {
      s.stepOnce();
      QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().stepsDone == done + 1, 20000);
    }
    RunConfig four = c;
    four.ranks = 4;
    four.ep = 2;
    QCOMPARE(QString::fromStdString(s.reconfigure(four)), QString());
    QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().config.ep == 2 || !s.snapshot().notice.empty(), 20000);
    QCOMPARE(QString::fromStdString(s.snapshot().notice), QString());
    s.resume();
    QTRY_VERIFY_WITH_TIMEOUT(s.snapshot().state == RunState::Finished, 30000);
    const Snapshot snap = s.snapshot();
    QCOMPARE(snap.stepsDone, int64_t(c.steps));
    QCOMPARE(snap.steps.back().ranks.size(), size_t(4));
    QCOMPARE(snap.holdings.size(), size_t(4));  // the map shows the new layout
    for (int i = 0; i < c.steps; ++i)
      QVERIFY2(std::abs(snap.steps[size_t(i)].loss - ref[size_t(i)]) <= 1e-5 * ref[size_t(i)],
               qPrintable(QString("step %1: %2 vs uninterrupted %3")
                              .arg(i + 1)
                              .arg(snap.steps[size_t(i)].loss, 0, 'g', 10)
                              .arg(ref[size_t(i)], 0, 'g', 10)));
  }

  void whatCannotChangeIsNamed() {
    Session s;
    RunConfig c = base();
    QCOMPARE(QString::fromStdString(s.reconfigure(c)).left(12), QString("reconfigure:"));
    s.start(c);
    RunConfig wider = c;
    wider.hidden = 64;
    QVERIFY(QString::fromStdString(s.reconfigure(wider)).startsWith("hidden:"));
    RunConfig other = c;
    other.optimizer = "adam";
    QVERIFY(QString::fromStdString(s.reconfigure(other)).startsWith("optimizer:"));
    RunConfig bad = c;
    bad.ranks = 0;
    QVERIFY(QString::fromStdString(s.reconfigure(bad)).startsWith("ranks:"));
    s.stop();
  }
};

QTEST_GUILESS_MAIN(TstReconfigure)
#include "tst_reconfigure.moc"
