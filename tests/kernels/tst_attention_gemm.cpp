// Attention through the GEMM (cpu/attention_gemm.h): whole and blockwise, with every rung of the
// CPU GEMM ladder at every vector level, against the scalar reference; that only the causal
// blocks on and below the diagonal are multiplied; and the kernels' exp over its whole range,
// large negative inputs included. Run: ctest -R tst_attention_gemm
#include <QtTest>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "cpu/attention_gemm.h"
#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "simd_check.h"

using namespace paralab::kernels;
using namespace paralab::kernels::test;

namespace {

// A GEMM that counts the multiply-adds (M N K) it is asked for, then runs the reference.
double g_multiplyAdds = 0;
void countingGemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                  int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  g_multiplyAdds += double(M) * N * K;
  gemm_naive<float>(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

class TstAttentionGemm : public QObject {
  Q_OBJECT
 private slots:
  void init() { m_start = simdLevel(); }
  void cleanup() { QVERIFY(setSimdLevel(m_start)); }
  void expBoundIncludingLargeNegatives();
  void wholeAttentionEveryRungEveryLevel();
  void blocksAboveTheDiagonalAreNotMultiplied();
  void blockwiseEveryRungEveryLevel();

 private:
  SimdLevel m_start = SimdLevel::Baseline;
};

void TstAttentionGemm::expBoundIncludingLargeNegatives() {
  // The bound: for x in [-87, 88] (results normal floats) within 4 ulp, relative 4 * 2^-23 =
  // 4.8e-7, of e^x; below -87, -inf included, a result in [0, e^-87] (e^-87 = 1.65e-38), so an
  // absolute error under 1.7e-38: what a masked or far-below-the-maximum score contributes.
  const int n = 400001;
  Floats x(n);
  for (int i = 0; i < n; ++i) x[i] = -87.f + 175.f * float(i) / float(n - 1);
  checkExpRelative(x, 4.8e-7);
  Floats xNeg;
  for (float v = -87.f; v > -1e5f; v *= 1.01f) xNeg.push_back(v);
  xNeg.push_back(-std::numeric_limits<float>::max());
  xNeg.push_back(-std::numeric_limits<float>::infinity());
  Floats yNeg(xNeg.size());
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    vec().expArray(yNeg.data(), xNeg.data(), long(xNeg.size()));
    for (size_t i = 0; i < xNeg.size(); ++i)
      QVERIFY2(
          yNeg[i] >= 0.f && yNeg[i] <= 1.7e-38f,
          qPrintable(QString("exp(%1) at %2: %3").arg(xNeg[i]).arg(simdLevelName(l)).arg(yNeg[i])));
  }
}

void TstAttentionGemm::wholeAttentionEveryRungEveryLevel() {
  // T = 100: three whole query blocks and a partial one, so blocks meet off the diagonal.
  const int B = 2, T = 100, NH = 2, hs = 24, C = NH * hs;
  std::mt19937 gen(39);
  const Floats qkv = randomFloats((size_t)B * T * 3 * C, gen, 1.5f);
  const Floats dout = randomFloats((size_t)B * T * C, gen);
  Floats wantOut((size_t)B * T * C), wantAtt((size_t)B * NH * T * T), wantD(qkv.size()), scratch(T);
  reference::attention_forward(wantOut.data(), wantAtt.data(), qkv.data(), B, T, C, NH);
  reference::attention_backward(wantD.data(), scratch.data(), dout.data(), qkv.data(),
                                wantAtt.data(), B, T, C, NH);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    for (const GemmKernel& rung : gemm_kernels()) {
      const QString what = QString("%1 ").arg(rung.name);
      Floats out(wantOut.size(), NAN), att(wantAtt.size(), NAN), d(wantD.size(), NAN);
      attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, rung.fn);
      checkClose(att, wantAtt, 1e-5, what + "att");
      checkClose(out, wantOut, 1e-5, what + "out");
      // The future has probability exactly 0 (the masked entries are set, not left over).
      for (int t = 0; t < T; ++t)
        for (int t2 = t + 1; t2 < T; ++t2) QCOMPARE(att[(size_t)t * T + t2], 0.f);
      attention_backward(d.data(), scratch.data(), dout.data(), qkv.data(), wantAtt.data(), B, T, C,
                         NH, rung.fn);
      checkClose(d, wantD, 3e-5, what + "dqkv");
    }
  }
}

