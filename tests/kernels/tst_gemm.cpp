// Every CPU GEMM rung (naive, simd, threaded, tiled, vendor) against a double-precision
// reference on awkward sizes, all four transposes, padded strides, alpha/beta, 1 and 2 threads.
// Run: ctest -R tst_gemm
#include <QtTest>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/thread_pool.h"
#include "gemm_reference.h"

using namespace paralab::kernels;

namespace {

using paralab::test::GemmProblem;
using paralab::test::makeGemmProblem;
using paralab::test::sharedGemmProblem;

// Runs `fn` on a copy of C0 (NaN-filled when beta == 0: BLAS must not read it) and checks every
// element of C and that the padding between rows is untouched.
void check(const GemmProblem& p, GemmFn fn, const char* name) {
  std::vector<float> C = p.C0;
  if (p.beta == 0.f)
    for (int i = 0; i < p.M; ++i)
      for (int j = 0; j < p.N; ++j) C[size_t(i) * p.ldc + j] = std::numeric_limits<float>::quiet_NaN();
  fn(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda, p.B.data(), p.ldb, p.beta, C.data(), p.ldc);
  for (int i = 0; i < p.M; ++i)
    for (int j = 0; j < p.ldc; ++j) {
      const float got = C[size_t(i) * p.ldc + j];
      if (j >= p.N) {
        QVERIFY2(got == p.C0[size_t(i) * p.ldc + j], qPrintable(QString("%1 wrote padding at (%2, %3)").arg(name).arg(i).arg(j)));
        continue;
      }
      const size_t e = size_t(i) * p.N + j;
      QVERIFY2(std::abs(got - p.ref[e]) <= p.bound(e, false),
               qPrintable(QString("%1: C(%2, %3) = %4, expected %5 +- %6")
                              .arg(name).arg(i).arg(j).arg(got).arg(p.ref[e]).arg(p.bound(e, false))));
    }
}

}  // namespace

class TstGemm : public QObject {
  Q_OBJECT
 private slots:
  void ladderMatchesReference_data();
  void ladderMatchesReference();
  void naiveKnownValues();
  void registryNamesTheLadder();
  void degenerateSizes();
  void concurrentCallersShareThePool();
  void threadPoolRunsEachTaskOnce();
  void sgemmTimingCountsOnlyWhenOn();
  void cleanupTestCase() { gemm_set_threads(0); }
};

void TstGemm::ladderMatchesReference_data() {
  QTest::addColumn<QString>("kernel");
  QTest::addColumn<int>("threads");
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  QTest::addColumn<float>("alpha");
  QTest::addColumn<float>("beta");
  QTest::addColumn<int>("pad");
  // Awkward sizes: 1, primes around the micro-tile (14 x 32, 6 x 16), K beyond the depth block
  // (256, so beta must apply once), M beyond a row block (336), N beyond a panel (4096).
  const int sizes[][3] = {{1, 1, 1},    {7, 7, 7},     {33, 17, 5},  {257, 33, 64}, {5, 257, 33},
                          {64, 1, 300}, {1, 257, 7},   {15, 33, 257}, {701, 97, 530}, {3, 4200, 5}};
  struct Scalars { float alpha, beta; int pad; };
  const Scalars scalars[] = {{0.5f, 2.0f, 0}, {1.0f, 0.0f, 3}, {-1.5f, 1.0f, 0}};
  for (const GemmKernel& k : gemm_kernels()) {
    if (QString(k.name) == "naive") continue;  // the fp32 naive kernel gets one pass below
    const bool pooled = QString(k.name) == "threaded" || QString(k.name) == "tiled";
    for (int threads : pooled ? std::vector<int>{1, 2} : std::vector<int>{1})
      for (auto& s : sizes)
        for (int t = 0; t < 4; ++t) {
          const Scalars& sc = scalars[(t + s[0]) % 3];
          QTest::addRow("%s x%d %dx%dx%d ta=%d tb=%d a=%g b=%g pad=%d", k.name, threads, s[0], s[1],
                        s[2], t & 1, t >> 1, sc.alpha, sc.beta, sc.pad)
              << QString(k.name) << threads << s[0] << s[1] << s[2] << bool(t & 1) << bool(t >> 1)
              << sc.alpha << sc.beta << sc.pad;
        }
  }
  for (int t = 0; t < 4; ++t)
    QTest::addRow("naive 257x33x64 ta=%d tb=%d", t & 1, t >> 1)
        << QString("naive") << 1 << 257 << 33 << 64 << bool(t & 1) << bool(t >> 1) << 0.5f << 2.0f << 1;
}

void TstGemm::ladderMatchesReference() {
  QFETCH(QString, kernel);
  QFETCH(int, threads);
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  QFETCH(float, alpha);
  QFETCH(float, beta);
  QFETCH(int, pad);
  const GemmProblem& p = sharedGemmProblem(M, N, K, ta, tb, alpha, beta, pad);
  gemm_set_threads(threads);
  vendor_blas_set_threads(threads);
  const GemmFn fn = gemm_find(kernel.toStdString());
  QVERIFY(fn);
  check(p, fn, qPrintable(kernel));
}

