// Elastic data parallelism (--elastic, train/elastic.cpp): 4 thread ranks with --fail 3@10 go on
// as 3 and complete their steps; from the failed step on, their losses equal those of a 3-rank
// run resumed from the state after step 9 (1e-5), and the same batches are trained; with
// --rejoin 3@20 the replica comes back healed (its parameters its peers', bit for bit; in bf16
// and fp16 also the fp32 master and the loss scale) and the 4 ranks go on as a 4-rank run
// resumed from the state after step 19 would; bad --rejoin values are refused; no thread is left
// behind. Without --elastic the failure ends the run (tst_faults).
// Run: ctest -R tst_elastic
#include <QDir>
#include <QtTest>

#include "config.h"
#include "loss_trajectory.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

int threadCount() {
  return int(QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot).size());
}

RunConfig base() {
  RunConfig c = test::smallRun(32, 2, 48);
  c.ranks = 4;
  c.steps = 15;
  return c;
}

// Every local rank's parameters (sync and ZeRO-1 replicas hold them whole).
std::vector<std::vector<float>> replicaParameters(Trainer& t) {
  std::vector<std::vector<float>> out;
  for (int i = 0; i < t.localRankCount(); ++i) {
    Tensor& p = t.strategy(i).beginEval().params().params();
    out.emplace_back(p.data(), p.data() + p.numel());
    t.strategy(i).endEval();
  }
  return out;
}

void compareLosses(const std::vector<double>& got, const std::vector<double>& want) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    QVERIFY2(std::abs(got[i] - want[i]) <= 1e-5,
             qPrintable(QString("step %1: elastic %2, reference %3")
                            .arg(i + 1)
                            .arg(got[i], 0, 'g', 10)
                            .arg(want[i], 0, 'g', 10)));
}

}  // namespace

class TstElastic : public QObject {
  Q_OBJECT
 private slots:
  void refused() {
    RunConfig c = base();
    c.elastic = true;
    c.strategy = "ps-async";
    QCOMPARE(QString::fromStdString(c.validate().value_or("")),
             QString("elastic: elastic training re-forms thread ranks of --strategy sync (data "
                     "parallelism)"));
  }

  void survivorsGoOn_data() {
    QTest::addColumn<int>("zero");
    QTest::newRow("sync") << 0;
    QTest::newRow("ZeRO-1") << 1;
  }
  void survivorsGoOn() {
    QFETCH(int, zero);
    const int threadsBefore = threadCount();
    RunConfig c = base();
    c.zero = zero;
    c.fail = "3@10";
    c.elastic = true;
    std::vector<double> elastic;
    std::vector<Trainer::ElasticEvent> events;
    {
      Trainer t(c);
      for (int i = 0; i < c.steps; ++i) {
        const StepMetrics m = t.step();
        QCOMPARE(m.step, int64_t(i + 1));
        QCOMPARE(int(m.ranks.size()), i + 1 < 10 ? 4 : 3);
        elastic.push_back(m.loss);
      }
      QCOMPARE(t.config().ranks, 3);
      events = t.elasticEvents();
    }
    QCOMPARE(threadCount(), threadsBefore);  // the failed world's threads and the new one's ended
    QCOMPARE(events.size(), size_t(1));
    QCOMPARE(events[0].step, int64_t(10));
    QCOMPARE(events[0].failedRank, 3);
    QCOMPARE(events[0].ranksAfter, 3);

    // The reference: 4 ranks for 9 steps, then a 3-rank run from that state.
    RunConfig four = base();
    four.zero = zero;
    TrainingState state;
    std::vector<double> reference;
    {
      Trainer a(four);
      for (int i = 0; i < 9; ++i) reference.push_back(a.step().loss);
      state = a.saveState();
    }
    RunConfig three = four;
    three.ranks = 3;
    Trainer b(three);
    b.loadState(state);
    while (b.stepsDone() < c.steps) reference.push_back(b.step().loss);
    QCOMPARE(reference.size(), elastic.size());
    for (size_t i = 0; i < elastic.size(); ++i)
      QVERIFY2(std::abs(elastic[i] - reference[i]) <= 1e-5,
               qPrintable(QString("step %1: elastic %2, reference %3")
                              .arg(i + 1)
                              .arg(elastic[i], 0, 'g', 10)
                              .arg(reference[i], 0, 'g', 10)));
  }

