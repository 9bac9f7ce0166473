// Gradient check, in double precision, of every layer's backward against central finite
// differences of its forward: bias, GELU, LayerNorm, softmax cross-entropy, and the Linear
// (GEMM) formulas dW = x^T dy, dx = dy W^T. Run: ctest -R tst_layers_gradcheck
#include <QtTest>

#include <functional>
#include <random>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/layers.h"
#include "gradcheck.h"

using namespace paralab::kernels;
using namespace gradcheck;

class TstLayersGradcheck : public QObject {
  Q_OBJECT
 private slots:
  void gelu();
  void bias();
  void layernorm();
  void softmaxCrossEntropy();
  void linear();
  void fastFloatGeluMatchesDouble();
};

void TstLayersGradcheck::fastFloatGeluMatchesDouble() {
  // The fp32 GELU uses its own vectorised tanh; it must agree with the double reference to
  // within fp32 rounding (absolute 2e-6 on outputs of size up to 10).
  const int n = 20001;
  std::vector<float> xf(n), yf(n), dyf(n, 1.f), dxf(n);
  Vec xd(n), yd(n), dyd(n, 1.0), dxd(n);
  for (int i = 0; i < n; ++i) xd[i] = -10.0 + 20.0 * i / (n - 1), xf[i] = float(xd[i]);
  gelu_forward(yf.data(), xf.data(), n);
  gelu_forward(yd.data(), xd.data(), n);
  gelu_backward(dxf.data(), xf.data(), dyf.data(), n);
  gelu_backward(dxd.data(), xd.data(), dyd.data(), n);
  for (int i = 0; i < n; ++i) {
    QVERIFY2(std::abs(yf[i] - yd[i]) <= 2e-6 * std::max(1.0, std::abs(yd[i])),
             qPrintable(QString("gelu(%1): %2 vs %3").arg(xd[i]).arg(yf[i]).arg(yd[i])));
    QVERIFY2(std::abs(dxf[i] - dxd[i]) <= 2e-6,
             qPrintable(QString("gelu'(%1): %2 vs %3").arg(xd[i]).arg(dxf[i]).arg(dxd[i])));
  }
}

void TstLayersGradcheck::gelu() {
  std::mt19937 gen(1);
  const int n = 57;
  Vec x = randomVec(n, gen, 2.0), w = randomVec(n, gen), y(n), dx(n);
  auto loss = [&] { gelu_forward(y.data(), x.data(), n); return weighted(y, w); };
  gelu_backward(dx.data(), x.data(), w.data(), n);
  checkGradient(x, dx, loss, "gelu dx");
}

void TstLayersGradcheck::bias() {
  std::mt19937 gen(2);
  const int rows = 5, cols = 7;
  Vec b = randomVec(cols, gen), base = randomVec(rows * cols, gen), w = randomVec(rows * cols, gen);
  Vec db(cols, 0.0);
  auto loss = [&] { Vec y = base; bias_add(y.data(), b.data(), rows, cols); return weighted(y, w); };
  bias_backward(db.data(), w.data(), rows, cols);
  checkGradient(b, db, loss, "bias db");
}

void TstLayersGradcheck::layernorm() {
  std::mt19937 gen(3);
  const int rows = 4, cols = 9;
  Vec x = randomVec(rows * cols, gen, 3.0), gamma = randomVec(cols, gen), beta = randomVec(cols, gen);
  Vec w = randomVec(rows * cols, gen), y(rows * cols), mean(rows), rstd(rows);
  Vec dx(rows * cols), dgamma(cols, 0.0), dbeta(cols, 0.0);
  auto loss = [&] {
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, cols);
    return weighted(y, w);
  };
  loss();
  layernorm_backward(dx.data(), dgamma.data(), dbeta.data(), w.data(), x.data(), mean.data(),
                     rstd.data(), gamma.data(), rows, cols);
  checkGradient(x, dx, loss, "layernorm dx");
  checkGradient(gamma, dgamma, loss, "layernorm dgamma");
  checkGradient(beta, dbeta, loss, "layernorm dbeta");
}

void TstLayersGradcheck::softmaxCrossEntropy() {
  std::mt19937 gen(4);
  const int rows = 6, classes = 10;
  const double normalizer = 8;  // e.g. a global batch larger than this shard
  Vec z = randomVec(rows * classes, gen, 2.0), dz(rows * classes);
  const int labels[rows] = {0, 3, 9, 3, 5, 1};
  auto loss = [&] {
    Vec scratch(rows * classes);
    return softmax_xent(scratch.data(), z.data(), labels, rows, classes, normalizer) / normalizer;
  };
  const double sum = softmax_xent(dz.data(), z.data(), labels, rows, classes, normalizer);
  QVERIFY(sum > 0);
  checkGradient(z, dz, loss, "softmax_xent dlogits");
  // Uniform logits: the loss of each row is log(classes).
  Vec flat(rows * classes, 0.0);
  QVERIFY(std::abs(softmax_xent(dz.data(), flat.data(), labels, rows, classes, 1.0) - rows * std::log(10.0)) < 1e-12);
}

void TstLayersGradcheck::linear() {
  // y[B, out] = x[B, in] W[in, out]; the backward formulas the Linear layer uses.
  std::mt19937 gen(5);
  const int B = 3, in = 5, out = 4;
  Vec x = randomVec(B * in, gen), W = randomVec(in * out, gen), w = randomVec(B * out, gen);
  Vec y(B * out), dW(in * out, 0.0), dx(B * in);
  auto loss = [&] {
    gemm_vendor<double>(false, false, B, out, in, 1.0, x.data(), in, W.data(), out, 0.0, y.data(), out);
    return weighted(y, w);
  };
  gemm_vendor<double>(true, false, in, out, B, 1.0, x.data(), in, w.data(), out, 1.0, dW.data(), out);
  gemm_vendor<double>(false, true, B, in, out, 1.0, w.data(), out, W.data(), out, 0.0, dx.data(), in);
  checkGradient(W, dW, loss, "linear dW");
  checkGradient(x, dx, loss, "linear dx");
}

QTEST_GUILESS_MAIN(TstLayersGradcheck)
#include "tst_layers_gradcheck.moc"
