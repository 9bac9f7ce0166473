// Optimizer steps against values computed by hand. Run: ctest -R tst_optimizer
#include <QtTest>

#include "optim/optimizer.h"

using namespace paralab;

class TstOptimizer : public QObject {
  Q_OBJECT
 private slots:
  void sgd() {
    OptimizerHyper h;
    h.lr = 0.1f;
    Optimizer o(OptimizerKind::Sgd, h, 2, nullptr);
    float p[2] = {1.0f, -2.0f};
    const float g[2] = {0.5f, -1.0f};
    o.step(p, g);
    QCOMPARE(p[0], 0.95f);  // 1 - 0.1 * 0.5
    QCOMPARE(p[1], -1.9f);  // -2 + 0.1 * 1
  }

  void momentum() {
    OptimizerHyper h;
    h.lr = 0.1f;
    h.momentum = 0.9f;
    MemoryTracker t;
    Optimizer o(OptimizerKind::Momentum, h, 1, &t);
    QCOMPARE(t.snapshot()[MemCategory::Optimizer], 4);
    float p[1] = {1.0f};
    const float g[1] = {1.0f};
    o.step(p, g);  // v = 1, p = 1 - 0.1 = 0.9
    QVERIFY(qFuzzyCompare(p[0], 0.9f));
    o.step(p, g);  // v = 0.9 + 1 = 1.9, p = 0.9 - 0.19 = 0.71
    QVERIFY(qFuzzyCompare(p[0], 0.71f));
  }

  void adam() {
    OptimizerHyper h;
    h.lr = 0.01f;
    MemoryTracker t;
    Optimizer o(OptimizerKind::Adam, h, 1, &t);
    QCOMPARE(t.snapshot()[MemCategory::Optimizer], 8);
    float p[1] = {1.0f};
    // Step 1 with g = 2: m = 0.2, v = 0.004; mhat = 2, vhat = 4; p -= 0.01 * 2 / (2 + 1e-8)
    const float g1[1] = {2.0f};
    o.step(p, g1);
    QVERIFY(qFuzzyCompare(p[0], 0.99f));
    // Step 2 with g = -1: m = 0.18 - 0.1 = 0.08, v = 0.003996 + 0.001 = 0.004996
    // mhat = 0.08 / 0.19 = 0.421053, vhat = 0.004996 / 0.001999 = 2.499250
    // p = 0.99 - 0.01 * 0.421053 / 1.580901 = 0.987337
    const float g2[1] = {-1.0f};
    o.step(p, g2);
    QVERIFY2(std::abs(p[0] - 0.987337f) < 2e-6f, qPrintable(QString::number(p[0], 'g', 9)));
  }

  void unknownNameIsAnError() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, optimizerKind("lamb"));
  }
};

QTEST_GUILESS_MAIN(TstOptimizer)
#include "tst_optimizer.moc"
