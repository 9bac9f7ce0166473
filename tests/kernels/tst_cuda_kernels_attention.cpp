// A GPT's GPU kernels against the CPU: causal attention (probs, forward, backward), the tiled
// forward with its log-sum-exp, ring attention's blockwise kernels and strided copies, and the
// token + position embedding. Built twice from this file, as tst_cuda_kernels.cpp:
// tst_cuda_kernels_attention on the emulated GPU, tst_cuda_kernels_attention_gpu on a real one.
// Run: ctest -R tst_cuda_kernels_attention --output-on-failure
#include <QtTest>
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "cpu/embedding.h"
#include "cuda/attention.h"
#include "cuda/attention_blocks.h"
#include "cuda/device.h"
#include "device_compare.h"

using namespace paralab::kernels;
using namespace paralab::test;

namespace {

// The columns of an attention row: sequences, their length, the model width and its heads.
void attentionColumns() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("C");
  QTest::addColumn<int>("NH");
}

}  // namespace

class TstCudaKernelsAttention : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void attention_data();
  void attention();
  void attentionTiled_data();
  void attentionTiled();
  void attentionTiledRejectsLargeHeads();
  void attentionBlocks_data();
  void attentionBlocks();
  void stridedRows();
  void embedding();
};

void TstCudaKernelsAttention::initTestCase() {
  const GpuInfo gpu = cuda_query_devices();
  qInfo("device: %s", gpu.count ? gpu.firstName.c_str() : gpu.reason.c_str());
  REQUIRE_GPU();  // the whole suite, reported as skipped (tests/CMakeLists.txt)
}

// Causal multi-head attention (probs, forward, backward) against the CPU's float version on the
// same inputs. Rows: T = 1 (a token sees only itself: P = 1, dq = dk = 0), NH = hs = 1, T not a
// multiple of anything, several heads and sequences.
void TstCudaKernelsAttention::attention_data() {
  attentionColumns();
  for (auto [B, T, C, NH] :
       {std::array{1, 1, 1, 1}, std::array{2, 1, 8, 2}, std::array{2, 9, 1, 1},
        std::array{2, 17, 12, 3}, std::array{3, 33, 64, 4}, std::array{1, 64, 32, 1}})
    QTest::addRow("B=%d T=%d C=%d NH=%d", B, T, C, NH) << B << T << C << NH;
}