  // Bad --rejoin: one line naming the field and what is allowed.
  void rejoinRefused_data() {
    QTest::addColumn<bool>("elastic");
    QTest::addColumn<QString>("fail");
    QTest::addColumn<QString>("rejoin");
    QTest::addColumn<QString>("line");
    QTest::newRow("without elastic") << false << "3@10"
                                     << "3@20"
                                     << "rejoin: a replica rejoins an elastic run (give --elastic)";
    QTest::newRow("not after the failure")
        << true << "3@10"
        << "3@10"
        << "rejoin: step 10 is not after the failure's (allowed: 11..30)";
    QTest::newRow("past the run") << true << "3@10"
                                  << "3@31"
                                  << "rejoin: step 31 is not after the failure's (allowed: 11..30)";
    QTest::newRow("a rank that never failed")
        << true << "3@10"
        << "2@20"
        << "rejoin: rank 2 never failed (allowed: 3, the --fail rank)";
    QTest::newRow("no failure")
        << true << "none"
        << "2@20"
        << "rejoin: rank 2 never failed (allowed: the rank of --fail RANK@STEP)";
    QTest::newRow("malformed")
        << true << "3@10"
        << "3"
        << "rejoin: '3' is not RANK@STEP (allowed: none, or RANK@STEP: the --fail rank, and a step "
           "after the failure's, e.g. 3@20)";
  }
  void rejoinRefused() {
    QFETCH(bool, elastic);
    QFETCH(QString, fail);
    QFETCH(QString, rejoin);
    QFETCH(QString, line);
    RunConfig c = base();
    c.steps = 30;
    c.elastic = elastic;
    c.fail = fail.toStdString();
    c.rejoin = rejoin.toStdString();
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), line);
  }

  // --fail 3@10 --rejoin 3@20: 4 ranks, then 3 from step 10, then 4 again from step 20.
  // In 16 bits the heal also carries the fp32 master copy and fp16's loss scale: a replica that
  // took its master from its 16-bit parameters would update from another point than its peers.
  void rejoinHealsFromAPeer_data() {
    QTest::addColumn<int>("zero");
    QTest::addColumn<int>("precision");
    QTest::newRow("sync") << 0 << int(Dtype::Fp32);
    QTest::newRow("ZeRO-1") << 1 << int(Dtype::Fp32);
    QTest::newRow("sync bf16") << 0 << int(Dtype::Bf16);
    QTest::newRow("ZeRO-1 bf16") << 1 << int(Dtype::Bf16);
    QTest::newRow("sync fp16") << 0 << int(Dtype::Fp16);
  }
  void rejoinHealsFromAPeer() {
    QFETCH(int, zero);
    QFETCH(int, precision);
    const int threadsBefore = threadCount();
    RunConfig c = base();
    c.steps = 25;
    c.zero = zero;
    c.precision = Dtype(precision);
    c.fail = "3@10";
    c.elastic = true;
    c.rejoin = "3@20";
    std::vector<double> elastic;
    std::vector<Trainer::ElasticEvent> events;
    TrainingState end;
    {
      Trainer t(c);
      for (int i = 0; i < c.steps; ++i) {
        const StepMetrics m = t.step();
        const int world = m.step < 10 ? 4 : m.step < 20 ? 3 : 4;
        QCOMPARE(int(m.ranks.size()), world);
        QCOMPARE(m.world.value_or(0), world);  // the step line says it
        elastic.push_back(m.loss);
        if (m.step == 20) {
          // The heal copied the peer's parameters at the step's start, and every replica then
          // made the same update: equal parameters stay equal, a fresh replica's would not.
          const std::vector<std::vector<float>> held = replicaParameters(t);
          QCOMPARE(int(held.size()), 4);
          for (int r = 1; r < 4; ++r)
            QVERIFY2(held[size_t(r)] == held[0], qPrintable(QString("rank %1").arg(r)));
        }
      }
      QCOMPARE(t.config().ranks, 4);
      events = t.elasticEvents();
      const std::vector<std::vector<float>> held = replicaParameters(t);
      for (int r = 1; r < 4; ++r) QVERIFY(held[size_t(r)] == held[0]);
      end = t.saveState();
    }
    QCOMPARE(threadCount(), threadsBefore);  // every world's threads ended
    QCOMPARE(events.size(), size_t(2));
    QCOMPARE(events[1].step, int64_t(20));
    QCOMPARE(events[1].rejoinedRank, 3);
    QCOMPARE(events[1].failedRank, -1);
    QCOMPARE(events[1].ranksBefore, 3);
    QCOMPARE(events[1].ranksAfter, 4);

    // The reference: 4 ranks to step 9, 3 ranks resumed to step 19, 4 ranks resumed to the end.
    RunConfig four = base();
    four.zero = zero;
    four.steps = c.steps;
    four.precision = c.precision;
    RunConfig three = four;
    three.ranks = 3;
    std::vector<double> reference;
    TrainingState state;
    for (const auto& [config, until] : {std::pair{four, 9}, {three, 19}, {four, c.steps}}) {
      Trainer t(config);
      if (until > 9) t.loadState(state);
      while (t.stepsDone() < until) reference.push_back(t.step().loss);
      state = t.saveState();
    }
    compareLosses(elastic, reference);
    QCOMPARE(end.params.size(), state.params.size());
    for (size_t i = 0; i < end.params.size(); ++i)
      QVERIFY2(std::abs(end.params[i] - state.params[i]) <= 1e-5,
               qPrintable(QString("parameter %1").arg(i)));
    QCOMPARE(end.master.size(), state.master.size());
    QCOMPARE(end.master.empty(), c.precision == Dtype::Fp32);
    for (size_t i = 0; i < end.master.size(); ++i)
      QVERIFY2(std::abs(end.master[i] - state.master[i]) <= 1e-5,
               qPrintable(QString("master %1").arg(i)));
    QCOMPARE(end.lossScale.scale, state.lossScale.scale);
    QCOMPARE(end.lossScale.skipped, state.lossScale.skipped);
  }
};

QTEST_GUILESS_MAIN(TstElastic)
#include "tst_elastic.moc"
