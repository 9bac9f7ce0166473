// The bf16 GEMM (cpu/gemm.h's gemm_bf16) on each of its paths (AMX, AVX512_BF16) against a
// double-precision reference on bf16-representable inputs: all four transposes, odd sizes past
// every block, padded strides, alpha/beta. Skipped on a CPU without avx512_bf16 (the AMX rows
// also where AMX is absent or not granted). Run: ctest -R tst_gemm_bf16
#include <QtTest>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/half.h"
#include "cpu/parallel_rows.h"
#include "gemm_reference.h"

using namespace paralab::kernels;

namespace {

// A problem whose A, B and C0 hold bf16 values (as a 16-bit run's tensors do), its reference
// (gemm_reference.h's fields) recomputed from them in double.
paralab::test::GemmProblem bf16Problem(int M, int N, int K, bool ta, bool tb, float alpha,
                                       float beta, int pad) {
  paralab::test::GemmProblem p = paralab::test::makeGemmProblem(M, N, K, ta, tb, alpha, beta, pad);
  for (std::vector<float>* v : {&p.A, &p.B, &p.C0})
    for (float& x : *v) x = roundToBf16(x);
  paralab::test::computeReference(p);
  return p;
}

// The products of bf16 values are exact in fp32 (8 + 8 significant bits), so the only errors
// are fp32's sums: |C - C_exact| <= (K + 4) u (|alpha| sum |a b| + |beta c|), u = 2^-24, the
// fp32 bound of gemm_reference.h. Over random signs the error grows as ~u sqrt(K); the bound
// is the worst case, which a kernel that rounded its sums or products to bf16 (2^-8) exceeds.
double bound(const paralab::test::GemmProblem& p, size_t e) { return p.bound(e, false); }

}  // namespace

class TstGemmBf16 : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void matchesReference_data();
  void matchesReference();
  void roundsOperandsToBf16();
  void lowerSimdLevelTurnsItOff();
  void threadsEqualOneThread_data();
  void threadsEqualOneThread();
  void cleanup() {
    gemm_bf16_allow_amx(true);
    rank_threads_set(1);
  }
};

void TstGemmBf16::initTestCase() {
  if (!cpuHasAvx512Bf16()) QSKIP("this CPU has no avx512_bf16: gemm_bf16 runs its scalar path");
  QVERIFY(setSimdLevel(simdLevelCpu()));  // the CPU's own level, whatever PARALAB_SIMD forced
  QVERIFY(gemm_bf16_available());
}

void TstGemmBf16::matchesReference_data() {
  QTest::addColumn<QString>("isa");
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  QTest::addColumn<float>("alpha");
  QTest::addColumn<float>("beta");
  QTest::addColumn<int>("pad");
  // 1, odd K (a pair's partner missing), primes around the 14 x 32 tile, K past the depth block
  // (384; AMX 512: beta must apply once), M past a row block (168; AMX 256), N past a panel
  // (2048; AMX 512).
  const int sizes[][3] = {{1, 1, 1},     {7, 7, 7},      {33, 17, 5},   {15, 33, 257},
                          {29, 65, 385}, {170, 31, 771}, {5, 2100, 33}, {201, 97, 530},
                          {300, 40, 600}};
  struct Scalars { float alpha, beta; int pad; };
  const Scalars scalars[] = {{0.5f, 2.0f, 0}, {1.0f, 0.0f, 3}, {-1.5f, 1.0f, 0}};
  int row = 0;
  for (const char* isa : {"avx512_bf16", "amx"})
    for (const auto& s : sizes)
      for (int t = 0; t < 4; ++t) {
        const Scalars& sc = scalars[row++ % 3];
        QTest::addRow("%s %dx%dx%d %c%c a%g b%g", isa, s[0], s[1], s[2], t & 1 ? 'T' : 'N',
                      t & 2 ? 'T' : 'N', sc.alpha, sc.beta)
            << QString(isa) << s[0] << s[1] << s[2] << bool(t & 1) << bool(t & 2) << sc.alpha
            << sc.beta << sc.pad;
      }
}

