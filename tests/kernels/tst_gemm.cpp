// Every CPU GEMM kernel against the naive reference on awkward sizes and all transposes.
// Run: ctest -R tst_gemm
#include <QtTest>

#include <random>
#include <vector>

#include "cpu/gemm.h"

using namespace paralab::kernels;

class TstGemm : public QObject {
  Q_OBJECT
 private slots:
  void vendorMatchesNaive_data();
  void vendorMatchesNaive();
  void naiveKnownValues();
};

void TstGemm::vendorMatchesNaive_data() {
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  const int sizes[][3] = {{1, 1, 1}, {7, 7, 7}, {33, 17, 5}, {257, 33, 64}, {5, 257, 33}, {64, 1, 300}};
  for (auto& s : sizes)
    for (int t = 0; t < 4; ++t)
      QTest::addRow("%dx%dx%d ta=%d tb=%d", s[0], s[1], s[2], t & 1, t >> 1)
          << s[0] << s[1] << s[2] << bool(t & 1) << bool(t >> 1);
}

void TstGemm::vendorMatchesNaive() {
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C0(size_t(M) * N), C1;
  for (float& x : A) x = u(gen);
  for (float& x : B) x = u(gen);
  for (float& x : C0) x = u(gen);
  C1 = C0;
  const int lda = ta ? M : K, ldb = tb ? K : N;
  gemm_naive<float>(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C0.data(), N);
  gemm_vendor<float>(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C1.data(), N);
  // fp32 sums of K terms of size <= 1: error grows like K * 2^-24; allow 1e-5 * (K + 1).
  for (size_t i = 0; i < C0.size(); ++i)
    QVERIFY2(std::abs(C0[i] - C1[i]) <= 1e-5f * (K + 1),
             qPrintable(QString("element %1: naive %2 vendor %3").arg(i).arg(C0[i]).arg(C1[i])));
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

QTEST_GUILESS_MAIN(TstGemm)
#include "tst_gemm.moc"