void TstCudaKernelsAttention::attention() {
  REQUIRE_GPU();
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, C);
  QFETCH(int, NH);
  const int hs = C / NH;
  const size_t rows = size_t(B) * T;
  const std::vector<float> qkv = randomVec(rows * 3 * C, 30, -2.f, 2.f),
                           dout = randomVec(rows * C, 31);
  std::vector<float> out(rows * C), att(size_t(B) * NH * T * T), dqkv(rows * 3 * C), scratch(T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
  // NaN in every output first: each kernel must write all of its elements, zeros included.
  Dev<float> dQkv(qkv), dOut(std::vector<float>(out.size(), NAN)),
      dAtt(std::vector<float>(att.size(), NAN)), dProbs(std::vector<float>(att.size(), NAN)),
      dDout(dout), dDqkv(std::vector<float>(dqkv.size(), NAN)),
      dScratch(std::vector<float>(size_t(B) * NH * T, NAN));
  attention_probs_cuda(dProbs.p, dQkv.p, B, T, C, NH);
  attention_forward_cuda(dOut.p, dAtt.p, dQkv.p, B, T, C, NH);
  // Error budget, worst case, u = 2^-24, |q|, |k|, |v| <= 2, |dout| <= 1. A score is a dot of
  // hs terms, |q_i k_i| <= 4, scaled by 1/sqrt(hs): off by <= 4 hs^1.5 u (summed in the same
  // order on both sides, but a GPU may fuse the multiply-adds), s - max by twice that. exp adds
  // ~2 ulp (CPU: double exp, GPU: expf), the row sum T u (CPU in double, GPU in float), the
  // normalisation 2 u. So one side's P is off by <= e = u (8 hs^1.5 + T + 8) relative to P <= 1,
  // and the two sides differ by <= 2e.
  const double u = 6e-8, hs15 = hs * std::sqrt(double(hs));
  const double e = u * (8 * hs15 + T + 8), tolP = 2 * e;
  const std::vector<float> probs = dProbs.get(), gotAtt = dAtt.get();
  expectNear(probs, att, tolP, 0, "attention probs");
  expectNear(gotAtt, att, tolP, 0, "attention att");
  for (int b = 0; b < B; ++b)  // the mask: exact zeros above the diagonal
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t)
        for (int t2 = t + 1; t2 < T; ++t2)
          QCOMPARE(gotAtt[((size_t(b) * NH + h) * T + t) * T + t2], 0.f);
  // out = sum_t2 P v, sum_t2 P = 1, |v| <= 2: P's error 2e, the sum's rounding 2 T u; both sides.
  expectNear(dOut.get(), out, 4 * (e + T * u), 0, "attention out");
  // The backward from the CPU's att, so that only the backward's own rounding is compared.
  Dev<float> dAttCpu(att);
  attention_backward_cuda(dDqkv.p, dScratch.p, dDout.p, dQkv.p, dAttCpu.p, B, T, C, NH);
  // |dO| <= 1, |v| <= 2: dP = dO . v has |dP| <= 2 hs and a rounding error <= 2 hs^2 u; D = sum
  // P dP adds T u 2 hs (the CPU sums it in double); so dS = P (dP - D) / sqrt(hs) is off by at
  // most P 2 hs u (2 hs + T + 4) / sqrt(hs). dq = sum_t2 dS k (|k| <= 2, sum_t2 P = 1) and the
  // rounding of that sum: <= 4 sqrt(hs) u (2 hs + 2 T + 4). dk sums over the queries t >= t2,
  // whose P[t, t2] add up to at most T - t2: up to T times dq's bound. dv = sum_t P dO, as out.
  // The two sides differ by twice that: 8 sqrt(hs) u T (2 hs + 2 T + 4). It is a worst case and
  // loose (the errors seen are a few ulps), but a wrong index or a lost term gives O(0.1 .. 1).
  const double tolD = 8 * std::sqrt(double(hs)) * u * T * (2 * hs + 2 * T + 4);
  const std::vector<float> gotD = dDqkv.get();
  expectNear(gotD, dqkv, tolD, 0, "attention dqkv");
  // The GPU's backward repeats bit for bit (no atomics): a second run gives the same dqkv.
  const std::vector<float> first = gotD;
  attention_backward_cuda(dDqkv.p, dScratch.p, dDout.p, dQkv.p, dAttCpu.p, B, T, C, NH);
  expectNear(dDqkv.get(), first, 0, 0, "attention dqkv again");
}

// The tiled forward (online softmax, no att) against the CPU's out, and its lse against the
// log-sum-exp of the scores computed in double. Rows: T = 1, T smaller than a 32-row tile, T a
// tile or two exactly, T one past a tile (a diagonal tile with one live row), T not a multiple
// of it over several tiles; hs = 8, 16, 32 and the limit 64; B and NH > 1.
void TstCudaKernelsAttention::attentionTiled_data() {
  attentionColumns();
  for (auto [B, T, C, NH] :
       {std::array{1, 1, 8, 1}, std::array{2, 5, 16, 2}, std::array{2, 32, 32, 2},
        std::array{2, 33, 64, 2}, std::array{3, 70, 48, 3}, std::array{1, 64, 96, 12},
        std::array{1, 100, 64, 1}})
    QTest::addRow("B=%d T=%d C=%d NH=%d hs=%d", B, T, C, NH, C / NH) << B << T << C << NH;
}

