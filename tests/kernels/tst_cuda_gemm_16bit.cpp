// Mixed precision's GPU GEMM (cuda/gemm.h: gemm_cuda_tensor_core_bf16 / _fp16, WMMA m16n16k16)
// against a CPU reference GEMM on the same 16-bit-rounded inputs, for bf16 and fp16, at shapes
// that are not multiples of 16, every transpose, with alpha, beta and padded strides; and the
// 16-bit conversions the kernel rounds with, and mixed precision's rounding and unscale kernels
// (cuda/mixed_precision.h), against the kernels' own (cpu/half.h).
// Built twice: tst_cuda_gemm_16bit runs the .cu source on the host (the emulated GPU, with the
// shared-memory checks on), tst_cuda_gemm_16bit_gpu on a real GPU (skipped without one).
// Run: ctest -R tst_cuda_gemm_16bit --output-on-failure
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <QtTest>
#include <bit>
#include <cmath>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/half.h"
#include "cuda/gemm.h"
#include "cuda/mixed_precision.h"
#include "device_compare.h"
#include "gemm_reference.h"

using namespace paralab::kernels;
using namespace paralab::test;

namespace {

// makeGemmProblem's A, B and C0 (unrounded: the kernel rounds its operands itself); the
// reference alpha op(A16) op(B16) + beta C0 in double, A16 and B16 the operands rounded to 16
// bits, with sum |alpha a b| and |beta c| for the bound.
struct Problem16 {
  GemmProblem p;
  std::vector<double> ref, absAB, absBC;

  // Every product of two 16-bit values is exact in fp32, so only the fp32 sums round: K + 4
  // roundings an element (gemm_reference.h), each by at most 2u (u = 2^-24: a tensor core may
  // truncate its sums rather than round them).
  double bound(size_t e) const {
    const double u = std::ldexp(1.0, -24);
    return 2 * (p.K + 4) * u * (absAB[e] + absBC[e]) + 1e-30;
  }
};

Problem16 makeProblem16(int M, int N, int K, bool ta, bool tb, float alpha, float beta, int pad,
                        bool fp16) {
  Problem16 q{makeGemmProblem(M, N, K, ta, tb, alpha, beta, pad), {}, {}, {}};
  GemmProblem rounded = q.p;  // the reference of the operands as the kernel rounds them
  computeReference(rounded, fp16 ? +[](float x) { return roundToFp16(x); }
                                 : +[](float x) { return roundToBf16(x); });
  q.ref = std::move(rounded.ref);
  q.absAB = std::move(rounded.absAB);
  q.absBC = std::move(rounded.absBC);
  return q;
}

}  // namespace

class TstCudaHalfGemm : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void conversionsRoundAsTheCpu();
  void gemmMatchesReference_data();
  void gemmMatchesReference();
  void operandsAreRoundedTo16Bits();
  void roundingKernelIsTheCpus();
  void unscaleFindsOverflow();
};

void TstCudaHalfGemm::initTestCase() {
  const GpuInfo gpu = cuda_query_devices();
  qInfo("device: %s", gpu.count ? gpu.firstName.c_str() : gpu.reason.c_str());
  REQUIRE_GPU();  // the whole suite, reported as skipped (tests/CMakeLists.txt)
}

