// The whole MLP's analytic gradient against finite differences (fp32 model, so a looser
// tolerance than the double-precision layer checks), its parameter count, and determinism.
// Run: ctest -R tst_model
#include <QtTest>

#include <random>

#include "model/mlp.h"

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
    float* p = m.params().params().data();
    const float h = 1e-2f;
    int checked = 0;
    for (const ParamRef& ref : m.params().refs()) {
      for (int64_t i = ref.offset; i < ref.offset + ref.numel(); ++i) {
        const float saved = p[i];
        p[i] = saved + h;
        const double up = loss();
        p[i] = saved - h;
        const double down = loss();
        p[i] = saved;
        const double numeric = (up - down) / (2.0 * h);
        // fp32 activations: rounding ~1e-7 relative in the loss, divided by 2h, plus O(h^2).
        const double tol = 2e-3 + 2e-2 * std::abs(numeric);
        QVERIFY2(std::abs(numeric - analytic[size_t(i)]) <= tol,
                 qPrintable(QString("%1[%2]: numeric %3 analytic %4")
                                .arg(ref.name.c_str()).arg(i - ref.offset).arg(numeric).arg(analytic[size_t(i)])));
        ++checked;
      }
    }
    QCOMPARE(int64_t(checked), m.params().numel());
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
