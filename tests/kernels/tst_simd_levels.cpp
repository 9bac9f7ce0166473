// Every dispatched float kernel (cpu/dispatch.h) at every vector level this CPU has, against its
// scalar reference: attention (whole and blockwise), exp, LayerNorm, bias, GELU, the loss, the
// optimizers, the SIMD GEMM rung, the all-reduce's sum; and PARALAB_SIMD's refusals.
// Run: ctest -R tst_simd_levels
#include <QProcess>
#include <QtTest>
#include <cmath>
#include <random>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/layers.h"
#include "cpu/optim.h"
#include "simd_check.h"

using namespace paralab::kernels;
using namespace paralab::kernels::test;

class TstSimdLevels : public QObject {
  Q_OBJECT
 private slots:
  void init() { m_start = simdLevel(); }
  void cleanup() { QVERIFY(setSimdLevel(m_start)); }
  void levelNames();
  void refusesLevelsAboveTheCpu();
  void environmentSetting();
  void expErrorBound();
  void attention_data();
  void attention();
  void attentionBlocks();
  void layernormAndBias();
  void gelu();
  void fusedBiasGelu();
  void softmaxCrossEntropy();
  void optimizers();
  void gemmSimdRung();

 private:
  SimdLevel m_start = SimdLevel::Baseline;
};

void TstSimdLevels::levelNames() {
  for (SimdLevel l : {SimdLevel::Baseline, SimdLevel::Avx2, SimdLevel::Avx512}) {
    SimdLevel parsed;
    QVERIFY(simdLevelFromName(simdLevelName(l), &parsed));
    QCOMPARE(parsed, l);
  }
  SimdLevel unused;
  QVERIFY(!simdLevelFromName("sse9", &unused));
  QVERIFY(!simdLevelFromName("", &unused));
  QCOMPARE(simdWidthFloats(SimdLevel::Avx512), 16);
  QCOMPARE(simdWidthFloats(SimdLevel::Avx2), 8);
  QCOMPARE(simdWidthFloats(SimdLevel::Baseline), 4);
}

void TstSimdLevels::refusesLevelsAboveTheCpu() {
  QVERIFY(simdLevel() <= simdLevelCpu());
  for (int l = int(simdLevelCpu()) + 1; l <= int(SimdLevel::Avx512); ++l) {
    QVERIFY(!setSimdLevel(SimdLevel(l)));
    QCOMPARE(simdLevel(), m_start);
  }
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    QCOMPARE(simdLevel(), l);
  }
}

void TstSimdLevels::environmentSetting() {
  // This program run again with PARALAB_SIMD set: a value that is not a level stops it at start
  // with one line naming the setting and exit code 2; the baseline level is always accepted.
  auto runWith = [](const QString& value, QString* err) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PARALAB_SIMD", value);
    p.setProcessEnvironment(env);
    p.start(QCoreApplication::applicationFilePath(), {"levelNames"});
    if (!p.waitForFinished(60000)) return -1;
    *err = QString::fromLocal8Bit(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  };
  QString err;
  QCOMPARE(runWith("sse9", &err), 2);
  QVERIFY2(err.contains("PARALAB_SIMD") && err.contains("baseline, avx2, avx512"), qPrintable(err));
  QCOMPARE(runWith("baseline", &err), 0);
  if (simdLevelCpu() < SimdLevel::Avx512) {
    QCOMPARE(runWith("avx512", &err), 2);
    QVERIFY2(err.contains("PARALAB_SIMD"), qPrintable(err));
  }
}

void TstSimdLevels::expErrorBound() {
  // The kernels' own exp (softmax, GELU) within 4 ulp (relative 4 * 2^-23 = 4.8e-7) of e^x in
  // double over the range the softmax uses (x <= 0) and GELU's tanh uses (|x| up to 80).
  const int n = 200001;
  Floats x(n);
  for (int i = 0; i < n; ++i) x[i] = -80.f + 160.f * float(i) / float(n - 1);
  checkExpRelative(x, 4.8e-7);
}

void TstSimdLevels::attention_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("NH");
  QTest::addColumn<int>("hs");
  QTest::newRow("gpt default shape") << 2 << 64 << 4 << 32;
  QTest::newRow("odd sizes") << 3 << 13 << 3 << 5;
  QTest::newRow("one token") << 2 << 1 << 2 << 8;
  QTest::newRow("wide heads") << 1 << 37 << 2 << 67;
}