// __float2bfloat16 and __float2half, widened back, are the kernels' one rounding (cpu/half.h):
// ties to even, fp16's subnormals and overflow, NaN and infinities kept.
void TstCudaHalfGemm::conversionsRoundAsTheCpu() {
  std::vector<float> xs = {0.f,         -0.f,     1.f,       -1.f,       1.00390625f,
                           1.01171875f, 0x1p-14f, 0x1p-24f,  0x1.8p-25f, 0x1p-25f,
                           65504.f,     65519.f,  65520.f,   -70000.f,   3.3e38f,
                           1e-40f,      INFINITY, -INFINITY, 2049.f,     2051.f};
  const std::vector<float> random = randomVec(20000, 11, -3.f, 3.f);
  xs.insert(xs.end(), random.begin(), random.end());
  for (float scale : {0x1p-20f, 0x1p12f})
    for (size_t i = 0; i < 2000; ++i) xs.push_back(random[i] * scale);
  for (float x : xs) {
    const float b = __bfloat162float(__float2bfloat16(x)), h = __half2float(__float2half(x));
    QVERIFY2(std::bit_cast<uint32_t>(b) == std::bit_cast<uint32_t>(roundToBf16(x)),
             qPrintable(QString("bf16(%1) = %2, the CPU %3").arg(x).arg(b).arg(roundToBf16(x))));
    QVERIFY2(std::bit_cast<uint32_t>(h) == std::bit_cast<uint32_t>(roundToFp16(x)),
             qPrintable(QString("fp16(%1) = %2, the CPU %3").arg(x).arg(h).arg(roundToFp16(x))));
  }
  QVERIFY(std::isnan(__half2float(__float2half(NAN))));
  QVERIFY(std::isnan(__bfloat162float(__float2bfloat16(NAN))));
}

void TstCudaHalfGemm::gemmMatchesReference_data() {
  QTest::addColumn<bool>("fp16");
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  QTest::addColumn<float>("alpha");
  QTest::addColumn<float>("beta");
  QTest::addColumn<int>("pad");
  // 1, primes, sizes around the 128-wide block tiles and the 32-deep k tiles (2 MMAs of 16),
  // and one of whole tiles.
  const int sizes[][3] = {{1, 1, 1},    {7, 7, 7},       {33, 17, 5},  {17, 33, 47},
                          {5, 257, 33}, {130, 131, 100}, {129, 3, 65}, {128, 256, 64}};
  const float scalars[][2] = {{0.5f, 2.0f}, {1.0f, 0.0f}, {-1.5f, 1.0f}};
  for (bool fp16 : {false, true})
    for (auto& s : sizes)
      for (int t = 0; t < 4; ++t) {
        const float* sc = scalars[(t + s[0]) % 3];
        const int pad = t == 1 ? 3 : 0;
        QTest::addRow("%s %dx%dx%d ta=%d tb=%d a=%g b=%g pad=%d", fp16 ? "fp16" : "bf16", s[0],
                      s[1], s[2], t & 1, t >> 1, sc[0], sc[1], pad)
            << fp16 << s[0] << s[1] << s[2] << bool(t & 1) << bool(t >> 1) << sc[0] << sc[1] << pad;
      }
}

void TstCudaHalfGemm::gemmMatchesReference() {
  REQUIRE_GPU();
  QFETCH(bool, fp16);
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  QFETCH(float, alpha);
  QFETCH(float, beta);
  QFETCH(int, pad);
  const Problem16 q = makeProblem16(M, N, K, ta, tb, alpha, beta, pad, fp16);
  const GemmProblem& p = q.p;
  std::vector<float> C0 = p.C0;
  if (beta == 0.f)  // beta == 0 must not read C
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C0[size_t(i) * p.ldc + j] = NAN;
  Dev<float> A(p.A), B(p.B), C(C0);
  (fp16 ? gemm_cuda_tensor_core_fp16 : gemm_cuda_tensor_core_bf16)(
      ta, tb, M, N, K, alpha, A.p, p.lda, B.p, p.ldb, beta, C.p, p.ldc, nullptr);
  const std::vector<float> got = C.get();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < p.ldc; ++j) {
      const float g = got[size_t(i) * p.ldc + j];
      if (j >= N) {
        QVERIFY2(g == p.C0[size_t(i) * p.ldc + j], "wrote into the padding between rows");
        continue;
      }
      const size_t e = size_t(i) * N + j;
      if (!(std::abs(g - q.ref[e]) <= q.bound(e)))  // the message only for a failure
        QFAIL(qPrintable(QString("C(%1, %2) = %3, expected %4 +- %5")
                             .arg(i)
                             .arg(j)
                             .arg(g)
                             .arg(q.ref[e])
                             .arg(q.bound(e))));
    }
}

