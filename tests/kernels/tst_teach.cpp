// The CPU teaching experiments run and measure something; the slowdown itself depends on the
// machine, so it is printed, not asserted. (The GPU ones are in tst_cuda_kernels.)
// Run: ctest -R tst_teach --output-on-failure -V
#include <QtTest>

#include "cpu/teach.h"

using namespace paralab::kernels;

class TstTeach : public QObject {
  Q_OBJECT
 private slots:
  void falseSharingRunsAndReports() {
    const FalseSharingResult r = false_sharing_experiment(2'000'000, 2, 3);
    QCOMPARE(r.threads, 2);
    QCOMPARE(r.increments, 2'000'000L);
    QVERIFY(r.packedSeconds > 0);
    QVERIFY(r.paddedSeconds > 0);
    qInfo("false sharing, 2 threads x 2M increments: packed %.2f ms, padded %.2f ms, packed/padded = %.2fx",
          1e3 * r.packedSeconds, 1e3 * r.paddedSeconds, r.slowdown());
  }
  void threadCountIsClamped() {
    QCOMPARE(false_sharing_experiment(1000, 0, 1).threads, 1);
    QCOMPARE(false_sharing_experiment(1000, 1, 1).threads, 1);
    QCOMPARE(false_sharing_experiment(1000, 99, 1).threads, 8);
  }
};

QTEST_GUILESS_MAIN(TstTeach)
#include "tst_teach.moc"