void TstAttentionGemm::blocksAboveTheDiagonalAreNotMultiplied() {
  // The forward's GEMMs (S = Q K^T, O = P V) cover the query blocks' rows against the keys up to
  // each block's last row: 2 hs sum_I R_I n_I multiply-adds per sequence and head, about
  // T (T + R) / 2 score entries of the T^2 square. The backward's four products the same, twice.
  const int B = 1, T = 256, NH = 2, hs = 16, C = NH * hs, R = kAttentionRowBlock;
  std::mt19937 gen(40);
  const Floats qkv = randomFloats((size_t)B * T * 3 * C, gen);
  const Floats dout = randomFloats((size_t)B * T * C, gen);
  Floats out((size_t)B * T * C), att((size_t)B * NH * T * T), d(qkv.size()), scratch(T);
  double blocks = 0;  // sum over query blocks of rows * keys seen
  for (int i0 = 0; i0 < T; i0 += R)
    blocks += double(std::min(R, T - i0)) * (i0 + std::min(R, T - i0));
  const double square = double(T) * T;
  g_multiplyAdds = 0;
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, countingGemm);
  QCOMPARE(g_multiplyAdds, 2.0 * B * NH * hs * blocks);
  QVERIFY(blocks <= 0.57 * square);  // (T + R) / 2T of the square
  g_multiplyAdds = 0;
  attention_backward(d.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH,
                     countingGemm);
  QCOMPARE(g_multiplyAdds, 4.0 * B * NH * hs * blocks);
}

void TstAttentionGemm::blockwiseEveryRungEveryLevel() {
  // A query chunk at positions 40..109 (three query blocks, the last partial) against a K/V
  // block before it, one straddling it at an offset that is no multiple of the row block, and
  // one wholly in its future (skipped: 0 pairs, nothing touched).
  const int B = 2, NH = 2, hs = 20, C = NH * hs, q0 = 40, Tq = 70;
  const int k0s[] = {0, 45, 110}, Tks[] = {45, 53, 30};
  std::mt19937 gen(41);
  const Floats q = randomFloats((size_t)B * Tq * C, gen), dout = randomFloats(q.size(), gen);
  std::vector<Floats> ks, vs;
  for (int Tk : Tks) {
    ks.push_back(randomFloats((size_t)B * Tk * C, gen));
    vs.push_back(randomFloats((size_t)B * Tk * C, gen));
  }
  const size_t rows = (size_t)B * NH * Tq;
  struct State {
    Floats out, lse, dq;
    std::vector<Floats> dk, dv;
    std::vector<long> pairs;  // what each forward fold returned
  };
  auto run = [&](GemmFn gemm) {
    State s{Floats(q.size()), Floats(rows), Floats(q.size(), 0.f), {}, {}, {}};
    Floats o(q.size()), m(rows), l(rows), D(rows), scratch(64);
    attention_blocks_init(o.data(), m.data(), l.data(), B, Tq, NH, hs);
    for (int blk = 0; blk < 3; ++blk) {
      const long pairs =
          gemm ? attention_block_forward_gemm(o.data(), m.data(), l.data(), q.data(), C,
                                              ks[blk].data(), vs[blk].data(), C, B, NH, hs, q0, Tq,
                                              k0s[blk], Tks[blk], gemm)
               : reference::attention_block_forward(o.data(), m.data(), l.data(), scratch.data(),
                                                    q.data(), C, ks[blk].data(), vs[blk].data(), C,
                                                    B, NH, hs, q0, Tq, k0s[blk], Tks[blk]);
      s.pairs.push_back(pairs);
    }
    attention_blocks_finish(s.out.data(), s.lse.data(), o.data(), m.data(), l.data(), B, Tq, NH,
                            hs);
    attention_blocks_delta(D.data(), s.out.data(), dout.data(), B, Tq, NH, hs);
    for (int blk = 0; blk < 3; ++blk) {
      s.dk.push_back(Floats(ks[blk].size(), 0.f));
      s.dv.push_back(Floats(vs[blk].size(), 0.f));
      if (gemm)
        attention_block_backward_gemm(s.dq.data(), s.dk[blk].data(), s.dv[blk].data(), dout.data(),
                                      s.lse.data(), D.data(), q.data(), C, ks[blk].data(),
                                      vs[blk].data(), C, B, NH, hs, q0, Tq, k0s[blk], Tks[blk],
                                      gemm);
      else
        reference::attention_block_backward(
            s.dq.data(), s.dk[blk].data(), s.dv[blk].data(), dout.data(), s.lse.data(), D.data(),
            q.data(), C, ks[blk].data(), vs[blk].data(), C, B, NH, hs, q0, Tq, k0s[blk], Tks[blk]);
    }
    return s;
  };
  const State want = run(nullptr);
  QCOMPARE(attention_block_pairs(q0, Tq, k0s[2], Tks[2]), 0L);
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    for (const GemmKernel& rung : gemm_kernels()) {
      const QString what = QString("%1 blockwise ").arg(rung.name);
      const State got = run(rung.fn);
      for (int blk = 0; blk < 3; ++blk)
        QCOMPARE(got.pairs[blk], attention_block_pairs(q0, Tq, k0s[blk], Tks[blk]));
      checkClose(got.out, want.out, 1e-5, what + "out");
      checkClose(got.lse, want.lse, 1e-5, what + "lse");
      checkClose(got.dq, want.dq, 3e-5, what + "dq");
      for (int blk = 0; blk < 3; ++blk) {
        checkClose(got.dk[blk], want.dk[blk], 3e-5, what + "dk");
        checkClose(got.dv[blk], want.dv[blk], 3e-5, what + "dv");
      }
    }
  }
}

QTEST_GUILESS_MAIN(TstAttentionGemm)
#include "tst_attention_gemm.moc"
