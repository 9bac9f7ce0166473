// The whole MLP's analytic gradient against finite differences (fp32 model, so a looser
// tolerance than the double-precision layer checks), its parameter count, and determinism.
// Run: ctest -R tst_model
#include <QtTest>

#include <random>

#include "model/mlp.h"
#include "model_gradcheck.h"

using namespace paralab;

class TstModel : public QObject {
  Q_OBJECT
 private slots:
  void parameterCountMatchesLayout() {
    MlpShape s;  // 784 -> 128, 2 blocks, -> 10
    s.hidden = 128;
    s.layers = 2;
    // in_proj 784*128+128, per block 2*128 + 128*512+512 + 512*128+128, classifier 128*10+10
    const int64_t expected = 784 * 128 + 128 + 2 * (256 + 128 * 512 + 512 + 512 * 128 + 128) + 1290;
    QCOMPARE(s.parameterCount(), expected);
    Mlp m(s, 1, nullptr);
    QCOMPARE(m.params().numel(), expected);
  }

  void gradientMatchesFiniteDifferences() {
    MlpShape s;
    s.input = 12;
    s.hidden = 8;
    s.layers = 2;
    s.classes = 5;
    Mlp m(s, 7, nullptr);
    std::mt19937 gen(3);
    std::normal_distribution<float> d(0, 1);
    const int B = 6;
    std::vector<float> x(size_t(B) * s.input);
    for (float& v : x) v = d(gen);
    const int labels[B] = {0, 1, 2, 3, 4, 1};
    auto loss = [&] { return m.forwardLoss(x.data(), labels, B, B) / B; };
    loss();
    m.params().zeroGrads();
    m.backward();
    std::vector<float> analytic(m.params().grads().data(), m.params().grads().data() + m.params().numel());
    // Every parameter of every tensor (the model is tiny).
    const test::GradientCheck c = test::checkModelGradient(m.params(), analytic, loss);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(c.checked, m.params().numel());
  }

  void sameSeedSameModel() {
    MlpShape s;
    s.hidden = 16;
    Mlp a(s, 5, nullptr), b(s, 5, nullptr), c(s, 6, nullptr);
    const auto n = size_t(a.params().numel());
    QVERIFY(std::equal(a.params().params().data(), a.params().params().data() + n, b.params().params().data()));
    QVERIFY(!std::equal(a.params().params().data(), a.params().params().data() + n, c.params().params().data()));
  }
};

QTEST_GUILESS_MAIN(TstModel)
#include "tst_model.moc"
