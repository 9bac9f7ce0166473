// Gradient check, in double precision, of causal multi-head attention and of the token +
// position embedding against central finite differences of their forwards, plus the causal
// mask, the softmax rows and float against double. Run: ctest -R tst_attention_gradcheck
#include <QtTest>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention.h"
#include "cpu/embedding.h"
#include "gradcheck.h"

using namespace paralab::kernels;
using namespace gradcheck;

namespace {

// Compares two arrays of equal size; tol 0 means bit-for-bit.
void checkClose(const Vec& got, const Vec& want, double tol, const char* what) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    QVERIFY2(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])),
             qPrintable(QString("%1[%2]: %3, expected %4")
                            .arg(what)
                            .arg(i)
                            .arg(got[i], 0, 'g', 17)
                            .arg(want[i], 0, 'g', 17)));
}

}  // namespace

class TstAttentionGradcheck : public QObject {
  Q_OBJECT
 private slots:
  void attentionGradient_data() { shapes(); }
  void attentionGradient();
  void forwardMatchesDefinition_data() { shapes(); }
  void forwardMatchesDefinition();
  void causalMask_data() { shapes(); }
  void causalMask();
  void probabilityRows_data() { shapes(); }
  void probabilityRows();
  void probsEqualForwardAtt_data() { shapes(); }
  void probsEqualForwardAtt();
  void floatMatchesDouble_data() { shapes(); }
  void floatMatchesDouble();
  void embeddingGradient_data() { shapes(); }
  void embeddingGradient();

 private:
  // Batch B, sequence length T, width C, heads NH (head size C / NH from 8 down to 1).
  void shapes() {
    QTest::addColumn<int>("B");
    QTest::addColumn<int>("T");
    QTest::addColumn<int>("C");
    QTest::addColumn<int>("NH");
    QTest::newRow("B1 T1 C4 NH1") << 1 << 1 << 4 << 1;
    QTest::newRow("B1 T3 C4 NH2") << 1 << 3 << 4 << 2;
    QTest::newRow("B2 T3 C6 NH2") << 2 << 3 << 6 << 2;
    QTest::newRow("B1 T5 C8 NH4") << 1 << 5 << 8 << 4;
    QTest::newRow("B2 T5 C8 NH1") << 2 << 5 << 8 << 1;
    QTest::newRow("B2 T5 C4 NH4") << 2 << 5 << 4 << 4;
  }
};

#define PARALAB_SHAPE() \
  QFETCH(int, B);       \
  QFETCH(int, T);       \
  QFETCH(int, C);       \
  QFETCH(int, NH);      \
  const int seed = B * 1000 + T * 100 + C * 10 + NH;

void TstAttentionGradcheck::attentionGradient() {
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  Vec qkv = randomVec((size_t)B * T * 3 * C, gen), w = randomVec((size_t)B * T * C, gen);
  Vec out((size_t)B * T * C), att((size_t)B * NH * T * T);
  auto loss = [&] {
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return weighted(out, w);
  };
  loss();
  // NaN-filled: backward must overwrite every element of dqkv and never read scratch first.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Vec dqkv(qkv.size(), nan), scratch(T, nan);
  attention_backward(dqkv.data(), scratch.data(), w.data(), qkv.data(), att.data(), B, T, C, NH);
  checkGradient(qkv, dqkv, loss, "attention dqkv");
}