void TstSimdLevels::attention() {
  // Probabilities, output and dqkv against the scalar loops; the sums' order differs (lanes),
  // so a few fp32 roundings of values of size ~1: 1e-5 relative (the bounds
  // tst_attention_blocks uses for float against float).
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, NH);
  QFETCH(int, hs);
  const int C = NH * hs;
  std::mt19937 gen(B * 1000 + T);
  const Floats qkv = randomFloats((size_t)B * T * 3 * C, gen, 1.5f);
  const Floats dout = randomFloats((size_t)B * T * C, gen);
  Floats wantOut((size_t)B * T * C), wantAtt((size_t)B * NH * T * T), wantD(qkv.size()), scratch(T);
  reference::attention_forward(wantOut.data(), wantAtt.data(), qkv.data(), B, T, C, NH);
  reference::attention_backward(wantD.data(), scratch.data(), dout.data(), qkv.data(),
                                wantAtt.data(), B, T, C, NH);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats out(wantOut.size(), NAN), att(wantAtt.size(), NAN), d(wantD.size(), NAN);
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    checkClose(att, wantAtt, 1e-5, "att");
    checkClose(out, wantOut, 1e-5, "out");
    attention_probs(att.data(), qkv.data(), B, T, C, NH);
    checkClose(att, wantAtt, 1e-5, "attention_probs");
    attention_backward(d.data(), scratch.data(), dout.data(), qkv.data(), wantAtt.data(), B, T, C,
                       NH);
    checkClose(d, wantD, 3e-5, "dqkv");
  }
}

void TstSimdLevels::attentionBlocks() {
  // A query chunk (positions 20..36) against two K/V blocks: one it sees in part (the rows of
  // early queries are partly masked) and its own diagonal; forward state, then the gradients.
  const int B = 2, NH = 2, hs = 19, C = NH * hs, q0 = 20, Tq = 17;
  const int k0s[] = {9, 20}, Tks[] = {19, 17};
  std::mt19937 gen(8);
  const Floats q = randomFloats((size_t)B * Tq * C, gen), dout = randomFloats(q.size(), gen);
  std::vector<Floats> ks, vs;
  for (int Tk : Tks) {
    ks.push_back(randomFloats((size_t)B * Tk * C, gen));
    vs.push_back(randomFloats((size_t)B * Tk * C, gen));
  }
  struct State {
    Floats o, m, l, dq;
    std::vector<Floats> dk, dv;
  };
  const size_t rows = (size_t)B * NH * Tq;
  auto run = [&](bool useReference) {
    State s{Floats(q.size()), Floats(rows), Floats(rows), Floats(q.size(), 0.f), {}, {}};
    Floats scratch(64), out(q.size()), lse(rows), D(rows);
    attention_blocks_init(s.o.data(), s.m.data(), s.l.data(), B, Tq, NH, hs);
    for (int blk = 0; blk < 2; ++blk) {
      auto fwd =
          useReference ? reference::attention_block_forward<float> : attention_block_forward<float>;
      fwd(s.o.data(), s.m.data(), s.l.data(), scratch.data(), q.data(), C, ks[blk].data(),
          vs[blk].data(), C, B, NH, hs, q0, Tq, k0s[blk], Tks[blk]);
    }
    attention_blocks_finish(out.data(), lse.data(), s.o.data(), s.m.data(), s.l.data(), B, Tq, NH,
                            hs);
    attention_blocks_delta(D.data(), out.data(), dout.data(), B, Tq, NH, hs);
    for (int blk = 0; blk < 2; ++blk) {
      s.dk.push_back(Floats(ks[blk].size(), 0.f));
      s.dv.push_back(Floats(vs[blk].size(), 0.f));
      auto bwd = useReference ? reference::attention_block_backward<float>
                              : attention_block_backward<float>;
      bwd(s.dq.data(), s.dk[blk].data(), s.dv[blk].data(), dout.data(), lse.data(), D.data(),
          q.data(), C, ks[blk].data(), vs[blk].data(), C, B, NH, hs, q0, Tq, k0s[blk], Tks[blk]);
    }
    s.o = out;
    s.m = lse;
    return s;
  };
  const State want = run(true);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    const State got = run(false);
    checkClose(got.o, want.o, 1e-5, "blockwise out");
    checkClose(got.m, want.m, 1e-5, "blockwise lse");
    checkClose(got.dq, want.dq, 3e-5, "blockwise dq");
    for (int blk = 0; blk < 2; ++blk) {
      checkClose(got.dk[blk], want.dk[blk], 3e-5, "blockwise dk");
      checkClose(got.dv[blk], want.dv[blk], 3e-5, "blockwise dv");
    }
  }
}