// The kernel multiplies 16-bit operands, not the fp32 words it is given: against the
// reference on unrounded inputs it is off by far more than fp32's sums allow (bf16 keeps 8
// significant bits, fp16 11), while it matches the rounded reference (above).
void TstCudaHalfGemm::operandsAreRoundedTo16Bits() {
  REQUIRE_GPU();
  const int M = 40, N = 24, K = 64;
  for (bool fp16 : {false, true}) {
    const Problem16 q = makeProblem16(M, N, K, false, false, 1.f, 0.f, 0, fp16);
    const GemmProblem& p = q.p;
    Dev<float> A(p.A), B(p.B), C(p.C0);
    (fp16 ? gemm_cuda_tensor_core_fp16 : gemm_cuda_tensor_core_bf16)(
        false, false, M, N, K, 1.f, A.p, p.lda, B.p, p.ldb, 0.f, C.p, p.ldc, nullptr);
    const std::vector<float> got = C.get();
    double worstFp32 = 0, worst16 = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      worstFp32 = std::max(worstFp32, std::abs(got[e] - p.ref[e]) / p.bound(e, false));
      worst16 = std::max(worst16, std::abs(got[e] - q.ref[e]) / q.bound(e));
    }
    qInfo("%s: worst error / fp32 bound on fp32 inputs %.1f; / bound on 16-bit inputs %.2f",
          fp16 ? "fp16" : "bf16", worstFp32, worst16);
    QVERIFY(worst16 <= 1);
    QVERIFY(worstFp32 > 10);
  }
}

// What the engine stores in 16 bits on a GPU is what it stores on the CPU, bit for bit, and the
// entries flushed to zero are counted alike: values from fp16's subnormals to past its largest.
void TstCudaHalfGemm::roundingKernelIsTheCpus() {
  REQUIRE_GPU();
  std::vector<float> values = randomVec(100000, 12, -1.f, 1.f);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] *= std::ldexp(1.f, int(i % 60) - 40);  // 2^-40 .. 2^19
  values[7] = NAN;
  values[8] = -INFINITY;
  for (bool fp16 : {false, true}) {
    std::vector<float> cpu = values;
    const int64_t flushedCpu = round_to_half(cpu.data(), int64_t(cpu.size()), fp16);
    Dev<float> gpu(values);
    Dev<unsigned long long> flushed(std::vector<unsigned long long>{5});
    round_half_cuda(gpu.p, long(values.size()), fp16, flushed.p);
    const std::vector<float> got = gpu.get();
    for (size_t i = 0; i < got.size(); ++i)
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(cpu[i]) &&
          !(std::isnan(got[i]) && std::isnan(cpu[i])))
        QFAIL(qPrintable(QString("%1(%2): GPU %3, CPU %4")
                             .arg(fp16 ? "fp16" : "bf16")
                             .arg(values[i])
                             .arg(got[i])
                             .arg(cpu[i])));
    QCOMPARE(int64_t(flushed.get()[0]) - 5, flushedCpu);  // added to what was there
    if (fp16) QVERIFY(flushedCpu > 1000);                 // the values below 2^-25
  }
}

// fp16's unscale: every gradient times 1/S, and an inf or NaN among the results is found.
void TstCudaHalfGemm::unscaleFindsOverflow() {
  REQUIRE_GPU();
  const std::vector<float> g = randomVec(5000, 13);
  Dev<float> clean(g);
  Dev<int> found(std::vector<int>{0});
  unscale_check_cuda(clean.p, long(g.size()), 0.25f, found.p);
  const std::vector<float> scaled = clean.get();
  for (size_t i = 0; i < g.size(); ++i) QCOMPARE(scaled[i], g[i] * 0.25f);
  QCOMPARE(found.get()[0], 0);
  std::vector<float> bad = g;
  bad[4321] = INFINITY;
  Dev<float> overflowed(bad);
  unscale_check_cuda(overflowed.p, long(bad.size()), 0.25f, found.p);
  QCOMPARE(found.get()[0], 1);
}

QTEST_GUILESS_MAIN(TstCudaHalfGemm)
#include "tst_cuda_gemm_16bit.moc"