void TstCudaKernelsAttention::attentionTiled() {
  REQUIRE_GPU();
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, C);
  QFETCH(int, NH);
  const int hs = C / NH;
  const size_t rows = size_t(B) * T, heads = size_t(B) * NH;
  const std::vector<float> qkv = randomVec(rows * 3 * C, 32, -2.f, 2.f);
  std::vector<float> out(rows * C), att(heads * T * T);
  attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  // The reference lse per (b, h, t) row: log sum_{t2 <= t} exp(s_t2), the CPU's scores
  // q . k / sqrt(hs) in double, the row max subtracted before exp.
  std::vector<float> lse(heads * T);
  std::vector<double> s(static_cast<size_t>(T));  // one row's scores
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* q = &qkv[(size_t(b) * T + t) * 3 * C + size_t(h) * hs];
        double mx = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = &qkv[(size_t(b) * T + t2) * 3 * C + C + size_t(h) * hs];
          double dot = 0;
          for (int i = 0; i < hs; ++i) dot += double(q[i]) * k[i];
          s[size_t(t2)] = dot / std::sqrt(double(hs));
          mx = std::max(mx, s[size_t(t2)]);
        }
        double sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) sum += std::exp(s[size_t(t2)] - mx);
        lse[(size_t(b) * NH + h) * T + t] = float(mx + std::log(sum));
      }
  // NaN in every output first: the kernel must write all of out and lse.
  Dev<float> dQkv(qkv), dOut(std::vector<float>(out.size(), NAN)),
      dLse(std::vector<float>(lse.size(), NAN));
  attention_forward_tiled_cuda(dOut.p, dLse.p, dQkv.p, B, T, C, NH);
  const std::vector<float> gotOut = dOut.get(), gotLse = dLse.get();
  // Error budget (u, e as in attention()): the same scores and exps as the naive kernel, so out
  // gets the naive bound 4 (e + T u). The online softmax adds, per key tile, a rescale by alpha
  // (expf: ~2 ulp, and the product's rounding) of acc and l alike: a relative error <= 4 u per
  // tile on the older terms' weights, at most 2 (4 u tiles) |v| on out per side, 16 u tiles for
  // both. lse = m + log l: a score's error <= 4 hs^1.5 u + 4 sqrt(hs) u (the dot, the scale),
  // l's relative error (T + 4 + 4 tiles) u (the exps, the sums, the rescales), the rounding of
  // log and of the add (|lse| <= 4 sqrt(hs) + log T): below u (8 hs^1.5 + 2 T + 32).
  const double u = 6e-8, hs15 = hs * std::sqrt(double(hs)), tiles = (T + 31) / 32;
  const double e = u * (8 * hs15 + T + 8);
  const double tolOut = 4 * (e + T * u) + 16 * u * tiles, tolLse = u * (8 * hs15 + 2 * T + 32);
  expectNear(gotOut, out, tolOut, 0, "tiled attention out");
  expectNear(gotLse, lse, tolLse, 0, "tiled attention lse");
  double worstOut = 0, worstLse = 0;
  for (size_t i = 0; i < out.size(); ++i)
    worstOut = std::max(worstOut, std::abs(double(gotOut[i]) - out[i]));
  for (size_t i = 0; i < lse.size(); ++i)
    worstLse = std::max(worstLse, std::abs(double(gotLse[i]) - lse[i]));
  qInfo("worst |GPU - CPU|: out %.2g (bound %.2g), lse %.2g (bound %.2g)", worstOut, tolOut,
        worstLse, tolLse);
  // lse is optional (nullptr: not written), and leaving it out changes nothing in out.
  Dev<float> dOut2(std::vector<float>(out.size(), NAN));
  attention_forward_tiled_cuda(dOut2.p, nullptr, dQkv.p, B, T, C, NH);
  expectNear(dOut2.get(), gotOut, 0, 0, "tiled attention out without lse");
}

// A head wider than the shared-memory tiles is refused before anything runs, naming the limit;
// the limit itself runs (all-zero q, k, v: out = 0 everywhere).
void TstCudaKernelsAttention::attentionTiledRejectsLargeHeads() {
  REQUIRE_GPU();
  const int B = 1, T = 4, NH = 2, hsMax = kAttentionTiledMaxHeadSize;
  Dev<float> dQkv(zeros(size_t(B) * T * 3 * NH * (hsMax + 1))),
      dOut(std::vector<float>(size_t(B) * T * NH * hsMax, NAN));
  try {
    attention_forward_tiled_cuda(dOut.p, nullptr, dQkv.p, B, T, NH * (hsMax + 1), NH);
    QFAIL("a head size over the limit must throw");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains(QString::number(hsMax)), e.what());
  }
  attention_forward_tiled_cuda(dOut.p, nullptr, dQkv.p, B, T, NH * hsMax, NH);
  expectNear(dOut.get(), zeros(dOut.n), 0, 0, "tiled attention out at the head size limit");
}