void TstSimdLevels::layernormAndBias() {
  const int rows = 7, cols = 133;  // not a multiple of any width: the loops' tails run too
  std::mt19937 gen(3);
  const Floats x = randomFloats((size_t)rows * cols, gen, 2.f), dy = randomFloats(x.size(), gen);
  const Floats gamma = randomFloats(cols, gen), beta = randomFloats(cols, gen);
  Floats wy(x.size()), wm(rows), wr(rows), wdx(x.size()), wdg(cols, 0.5f), wdb(cols, 0.25f);
  reference::layernorm_forward(wy.data(), wm.data(), wr.data(), x.data(), gamma.data(), beta.data(),
                               rows, cols);
  reference::layernorm_backward(wdx.data(), wdg.data(), wdb.data(), dy.data(), x.data(), wm.data(),
                                wr.data(), gamma.data(), rows, cols);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats y(x.size()), m(rows), r(rows), dx(x.size()), dg(cols, 0.5f), db(cols, 0.25f);
    layernorm_forward(y.data(), m.data(), r.data(), x.data(), gamma.data(), beta.data(), rows,
                      cols);
    checkClose(y, wy, 1e-5, "layernorm y");
    checkClose(m, wm, 1e-5, "layernorm mean");
    checkClose(r, wr, 1e-5, "layernorm rstd");
    layernorm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), wm.data(), wr.data(),
                       gamma.data(), rows, cols);
    checkClose(dx, wdx, 1e-5, "layernorm dx");
    checkClose(dg, wdg, 1e-5, "layernorm dgamma (accumulated)");
    checkClose(db, wdb, 1e-5, "layernorm dbeta (accumulated)");
    Floats by = x, bg = wdg;  // bias: the same adds in the same order, so exactly equal
    Floats wby = x, wbg = wdg;
    reference::bias_add(wby.data(), beta.data(), rows, cols);
    reference::bias_backward(wbg.data(), dy.data(), rows, cols);
    bias_add(by.data(), beta.data(), rows, cols);
    bias_backward(bg.data(), dy.data(), rows, cols);
    QCOMPARE(by, wby);
    QCOMPARE(bg, wbg);
  }
}

void TstSimdLevels::gelu() {
  // The kernels' tanh against std::tanh, both in float: absolute 2e-6 on outputs of size up to
  // 10, as tst_layers_gradcheck's fastFloatGeluMatchesDouble has against double. gelu' gets 3e-6
  // (|dy| <= 1): near x = -5, 1 + e^(2u) rounds to 1 and the fast tanh gives -1, so its gelu' is
  // 0 where the true one is 2e-6, and std::tanh in float is itself a rounding away.
  const int n = 20001;
  Floats x(n), dy(n), wy(n), wdx(n);
  std::mt19937 gen(4);
  for (int i = 0; i < n; ++i) x[i] = -10.f + 20.f * float(i) / float(n - 1);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (float& d : dy) d = unit(gen);
  reference::gelu_forward(wy.data(), x.data(), n);
  reference::gelu_backward(wdx.data(), x.data(), dy.data(), n);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats y(n), dx(n);
    gelu_forward(y.data(), x.data(), n);
    gelu_backward(dx.data(), x.data(), dy.data(), n);
    checkClose(y, wy, 2e-6, "gelu");
    checkClose(dx, wdx, 3e-6, "gelu'");
  }
}

void TstSimdLevels::fusedBiasGelu() {
  // The fused passes against the scalar reference (tolerances as gelu's), and bit for bit
  // against the two kernels they fuse at the same level.
  const int rows = 37, cols = 133;
  const long n = long(rows) * cols;
  std::mt19937 gen(6);
  const Floats h0 = randomFloats(size_t(n), gen, 3.f);
  Floats dy(static_cast<size_t>(n));  // |dy| <= 1, as gelu()'s tolerances assume
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (float& d : dy) d = unit(gen);
  const Floats b = randomFloats(cols, gen);
  Floats wh = h0, wg(static_cast<size_t>(n)), wdx(static_cast<size_t>(n)), wdb(cols, 0.5f);
  reference::bias_add(wh.data(), b.data(), rows, cols);
  reference::gelu_forward(wg.data(), wh.data(), n);
  reference::gelu_backward(wdx.data(), wh.data(), dy.data(), n);
  reference::bias_backward(wdb.data(), wdx.data(), rows, cols);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats h = h0, g(static_cast<size_t>(n));
    bias_gelu_forward(h.data(), g.data(), b.data(), rows, cols);
    QCOMPARE(h, wh);  // one add per entry, as the reference
    checkClose(g, wg, 2e-6, "bias + gelu");
    Floats uh = h0, ug(static_cast<size_t>(n));
    bias_add(uh.data(), b.data(), rows, cols);
    gelu_forward(ug.data(), uh.data(), n);
    QCOMPARE(g, ug);
    Floats dx = dy, db(cols, 0.5f);  // dx in place of dy, as the GPT passes them
    gelu_backward_bias(dx.data(), db.data(), h.data(), dx.data(), rows, cols);
    checkClose(dx, wdx, 3e-6, "gelu' with the bias gradient");
    checkClose(db, wdb, 1e-5 * rows, "bias gradient after gelu'");
    Floats udx(static_cast<size_t>(n)), udb(cols, 0.5f);
    gelu_backward(udx.data(), h.data(), dy.data(), n);
    bias_backward(udb.data(), udx.data(), rows, cols);
    QCOMPARE(dx, udx);
    QCOMPARE(db, udb);
  }
}

