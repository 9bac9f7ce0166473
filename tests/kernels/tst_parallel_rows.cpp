// The rank's own kernels split over its threads (cpu/parallel_rows.h) give the one thread's
// bits: LayerNorm, bias, GELU (and the two fused), the residual add, the loss and Adam at 1, 2
// and 3 threads, at every vector level this CPU has; and parallel_for's pieces.
// Run: ctest -R tst_parallel_rows
#include <QtTest>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/layers.h"
#include "cpu/optim.h"
#include "cpu/parallel_rows.h"
#include "simd_check.h"

using namespace paralab::kernels;
using namespace paralab::kernels::test;

namespace {

// Everything one pass of the kernels writes, for one thread count.
struct Outputs {
  Floats y, mean, rstd, dx, dxInPlace, dgamma, dbeta, biased, db, gelu, dgelu, residual, dlogits;
  Floats fusedH, fusedG, fusedDx, fusedDb, p, m, v;
  double loss = 0;
};

bool sameBits(const Floats& a, const Floats& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

class TstParallelRows : public QObject {
  Q_OBJECT
 private slots:
  void init() { m_start = simdLevel(); }
  void cleanup() {
    QVERIFY(setSimdLevel(m_start));
    rank_threads_set(1);
  }
  void piecesCoverInOrder();
  void oneThreadRunsOnTheCaller();
  void kernelsEqualOneThread_data();
  void kernelsEqualOneThread();

 private:
  SimdLevel m_start = SimdLevel::Baseline;
};

void TstParallelRows::piecesCoverInOrder() {
  rank_threads_set(2);
  QCOMPARE(rank_threads(), 2);
  for (long n : {100000L, 100001L, 4097L}) {
    std::mutex mutex;
    std::vector<std::pair<long, long>> pieces;
    parallel_for(n, 64, 1000, [&](long b, long e) {
      std::lock_guard<std::mutex> lock(mutex);
      pieces.emplace_back(b, e);
    });
    std::sort(pieces.begin(), pieces.end());
    QVERIFY2(pieces.size() > 1, "a split with two threads has more than one piece");
    long next = 0;
    for (const auto& [b, e] : pieces) {
      QCOMPARE(b, next);
      QCOMPARE(b % 64, 0L);
      QVERIFY(e > b);
      next = e;
    }
    QCOMPARE(next, n);
  }
}

void TstParallelRows::oneThreadRunsOnTheCaller() {
  rank_threads_set(1);
  int calls = 0;
  parallel_for(1000000, 64, 1000, [&](long b, long e) {
    ++calls;
    QCOMPARE(b, 0L);
    QCOMPARE(e, 1000000L);
  });
  QCOMPARE(calls, 1);
  rank_threads_set(2);  // too little work for two pieces: one call, the whole range
  calls = 0;
  parallel_for(1500, 64, 1000, [&](long, long) { ++calls; });
  QCOMPARE(calls, 1);
}

void TstParallelRows::kernelsEqualOneThread_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::newRow("GPT width 128") << 700 << 128;
  QTest::newRow("40 columns, pieces of 16 and 8") << 2000 << 40;
  QTest::newRow("odd widths") << 613 << 133;
}

void TstParallelRows::kernelsEqualOneThread() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  const size_t n = size_t(rows) * cols;
  std::mt19937 gen(17);
  const Floats x = randomFloats(n, gen, 2.f), dy = randomFloats(n, gen);
  const Floats gamma = randomFloats(cols, gen), beta = randomFloats(cols, gen);
  std::vector<int> labels(rows);
  for (int r = 0; r < rows; ++r) labels[r] = (r * 31) % cols;