// The blockwise kernels of ring attention against cpu/attention_blocks.h. Each row folds two
// K/V blocks into one query chunk (positions q0 .. q0+Tq-1 of B sequences): first the chunk's
// own keys, read in place from its packed qkv (ldkv = 3C, the diagonal block: every query sees
// at least its own key), then the block under test from a packed k | v array (ldkv = 2C), as a
// ring's later steps do. It compares o, m, l after each fold, out and lse after finish, D, and
// the backward of both blocks added onto random dq, dk, dv (the accumulation: +=, never =),
// the diagonal block's dq and dk/dv being columns of one dqkv array. Blocks: wholly in the past,
// partly visible (a key in the chunk's middle), wholly in the future (nothing launched, the
// accumulators and gradients left untouched bit for bit, 0 pairs), and chunks and blocks
// longer than one 32-row tile.
void TstCudaKernelsAttention::attentionBlocks_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("NH");
  QTest::addColumn<int>("hs");
  QTest::addColumn<int>("q0");
  QTest::addColumn<int>("Tq");
  QTest::addColumn<int>("k0");
  QTest::addColumn<int>("Tk");
  QTest::newRow("past block") << 2 << 2 << 4 << 8 << 4 << 0 << 6;
  QTest::newRow("partial overlap") << 2 << 3 << 5 << 4 << 6 << 6 << 7;
  QTest::newRow("block starts with the chunk") << 1 << 2 << 8 << 3 << 5 << 3 << 2;
  QTest::newRow("wholly in the future") << 2 << 2 << 4 << 0 << 4 << 4 << 3;
  QTest::newRow("one row, one key") << 1 << 1 << 1 << 0 << 1 << 0 << 1;
  QTest::newRow("over a tile") << 1 << 2 << 16 << 10 << 40 << 5 << 45;
}