void TstSimdLevels::softmaxCrossEntropy() {
  // The loss to 1e-6 relative (float exp and sum against double), dlogits to 1e-7 absolute
  // (entries are probabilities / 9, a few fp32 roundings of values below 0.12).
  const int rows = 9, classes = 67;
  std::mt19937 gen(9);
  const Floats z = randomFloats((size_t)rows * classes, gen, 3.f);
  std::vector<int> labels(rows);
  for (int r = 0; r < rows; ++r) labels[r] = (r * 31) % classes;
  Floats want(z.size());
  const double wantLoss =
      reference::softmax_xent(want.data(), z.data(), labels.data(), rows, classes, 9.0);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats got(z.size());
    const double loss = softmax_xent(got.data(), z.data(), labels.data(), rows, classes, 9.0);
    QVERIFY2(std::abs(loss - wantLoss) <= 1e-6 * wantLoss,
             qPrintable(QString("loss %1 vs %2").arg(loss).arg(wantLoss)));
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - want[i]) <= 1e-7, qPrintable(QString("dlogits[%1] at %2: %3 vs %4")
                                                                  .arg(i)
                                                                  .arg(simdLevelName(l))
                                                                  .arg(got[i])
                                                                  .arg(want[i])));
    Floats inPlace = z;  // dlogits over the logits themselves, as the engine may pass them
    softmax_xent(inPlace.data(), inPlace.data(), labels.data(), rows, classes, 9.0);
    QCOMPARE(inPlace, got);
  }
}

void TstSimdLevels::optimizers() {
  // Elementwise: the same operations per element, FMA contraction the only difference.
  const long n = 1003;
  std::mt19937 gen(5);
  const Floats g = randomFloats(n, gen), p0 = randomFloats(n, gen), v0 = randomFloats(n, gen);
  Floats wp = p0, wm(n, 0.f), wv(n, 0.f);
  for (long t = 1; t <= 3; ++t)
    reference::adam_update(wp.data(), wm.data(), wv.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f,
                           t);
  Floats sp = p0, mp = p0, mv = v0;
  reference::sgd_update(sp.data(), g.data(), n, 0.1f);
  reference::momentum_update(mp.data(), mv.data(), g.data(), n, 0.1f, 0.9f);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    Floats p = p0, m(n, 0.f), v(n, 0.f);
    for (long t = 1; t <= 3; ++t)
      adam_update(p.data(), m.data(), v.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, t);
    checkClose(p, wp, 1e-6, "adam p");
    checkClose(m, wm, 1e-6, "adam m");
    checkClose(v, wv, 1e-6, "adam v");
    Floats s = p0, q = p0, qv = v0;
    sgd_update(s.data(), g.data(), n, 0.1f);
    momentum_update(q.data(), qv.data(), g.data(), n, 0.1f, 0.9f);
    checkClose(s, sp, 1e-6, "sgd p");
    checkClose(q, mp, 1e-6, "momentum p");
    checkClose(qv, mv, 1e-6, "momentum v");
    Floats sum(n);
    vec().addArrays(sum.data(), p0.data(), g.data(), n);
    for (long i = 0; i < n; ++i) QCOMPARE(sum[i], p0[i] + g[i]);  // one rounding: exact
  }
}

void TstSimdLevels::gemmSimdRung() {
  // The SIMD rung against the naive reference, every transpose and beta 0 / 1 / other.
  const int M = 9, N = 37, K = 21;
  std::mt19937 gen(6);
  const Floats A = randomFloats((size_t)M * K, gen), B = randomFloats((size_t)K * N, gen);
  const Floats C0 = randomFloats((size_t)M * N, gen);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    for (bool tA : {false, true})
      for (bool tB : {false, true})
        for (float beta : {0.f, 1.f, 0.5f}) {
          Floats want = C0, got = C0;
          const int lda = tA ? M : K, ldb = tB ? K : N;
          gemm_naive<float>(tA, tB, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, want.data(),
                            N);
          gemm_simd(tA, tB, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, got.data(), N);
          checkClose(got, want, 1e-5, "gemm_simd");
        }
  }
}

QTEST_GUILESS_MAIN(TstSimdLevels)
#include "tst_simd_levels.moc"