  const auto pass = [&]() {
    Outputs o;
    o.y.assign(n, 0.f), o.mean.assign(rows, 0.f), o.rstd.assign(rows, 0.f);
    layernorm_forward(o.y.data(), o.mean.data(), o.rstd.data(), x.data(), gamma.data(),
                      beta.data(), rows, cols);
    o.dx.assign(n, 0.f), o.dgamma.assign(cols, 0.5f), o.dbeta.assign(cols, 0.25f);
    layernorm_backward(o.dx.data(), o.dgamma.data(), o.dbeta.data(), dy.data(), x.data(),
                       o.mean.data(), o.rstd.data(), gamma.data(), rows, cols);
    o.dxInPlace = dy;  // dx over dy, as the GPT's backward passes them
    Floats dgDiscard(cols, 0.f), dbDiscard(cols, 0.f);
    layernorm_backward(o.dxInPlace.data(), dgDiscard.data(), dbDiscard.data(), o.dxInPlace.data(),
                       x.data(), o.mean.data(), o.rstd.data(), gamma.data(), rows, cols);
    o.biased = x;
    bias_add(o.biased.data(), beta.data(), rows, cols);
    o.db.assign(cols, 0.125f);
    bias_backward(o.db.data(), dy.data(), rows, cols);
    o.gelu.assign(n, 0.f), o.dgelu.assign(n, 0.f);
    gelu_forward(o.gelu.data(), x.data(), long(n));
    gelu_backward(o.dgelu.data(), x.data(), dy.data(), long(n));
    o.fusedH = x, o.fusedG.assign(n, 0.f);
    bias_gelu_forward(o.fusedH.data(), o.fusedG.data(), beta.data(), rows, cols);
    o.fusedDx = dy, o.fusedDb.assign(cols, 0.75f);
    gelu_backward_bias(o.fusedDx.data(), o.fusedDb.data(), x.data(), o.fusedDx.data(), rows, cols);
    o.residual = x;
    residual_add(o.residual.data(), dy.data(), long(n));
    o.dlogits.assign(n, 0.f);
    o.loss = softmax_xent(o.dlogits.data(), x.data(), labels.data(), rows, cols, 3.0);
    o.p = x, o.m.assign(n, 0.f), o.v.assign(n, 0.f);
    for (long t = 1; t <= 2; ++t)
      adam_update(o.p.data(), o.m.data(), o.v.data(), dy.data(), long(n), 1e-3f, 0.9f, 0.999f,
                  1e-8f, t);
    return o;
  };

  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    rank_threads_set(1);
    const Outputs one = pass();
    for (int threads : {2, 3}) {
      rank_threads_set(threads);
      const Outputs got = pass();
      const QString at = QString("%1 threads at %2").arg(threads).arg(simdLevelName(l));
      const std::pair<const char*, std::pair<const Floats*, const Floats*>> arrays[] = {
          {"layernorm y", {&got.y, &one.y}},
          {"layernorm mean", {&got.mean, &one.mean}},
          {"layernorm rstd", {&got.rstd, &one.rstd}},
          {"layernorm dx", {&got.dx, &one.dx}},
          {"layernorm dx in place of dy", {&got.dxInPlace, &one.dxInPlace}},
          {"layernorm dgamma", {&got.dgamma, &one.dgamma}},
          {"layernorm dbeta", {&got.dbeta, &one.dbeta}},
          {"bias add", {&got.biased, &one.biased}},
          {"bias backward", {&got.db, &one.db}},
          {"gelu", {&got.gelu, &one.gelu}},
          {"gelu'", {&got.dgelu, &one.dgelu}},
          {"residual add", {&got.residual, &one.residual}},
          {"bias + gelu: h", {&got.fusedH, &one.fusedH}},
          {"bias + gelu: g", {&got.fusedG, &one.fusedG}},
          {"gelu' + bias: dx", {&got.fusedDx, &one.fusedDx}},
          {"gelu' + bias: db", {&got.fusedDb, &one.fusedDb}},
          {"dlogits", {&got.dlogits, &one.dlogits}},
          {"adam p", {&got.p, &one.p}},
          {"adam m", {&got.m, &one.m}},
          {"adam v", {&got.v, &one.v}},
      };
      for (const auto& [what, pair] : arrays)
        QVERIFY2(sameBits(*pair.first, *pair.second), qPrintable(QString(what) + ", " + at));
      QVERIFY2(std::memcmp(&got.loss, &one.loss, sizeof(double)) == 0,
               qPrintable("loss, " + at));
    }
  }
}

QTEST_GUILESS_MAIN(TstParallelRows)
#include "tst_parallel_rows.moc"