void TstAttentionGradcheck::forwardMatchesDefinition() {
  // softmax(q k^T / sqrt(hs) + M) v evaluated directly: the full T x T square, the future
  // masked with -inf, no max subtraction (the inputs are small enough not to overflow).
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  Vec qkv = randomVec((size_t)B * T * 3 * C, gen);
  Vec out((size_t)B * T * C), att((size_t)B * NH * T * T), want(out.size());
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  const int hs = C / NH;
  auto at = [&](int b, int t, int part, int h, int i) {
    return qkv[((size_t)b * T + t) * 3 * C + part * C + h * hs + i];
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        Vec e(T);
        double z = 0;
        for (int t2 = 0; t2 < T; ++t2) {
          double s = 0;
          for (int i = 0; i < hs; ++i) s += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          const double masked =
              t2 > t ? -std::numeric_limits<double>::infinity() : s / std::sqrt(double(hs));
          e[t2] = std::exp(masked);
          z += e[t2];
        }
        for (int i = 0; i < hs; ++i) {
          double o = 0;
          for (int t2 = 0; t2 < T; ++t2) o += e[t2] / z * at(b, t2, 2, h, i);
          want[((size_t)b * T + t) * C + h * hs + i] = o;
        }
      }
  checkClose(out, want, 1e-12, "attention out");
}

void TstAttentionGradcheck::causalMask() {
  // Replacing token t2's k and v (every head) must leave the outputs and att rows of the
  // tokens before it, and all of every other sequence, bit-for-bit unchanged; token t2's own
  // output must change (else the perturbation missed and the check proves nothing).
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen);
  Vec out0((size_t)B * T * C), att0((size_t)B * NH * T * T), out(out0.size()), att(att0.size());
  attention_forward(out0.data(), att0.data(), qkv.data(), B, T, C, NH);
  for (int b = 0; b < B; ++b)
    for (int t2 = 0; t2 < T; ++t2) {
      Vec changed = qkv;
      for (int c = C; c < 3 * C; ++c) changed[((size_t)b * T + t2) * 3 * C + c] += 1.0;
      attention_forward(out.data(), att.data(), changed.data(), B, T, C, NH);
      for (int bb = 0; bb < B; ++bb)
        for (int t = 0; t < T; ++t) {
          if (bb == b && t >= t2) continue;
          for (int c = 0; c < C; ++c) {
            const size_t i = ((size_t)bb * T + t) * C + c;
            QVERIFY2(
                out[i] == out0[i],
                qPrintable(
                    QString("seq %1 token %2 saw seq %3 token %4").arg(bb).arg(t).arg(b).arg(t2)));
          }
          for (int h = 0; h < NH; ++h)
            for (int k = 0; k < T; ++k) {
              const size_t i = (((size_t)bb * NH + h) * T + t) * T + k;
              QVERIFY2(att[i] == att0[i],
                       qPrintable(QString("att row %1 of seq %2 changed").arg(t).arg(bb)));
            }
        }
      bool moved = false;
      for (int c = 0; c < C; ++c)
        moved = moved || out[((size_t)b * T + t2) * C + c] != out0[((size_t)b * T + t2) * C + c];
      QVERIFY2(moved, "token t2's own output did not change");
    }
}

void TstAttentionGradcheck::probabilityRows() {
  // Each row of att is a distribution over the visible tokens: positive for t2 <= t, exactly
  // 0 for t2 > t, summing to 1 within double rounding (T <= 5 terms: 1e-14 is ample).
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen, 3.0);  // wide scores: peaked rows
  Vec att((size_t)B * NH * T * T, -1.0);
  attention_probs(att.data(), qkv.data(), B, T, C, NH);
  for (int row = 0; row < B * NH * T; ++row) {
    const int t = row % T;
    double sum = 0;
    for (int t2 = 0; t2 < T; ++t2) {
      const double p = att[(size_t)row * T + t2];
      if (t2 > t)
        QVERIFY2(
            p == 0.0,
            qPrintable(
                QString("row %1 gives future token %2 probability %3").arg(row).arg(t2).arg(p)));
      else
        QVERIFY2(
            p > 0.0,
            qPrintable(QString("row %1 gives token %2 probability %3").arg(row).arg(t2).arg(p)));
      sum += p;
    }
    QVERIFY2(std::abs(sum - 1.0) <= 1e-14,
             qPrintable(QString("row %1 sums to %2").arg(row).arg(sum, 0, 'g', 17)));
  }
}

