// Elastic data parallelism (--elastic, train/elastic.cpp): 4 thread ranks with --fail 3@10 go on
// as 3 and complete their steps; from the failed step on, their losses equal those of a 3-rank
// run resumed from the state after step 9 (1e-5), and the same batches are trained; no thread is
// left behind. Without --elastic the failure ends the run (tst_faults). Run: ctest -R tst_elastic
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
};

QTEST_GUILESS_MAIN(TstElastic)
#include "tst_elastic.moc"