void TstGemmBf16::matchesReference() {
  QFETCH(QString, isa);
  gemm_bf16_allow_amx(isa == "amx");
  if (isa == "amx" && QString(gemm_bf16_isa()) != "amx")
    QSKIP("this CPU has no AMX-BF16, or the operating system does not grant its tiles");
  QCOMPARE(QString(gemm_bf16_isa()), isa);
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  QFETCH(float, alpha);
  QFETCH(float, beta);
  QFETCH(int, pad);
  const paralab::test::GemmProblem p = bf16Problem(M, N, K, ta, tb, alpha, beta, pad);
  std::vector<float> C = p.C0;
  if (beta == 0.f)  // BLAS must not read C when beta is 0
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C[size_t(i) * p.ldc + j] = std::numeric_limits<float>::quiet_NaN();
  gemm_bf16(ta, tb, M, N, K, alpha, p.A.data(), p.lda, p.B.data(), p.ldb, beta, C.data(), p.ldc);
  double worst = 0;  // the largest error relative to the bound's scale
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < p.ldc; ++j) {
      const float got = C[size_t(i) * p.ldc + j];
      if (j >= N) {
        QVERIFY2(got == p.C0[size_t(i) * p.ldc + j], qPrintable(QString("wrote padding at (%1, %2)").arg(i).arg(j)));
        continue;
      }
      const size_t e = size_t(i) * N + j;
      QVERIFY2(std::abs(got - p.ref[e]) <= bound(p, e),
               qPrintable(QString("C(%1, %2) = %3, expected %4 +- %5")
                              .arg(i).arg(j).arg(got).arg(p.ref[e]).arg(bound(p, e))));
      worst = std::max(worst, std::abs(got - p.ref[e]) / (p.absAB[e] + p.absBC[e] + 1e-30));
    }
  // Relative to |alpha| sum |a b| + |beta c|: fp32 sums stay near u sqrt(K), far below bf16's
  // 2^-8 (a kernel rounding its sums to bf16 would show it here).
  QVERIFY2(worst <= 16 * std::ldexp(1.0, -24) * std::sqrt(double(K) + 4),
           qPrintable(QString("worst relative error %1 at K = %2").arg(worst).arg(K)));
}

// Operands bf16 cannot hold are rounded to nearest, ties to even (half.h), before multiplying:
// with 7 mantissa bits the step at 1 is 2^-7: 1 + 2^-9 becomes 1, 1 + 3 * 2^-9 becomes 1 + 2^-7.
void TstGemmBf16::roundsOperandsToBf16() {
  const float a[2] = {1.f + 0x1p-9f, 1.f + 3 * 0x1p-9f};  // 1 x 2
  const float b[2] = {1.f, 1.f};                            // 2 x 1
  float c = 0;
  gemm_bf16(false, false, 1, 1, 2, 1.f, a, 2, b, 1, 0.f, &c, 1);
  QCOMPARE(c, 2.f + 0x1p-7f);
}

// PARALAB_SIMD=avx2 (setSimdLevel here) turns the bf16 kernel off: its scalar path gives the
// same numerics.
void TstGemmBf16::lowerSimdLevelTurnsItOff() {
  const paralab::test::GemmProblem p = bf16Problem(37, 41, 43, false, true, 1.f, 0.f, 0);
  std::vector<float> fast(size_t(p.M) * p.ldc), slow(fast.size());
  gemm_bf16(p.ta, p.tb, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.f,
            fast.data(), p.ldc);
  QVERIFY(setSimdLevel(SimdLevel::Avx2));
  QVERIFY(!gemm_bf16_available());
  QVERIFY(!gemm_bf16_for_training());  // training keeps its fp32 GEMM
  QCOMPARE(QString(gemm_bf16_isa()), QString("scalar"));
  gemm_bf16(p.ta, p.tb, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.f,
            slow.data(), p.ldc);
  QVERIFY(setSimdLevel(simdLevelCpu()));
  QVERIFY(gemm_bf16_available());
  for (size_t e = 0; e < fast.size(); ++e)
    QVERIFY2(std::abs(fast[e] - p.ref[e]) <= bound(p, e) && std::abs(slow[e] - p.ref[e]) <= bound(p, e),
             qPrintable(QString("entry %1: %2 and %3, expected %4").arg(e).arg(fast[e]).arg(slow[e]).arg(p.ref[e])));
}

// Split over a rank's threads by rows of C (gemm_bf16_rows, as a bf16 training run's forward
// GEMMs are), the result is the one thread's bit for bit, on each path; M past several 32-row
// pieces and not a multiple of them.
void TstGemmBf16::threadsEqualOneThread_data() {
  QTest::addColumn<QString>("isa");
  QTest::addColumn<int>("threads");
  for (const char* isa : {"avx512_bf16", "amx"})
    for (const int threads : {2, 3})
      QTest::addRow("%s %d threads", isa, threads) << QString(isa) << threads;
}

void TstGemmBf16::threadsEqualOneThread() {
  QFETCH(QString, isa);
  QFETCH(int, threads);
  gemm_bf16_allow_amx(isa == "amx");
  if (isa == "amx" && QString(gemm_bf16_isa()) != "amx")
    QSKIP("this CPU has no AMX-BF16, or the operating system does not grant its tiles");
  for (const bool ta : {false, true}) {
    const paralab::test::GemmProblem p = bf16Problem(1000, 300, 520, ta, false, 1.f, 0.f, 0);
    std::vector<float> one(size_t(p.M) * p.ldc), many(one.size());
    rank_threads_set(1);
    gemm_bf16(ta, false, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.f, one.data(),
              p.ldc);
    rank_threads_set(threads);
    gemm_bf16_rows(ta, false, p.M, p.N, p.K, 1.f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.f,
                   many.data(), p.ldc);
    rank_threads_set(1);
    QVERIFY2(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)) == 0,
             ta ? "op(A) = A^T" : "op(A) = A");
  }
}

QTEST_APPLESS_MAIN(TstGemmBf16)
#include "tst_gemm_bf16.moc"