void TstGemm::naiveKnownValues() {
  // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
  const double A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8};
  double C[4] = {};
  gemm_naive<double>(false, false, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 2);
  QCOMPARE(C[0], 19.0);
  QCOMPARE(C[1], 22.0);
  QCOMPARE(C[2], 43.0);
  QCOMPARE(C[3], 50.0);
  // A^T * B = [1 3; 2 4] * [5 6; 7 8] = [26 30; 38 44]
  gemm_naive<double>(true, false, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 2);
  QCOMPARE(C[0], 26.0);
  QCOMPARE(C[3], 44.0);
}

void TstGemm::registryNamesTheLadder() {
  const char* expected[] = {"naive", "simd", "threaded", "tiled", "vendor"};
  QCOMPARE(gemm_kernels().size(), size_t(5));
  for (size_t i = 0; i < 5; ++i) {
    QCOMPARE(QString(gemm_kernels()[i].name), QString(expected[i]));
    QVERIFY(gemm_find(expected[i]) == gemm_kernels()[i].fn);
  }
  QVERIFY(gemm_find("tiled") == &gemm_tiled);
  QVERIFY(gemm_find("Tiled") == nullptr);
  QVERIFY(gemm_find("") == nullptr);
}

// K = 0 leaves beta * C; alpha = 0 too; M or N = 0 touches nothing.
void TstGemm::degenerateSizes() {
  for (const GemmKernel& k : gemm_kernels()) {
    float C[4] = {1, 2, 3, 4};
    const float A[4] = {}, B[4] = {};
    k.fn(false, false, 2, 2, 0, 1.f, A, 1, B, 2, 3.f, C, 2);
    QVERIFY2(C[0] == 3.f && C[3] == 12.f, k.name);
    k.fn(false, false, 2, 2, 2, 0.f, A, 2, B, 2, 0.5f, C, 2);
    QVERIFY2(C[0] == 1.5f && C[3] == 6.f, k.name);
    k.fn(false, false, 0, 2, 2, 1.f, A, 2, B, 2, 0.f, C, 2);
    k.fn(false, false, 2, 0, 2, 1.f, A, 2, B, 2, 0.f, C, 2);
    QVERIFY2(C[0] == 1.5f && C[3] == 6.f, k.name);
  }
}

// Two ranks (threads) calling the pooled kernels at once: one gets the pool, the other runs on
// its own thread; both answers are right.
void TstGemm::concurrentCallersShareThePool() {
  gemm_set_threads(2);
  const GemmProblem p = makeGemmProblem(200, 150, 300, false, true, 1.f, 0.f, 0);
  for (GemmFn fn : {GemmFn(gemm_tiled), GemmFn(gemm_threaded)}) {
    std::vector<std::vector<float>> out(4, std::vector<float>(p.C0.size()));
    std::vector<std::thread> callers;
    for (auto& C : out)
      callers.emplace_back([&] {
        for (int rep = 0; rep < 5; ++rep)
          fn(p.ta, p.tb, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.f, C.data(), p.ldc);
      });
    for (auto& t : callers) t.join();
    for (auto& C : out)
      for (size_t e = 0; e < C.size(); ++e) QVERIFY(std::abs(C[e] - p.ref[e]) <= p.bound(e, false));
  }
}

void TstGemm::threadPoolRunsEachTaskOnce() {
  ThreadPool pool(3);
  QCOMPARE(pool.size(), 3);
  for (int tasks : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(tasks);
    pool.run(tasks, [&](int t) { hits[t].fetch_add(1); });
    for (int t = 0; t < tasks; ++t) QCOMPARE(hits[t].load(), 1);
  }
  // A task that calls run() again gets its tasks done serially instead of a deadlock.
  std::atomic<int> inner{0};
  pool.run(4, [&](int) { pool.run(3, [&](int) { inner.fetch_add(1); }); });
  QCOMPARE(inner.load(), 12);
}

// The benchmarks' sgemm clock: nothing counted while off; on, the calls' time, more than nothing
// and never more than the wall time around them; switching on again starts from zero.
void TstGemm::sgemmTimingCountsOnlyWhenOn() {
  vendor_blas_set_threads(1);
  const GemmProblem p = makeGemmProblem(256, 256, 256, false, false, 1.f, 0.f, 0);
  std::vector<float> C(p.C0.size());
  auto calls = [&](int n) {
    for (int i = 0; i < n; ++i)
      gemm_vendor<float>(false, false, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb,
                         0.f, C.data(), p.ldc);
  };
  vendor_sgemm_timing(false);
  calls(3);
  QCOMPARE(vendor_sgemm_seconds(), 0.0);
  vendor_sgemm_timing(true);
  const auto start = std::chrono::steady_clock::now();
  calls(20);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double counted = vendor_sgemm_seconds();
  QVERIFY2(counted > 0 && counted <= wall, qPrintable(QString("%1 of %2 s").arg(counted).arg(wall)));
  vendor_sgemm_timing(false);
  calls(3);
  QCOMPARE(vendor_sgemm_seconds(), counted);  // off: the sum stays as it was
  vendor_sgemm_timing(true);
  QCOMPARE(vendor_sgemm_seconds(), 0.0);
  vendor_sgemm_timing(false);
  for (size_t e = 0; e < C.size(); ++e) QVERIFY(std::abs(C[e] - p.ref[e]) <= p.bound(e, false));
}

QTEST_GUILESS_MAIN(TstGemm)
#include "tst_gemm.moc"