void TstCudaKernelsAttention::attentionBlocks() {
  REQUIRE_GPU();
  QFETCH(int, B);
  QFETCH(int, NH);
  QFETCH(int, hs);
  QFETCH(int, q0);
  QFETCH(int, Tq);
  QFETCH(int, k0);
  QFETCH(int, Tk);
  const int C = NH * hs;
  const size_t qRows = size_t(B) * Tq, kRows = size_t(B) * Tk, stats = size_t(B) * NH * Tq;
  const std::vector<float> qkv = randomVec(qRows * 3 * C, 50, -2.f, 2.f),
                           kv = randomVec(kRows * 2 * C, 51, -2.f, 2.f),
                           dout = randomVec(qRows * C, 52), dqkv0 = randomVec(qRows * 3 * C, 53),
                           dkv0 = randomVec(kRows * 2 * C, 54);
  const long pairs = attention_block_pairs(q0, Tq, k0, Tk);
  // CPU, keeping the state after the diagonal block to check the future block against.
  std::vector<float> o(qRows * C), m(stats), l(stats), scratch(size_t(std::max(Tq, Tk)));
  attention_blocks_init(o.data(), m.data(), l.data(), B, Tq, NH, hs);
  attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), qkv.data(), 3 * C,
                          qkv.data() + C, qkv.data() + 2 * C, 3 * C, B, NH, hs, q0, Tq, q0, Tq);
  const std::vector<float> o1 = o, m1 = m, l1 = l;
  QCOMPARE(attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), qkv.data(), 3 * C,
                                   kv.data(), kv.data() + C, 2 * C, B, NH, hs, q0, Tq, k0, Tk),
           pairs);
  std::vector<float> out(qRows * C), lse(stats), D(stats);
  attention_blocks_finish(out.data(), lse.data(), o.data(), m.data(), l.data(), B, Tq, NH, hs);
  attention_blocks_delta(D.data(), out.data(), dout.data(), B, Tq, NH, hs);
  std::vector<float> dqkv = dqkv0, dkv = dkv0;
  attention_block_backward(dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, dout.data(),
                           lse.data(), D.data(), qkv.data(), 3 * C, qkv.data() + C,
                           qkv.data() + 2 * C, 3 * C, B, NH, hs, q0, Tq, q0, Tq);
  QCOMPARE(attention_block_backward(dqkv.data(), dkv.data(), dkv.data() + C, dout.data(),
                                    lse.data(), D.data(), qkv.data(), 3 * C, kv.data(),
                                    kv.data() + C, 2 * C, B, NH, hs, q0, Tq, k0, Tk),
           pairs);

  // The GPU: NaN in o, m, l (init must write them all) and in out, lse and D.
  auto nans = [](size_t n) { return std::vector<float>(n, NAN); };
  Dev<float> dQkv(qkv), dKv(kv), dDout(dout), dO(nans(o.size())), dM(nans(stats)), dL(nans(stats)),
      dOut(nans(out.size())), dLse(nans(stats)), dD(nans(stats)), dDqkv(dqkv0), dDkv(dkv0);
  attention_blocks_init_cuda(dO.p, dM.p, dL.p, B, Tq, NH, hs);
  QCOMPARE(attention_block_forward_cuda(dO.p, dM.p, dL.p, dQkv.p, 3 * C, dQkv.p + C, dQkv.p + 2 * C,
                                        3 * C, B, NH, hs, q0, Tq, q0, Tq),
           attention_block_pairs(q0, Tq, q0, Tq));
  // Error budget (u, e as in attention()), over the Tq + Tk keys a query folds at most: the
  // scores and exps of the naive kernel, and the rescale by alpha of o and l once per block.
  // m is a score: off by <= 4 hs^1.5 u per side. o = sum of up to Tk + Tq terms p v, |p| <= 1,
  // |v| <= 2, and l the sum of the p; the result out = o / l and lse as the tiled kernel's.
  const double u = 6e-8, hs15 = hs * std::sqrt(double(hs)), T = Tq + Tk;
  const double e = u * (8 * hs15 + T + 8);
  const double tolM = 8 * hs15 * u + 1e-7, tolL = 2 * T * e + 8 * u * T, tolO = 2 * tolL;
  const double tolOut = 4 * (e + T * u) + 16 * u, tolLse = u * (8 * hs15 + 2 * T + 32);
  expectNear(dO.get(), o1, tolO, 0, "o after the diagonal block");
  expectNear(dM.get(), m1, tolM, 0, "m after the diagonal block");
  expectNear(dL.get(), l1, tolL, 0, "l after the diagonal block");
  const std::vector<float> o1Gpu = dO.get(), m1Gpu = dM.get(), l1Gpu = dL.get();
  QCOMPARE(attention_block_forward_cuda(dO.p, dM.p, dL.p, dQkv.p, 3 * C, dKv.p, dKv.p + C, 2 * C, B,
                                        NH, hs, q0, Tq, k0, Tk),
           pairs);
  if (pairs == 0) {  // a future block: not a bit changed
    expectNear(dO.get(), o1Gpu, 0, 0, "o after a future block");
    expectNear(dM.get(), m1Gpu, 0, 0, "m after a future block");
    expectNear(dL.get(), l1Gpu, 0, 0, "l after a future block");
  }
  expectNear(dO.get(), o, tolO, 0, "o");
  expectNear(dM.get(), m, tolM, 0, "m");
  expectNear(dL.get(), l, tolL, 0, "l");
  attention_blocks_finish_cuda(dOut.p, dLse.p, dO.p, dM.p, dL.p, B, Tq, NH, hs);
  expectNear(dOut.get(), out, tolOut, 0, "out");
  expectNear(dLse.get(), lse, tolLse, 0, "lse");
  // In place, as the ring finishes (out == o, lse == m), and lse left out: the same out.
  attention_blocks_finish_cuda(dO.p, dM.p, dO.p, dM.p, dL.p, B, Tq, NH, hs);
  expectNear(dO.get(), dOut.get(), 0, 0, "out, finished in place");
  expectNear(dM.get(), dLse.get(), 0, 0, "lse, finished in place");
  // The backward from the CPU's out and lse, so that only its own rounding is compared.
  Dev<float> dOutCpu(out), dLseCpu(lse);
  attention_blocks_delta_cuda(dD.p, dOutCpu.p, dDout.p, B, Tq, NH, hs);
  expectNear(dD.get(), D, 8 * double(hs) * hs * u + u, 0, "D");  // hs products <= 2, summed
  Dev<float> dDCpu(D);
  attention_block_backward_cuda(dDqkv.p, dDqkv.p + C, dDqkv.p + 2 * C, dDout.p, dLseCpu.p, dDCpu.p,
                                dQkv.p, 3 * C, dQkv.p + C, dQkv.p + 2 * C, 3 * C, B, NH, hs, q0, Tq,
                                q0, Tq);
  const std::vector<float> dqkvDiag = dDqkv.get();
  QCOMPARE(attention_block_backward_cuda(dDqkv.p, dDkv.p, dDkv.p + C, dDout.p, dLseCpu.p, dDCpu.p,
                                         dQkv.p, 3 * C, dKv.p, dKv.p + C, 2 * C, B, NH, hs, q0, Tq,
                                         k0, Tk),
           pairs);
  // As attention()'s backward bound over T keys (the values added onto are exact on both sides).
  const double tolD = 8 * std::sqrt(double(hs)) * u * T * (2 * hs + 2 * T + 4);
  expectNear(dDqkv.get(), dqkv, tolD, 0, "dqkv (dq of both blocks, dk and dv of the diagonal)");
  expectNear(dDkv.get(), dkv, tolD, 0, "dk | dv of the block, added onto dkv");
  if (pairs == 0) {
    expectNear(dDqkv.get(), dqkvDiag, 0, 0, "dqkv after a future block");
    expectNear(dDkv.get(), dkv0, 0, 0, "dkv after a future block");
  } else {  // the block's share arrived: dk and dv differ from where they started
    QVERIFY(dDkv.get() != dkv0);
  }
}