void TstAttentionGradcheck::probsEqualForwardAtt() {
  // Recomputation before backward must give the very att the forward saved, bit for bit.
  PARALAB_SHAPE();
  std::mt19937 gen(seed);
  const Vec qkv = randomVec((size_t)B * T * 3 * C, gen);
  Vec out((size_t)B * T * C), att((size_t)B * NH * T * T, 7.0), again(att.size(), -7.0);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_probs(again.data(), qkv.data(), B, T, C, NH);
  checkClose(again, att, 0.0, "recomputed att");
}

void TstAttentionGradcheck::floatMatchesDouble() {
  // The same inputs (rounded to float first, so only the arithmetic differs). Tolerance: fp32
  // unit roundoff u = 2^-24 = 6e-8. Every output is a chain of <= 2 hs + 2 T + 4 <= 30 roundings
  // (score dot product, exp, row sum, weighted sum; backward likewise) over terms of size
  // <= ~16 (N(0,1) inputs, products of two): worst case 30 * 16 * 6e-8 = 3e-5. (Measured over
  // 200 seeds per row: at most 4e-7. A float-only 1e-4 relative error in the scores fails.)
  PARALAB_SHAPE();
  const double tol = 3e-5;
  std::mt19937 gen(seed);
  Vec qkv = randomVec((size_t)B * T * 3 * C, gen), dout = randomVec((size_t)B * T * C, gen);
  for (double& x : qkv) x = double(float(x));
  for (double& x : dout) x = double(float(x));
  const std::vector<float> qkvF(qkv.begin(), qkv.end()), doutF(dout.begin(), dout.end());
  Vec out(dout.size()), att((size_t)B * NH * T * T), dqkv(qkv.size()), scratch(T);
  std::vector<float> outF(out.size()), attF(att.size()), dqkvF(dqkv.size()), scratchF(T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  attention_forward(outF.data(), attF.data(), qkvF.data(), B, T, C, NH);
  attention_backward(dqkvF.data(), scratchF.data(), doutF.data(), qkvF.data(), attF.data(), B, T, C,
                     NH);
  checkClose(Vec(attF.begin(), attF.end()), att, tol, "float att");
  checkClose(Vec(outF.begin(), outF.end()), out, tol, "float out");
  checkClose(Vec(dqkvF.begin(), dqkvF.end()), dqkv, tol, "float dqkv");
}

void TstAttentionGradcheck::embeddingGradient() {
  // V = 7 token ids, maxT = T + 2 positions: some wte and wpe rows are unused (gradient 0),
  // and the last token repeats the first (its wte row collects twice).
  PARALAB_SHAPE();
  (void)NH;
  const int V = 7, maxT = T + 2;
  std::mt19937 gen(seed);
  std::vector<int> tokens((size_t)B * T);
  for (int& tok : tokens) tok = int(gen() % 5);
  tokens.back() = tokens.front();
  Vec wte = randomVec((size_t)V * C, gen), wpe = randomVec((size_t)maxT * C, gen);
  Vec w = randomVec((size_t)B * T * C, gen), out(w.size());
  auto loss = [&] {
    embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted(out, w);
  };
  loss();
  for (int r = 0; r < B * T; ++r)
    for (int c = 0; c < C; ++c)
      QCOMPARE(out[(size_t)r * C + c],
               wte[(size_t)tokens[r] * C + c] + wpe[(size_t)(r % T) * C + c]);
  // Accumulation (+=): start from a nonzero gradient and take it back off.
  const Vec wteBase = randomVec(wte.size(), gen), wpeBase = randomVec(wpe.size(), gen);
  Vec dwte = wteBase, dwpe = wpeBase;
  embedding_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
  for (size_t i = 0; i < dwte.size(); ++i) dwte[i] -= wteBase[i];
  for (size_t i = 0; i < dwpe.size(); ++i) dwpe[i] -= wpeBase[i];
  checkGradient(wte, dwte, loss, "embedding dwte");
  checkGradient(wpe, dwpe, loss, "embedding dwpe");
}

QTEST_GUILESS_MAIN(TstAttentionGradcheck)
#include "tst_attention_gradcheck.moc"