// The ring's strided copies: k | v columns of a packed qkv copied into a [rows, 2C] block, and
// a block added back onto those columns. Exact.
void TstCudaKernelsAttention::stridedRows() {
  REQUIRE_GPU();
  const int C = 5;
  const long rows = 37;
  const std::vector<float> qkv = randomVec(size_t(rows) * 3 * C, 60),
                           add = randomVec(size_t(rows) * 2 * C, 61);
  std::vector<float> packed(size_t(rows) * 2 * C), sum = qkv;
  for (long r = 0; r < rows; ++r)
    for (int c = 0; c < 2 * C; ++c) {
      packed[size_t(r * 2 * C + c)] = qkv[size_t(r * 3 * C + C + c)];
      sum[size_t(r * 3 * C + C + c)] += add[size_t(r * 2 * C + c)];
    }
  Dev<float> dQkv(qkv), dPacked(std::vector<float>(packed.size(), NAN)), dAdd(add);
  rows_copy_cuda(dPacked.p, 2 * C, dQkv.p + C, 3 * C, rows, 2 * C);
  expectNear(dPacked.get(), packed, 0, 0, "rows copied");
  rows_add_cuda(dQkv.p + C, 3 * C, dAdd.p, 2 * C, rows, 2 * C);
  expectNear(dQkv.get(), sum, 0, 0, "rows added (q columns untouched)");
}

// Token + position embedding: the forward and both gradients are sums of the same terms in the
// same order as the CPU's (dwte walks the rows in order, dwpe the sequences): exact.
void TstCudaKernelsAttention::embedding() {
  REQUIRE_GPU();
  for (auto [B, T, C, V] :
       {std::array{1, 1, 1, 1}, std::array{2, 7, 5, 3}, std::array{3, 16, 33, 50}}) {
    const int maxT = T + 3;  // wpe has more positions than the batch uses
    const size_t rows = size_t(B) * T;
    std::vector<int> tokens(rows);
    for (size_t r = 0; r < rows; ++r) tokens[r] = int((r * 7 + 2) % V);
    tokens[rows - 1] = tokens[0];  // a repeated token (with V = 1 every token is the same)
    const std::vector<float> wte = randomVec(size_t(V) * C, 40),
                             wpe = randomVec(size_t(maxT) * C, 41), dout = randomVec(rows * C, 42),
                             dwte0 = randomVec(size_t(V) * C, 43),
                             dwpe0 = randomVec(size_t(maxT) * C, 44);
    std::vector<float> out(rows * C), dwte = dwte0, dwpe = dwpe0;
    embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
    Dev<int> dTokens(tokens);
    Dev<float> dWte(wte), dWpe(wpe), dOut(std::vector<float>(out.size(), NAN)), dDout(dout),
        dDwte(dwte0), dDwpe(dwpe0);
    embedding_forward_cuda(dOut.p, dTokens.p, dWte.p, dWpe.p, B, T, C);
    expectNear(dOut.get(), out, 0, 0, "embedding out");
    embedding_backward_cuda(dDwte.p, dDwpe.p, dDout.p, dTokens.p, B, T, C);
    expectNear(dDwte.get(), dwte, 0, 0, "embedding dwte");  // accumulated onto dwte0
    expectNear(dDwpe.get(), dwpe, 0, 0, "embedding dwpe");  // rows >= T left alone
  }
}

QTEST_GUILESS_MAIN(TstCudaKernelsAttention)
#include "tst_cuda_kernels_attention.moc"
