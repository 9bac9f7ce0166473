// Every GPU kernel against the CPU: the GEMM ladder (fp32 and TF32 bounds, see
// gemm_reference.h), the training step's layers, a GPT's attention and embedding, the
// optimizers, the MoE's row gather, scatter-add, dot and scale, the communicators' reduction,
// and the teaching experiments (which must run and measure; their ratios are printed, not
// asserted).
// Built twice from this file: tst_cuda_kernels runs the .cu source on the host (the emulated
// GPU: host execution, correctness only, with the shared-memory checks on; cuBLAS is not there,
// and the vendor rungs say so), tst_cuda_kernels_gpu on a real GPU (each row skips without one).
// Run: ctest -R tst_cuda_kernels --output-on-failure
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/attention.h"
#include "cpu/attention_blocks.h"
#include "cpu/embedding.h"
#include "cpu/layers.h"
#include "cpu/moe.h"
#include "cpu/optim.h"
#include "cuda/attention.h"
#include "cuda/attention_blocks.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "cuda/layers.h"
#include "cuda/reduce.h"
#include "cuda/teach.h"
#include "gemm_reference.h"

using namespace paralab::kernels;
using paralab::test::GemmProblem;

namespace {

bool haveGpu() { return cuda_query_devices().count > 0; }
// The kernels run on the host (the emulated GPU), not on a GPU.
bool onHost() { return cuda_query_devices().emulated; }
bool isVendor(const GemmCudaKernel& k) { return std::string(k.name).rfind("vendor", 0) == 0; }
#define REQUIRE_GPU()                                                           \
  do {                                                                          \
    if (!haveGpu()) QSKIP(qPrintable("no GPU: " + QString::fromStdString(cuda_query_devices().reason))); \
  } while (0)

// A device copy of a host vector, copied back on request, freed on scope exit.
template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<T>& host) : n(host.size()) {
    PARALAB_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * std::max<size_t>(1, n)));
    if (n) PARALAB_CUDA_CHECK(cudaMemcpy(p, host.data(), sizeof(T) * n, cudaMemcpyHostToDevice));
  }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> host(n);
    PARALAB_CUDA_CHECK(cudaDeviceSynchronize());  // surfaces errors of the kernels before
    if (n) PARALAB_CUDA_CHECK(cudaMemcpy(host.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return host;
  }
};

std::vector<float> randomVec(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

std::vector<float> zeros(size_t n) { return std::vector<float>(n, 0.f); }

// |got - want| <= abs + rel |want| everywhere; names the first element that is not (the message
// is made only then: QVERIFY2 would format it for every element). A NaN fails: an output a
// kernel never wrote, where the test filled it with NaN first.
void expectNear(const std::vector<float>& got, const std::vector<float>& want, double abs,
                double rel, const char* what) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(double(got[i]) - want[i]) <= abs + rel * std::abs(double(want[i]))))
      QFAIL(
          qPrintable(QString("%1[%2]: GPU %3, CPU %4").arg(what).arg(i).arg(got[i]).arg(want[i])));
}

}  // namespace

class TstCudaKernels : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void registryNamesTheLadder();
  void checkMacroNamesTheCall();
  void gemmMatchesReference_data();
  void gemmMatchesReference();
  void gemmOnAStream();
  void vendorRungsNeedARealGpu();
  void biasAndResidual();
  void gelu();
  void layernorm();
  void softmaxCrossEntropy();
  void optimizers();
  void gatherScatter();
  void rowDotAndScale();
  void attention_data();
  void attention();
  void attentionTiled_data();
  void attentionTiled();
  void attentionTiledRejectsLargeHeads();
  void attentionBlocks_data();
  void attentionBlocks();
  void stridedRows();
  void embedding();
  void deviceReduction();
  void teachingExperiments();
};

void TstCudaKernels::initTestCase() {
  const GpuInfo gpu = cuda_query_devices();
  qInfo("device: %s", gpu.count ? gpu.firstName.c_str() : gpu.reason.c_str());
  REQUIRE_GPU();  // the whole suite, reported as skipped (tests/CMakeLists.txt)
}

void TstCudaKernels::registryNamesTheLadder() {
  const char* names[] = {"naive", "coalesced", "tiled", "tensor-core", "vendor", "vendor-tf32"};
  QCOMPARE(std::size(kGemmCudaKernels), std::size(names));
  for (size_t i = 0; i < std::size(names); ++i) {
    QCOMPARE(QString(kGemmCudaKernels[i].name), QString(names[i]));
    QVERIFY(gemm_cuda_find(names[i]) == kGemmCudaKernels[i].fn);
  }
  QVERIFY(gemm_cuda_find("tensor_core") == nullptr);
}

void TstCudaKernels::checkMacroNamesTheCall() {
  REQUIRE_GPU();
  try {
    PARALAB_CUDA_CHECK(cudaSetDevice(1 << 20));
    QFAIL("an invalid device must throw");
  } catch (const std::runtime_error& e) {
    const QString what = e.what();
    QVERIFY2(what.contains("tst_cuda_kernels.cpp:") && what.contains("cudaSetDevice"), e.what());
  }
}

void TstCudaKernels::gemmMatchesReference_data() {
  QTest::addColumn<QString>("kernel");
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  QTest::addColumn<float>("alpha");
  QTest::addColumn<float>("beta");
  QTest::addColumn<int>("pad");
  // 1, primes, sizes around the 32-wide and 128-wide block tiles and the 16-deep k tiles, and
  // one of whole tiles: 256 x 384 x 512 on a GPU, 128 x 256 x 64 on the host (a few seconds
  // less, and no edge case fewer).
  const int whole[3] = {onHost() ? 128 : 256, onHost() ? 256 : 384, onHost() ? 64 : 512};
  const int sizes[][3] = {
      {1, 1, 1},    {7, 7, 7},       {33, 17, 5},     {257, 33, 64},
      {5, 257, 33}, {130, 260, 300}, {1000, 129, 77}, {whole[0], whole[1], whole[2]}};
  const float scalars[][2] = {{0.5f, 2.0f}, {1.0f, 0.0f}, {-1.5f, 1.0f}};
  for (const GemmCudaKernel& k : kGemmCudaKernels)
    for (auto& s : sizes)
      if (!(onHost() && isVendor(k)))  // cuBLAS: vendorRungsNeedARealGpu
        for (int t = 0; t < 4; ++t) {
          const float* sc = scalars[(t + s[0]) % 3];
          const int pad = t == 1 ? 3 : 0;
          QTest::addRow("%s %dx%dx%d ta=%d tb=%d a=%g b=%g pad=%d", k.name, s[0], s[1], s[2], t & 1,
                        t >> 1, sc[0], sc[1], pad)
              << QString(k.name) << s[0] << s[1] << s[2] << bool(t & 1) << bool(t >> 1) << sc[0]
              << sc[1] << pad;
        }
}

void TstCudaKernels::gemmMatchesReference() {
  REQUIRE_GPU();
  QFETCH(QString, kernel);
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  QFETCH(float, alpha);
  QFETCH(float, beta);
  QFETCH(int, pad);
  const GemmProblem& p = paralab::test::sharedGemmProblem(M, N, K, ta, tb, alpha, beta, pad);
  const GemmCudaKernel* k = nullptr;
  for (const GemmCudaKernel& x : kGemmCudaKernels)
    if (kernel == x.name) k = &x;
  QVERIFY(k);
  const bool tf32 = QString(k->precision) == "tf32";
  std::vector<float> C0 = p.C0;
  if (beta == 0.f)  // beta == 0 must not read C
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C0[size_t(i) * p.ldc + j] = NAN;
  Dev<float> A(p.A), B(p.B), C(C0);
  k->fn(ta, tb, M, N, K, alpha, A.p, p.lda, B.p, p.ldb, beta, C.p, p.ldc, nullptr);
  const std::vector<float> got = C.get();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < p.ldc; ++j) {
      const float g = got[size_t(i) * p.ldc + j];
      if (j >= N) {
        QVERIFY2(g == p.C0[size_t(i) * p.ldc + j], "wrote into the padding between rows");
        continue;
      }
      const size_t e = size_t(i) * N + j;
      if (std::abs(g - p.ref[e]) > p.bound(e, tf32))  // the message only for a failure: it is slow
        QFAIL(qPrintable(QString("C(%1, %2) = %3, expected %4 +- %5")
                             .arg(i)
                             .arg(j)
                             .arg(g)
                             .arg(p.ref[e])
                             .arg(p.bound(e, tf32))));
    }
}

// Every launcher takes a stream; work on a non-blocking stream is done after syncing it.
void TstCudaKernels::gemmOnAStream() {
  REQUIRE_GPU();
  const GemmProblem p = paralab::test::makeGemmProblem(200, 300, 100, false, false, 1.f, 0.f, 0);
  cudaStream_t s;
  PARALAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const GemmCudaKernel& k : kGemmCudaKernels) {
    if (onHost() && isVendor(k)) continue;
    Dev<float> A(p.A), B(p.B), C(p.C0);
    k.fn(false, false, p.M, p.N, p.K, 1.f, A.p, p.lda, B.p, p.ldb, 0.f, C.p, p.ldc, s);
    PARALAB_CUDA_CHECK(cudaStreamSynchronize(s));
    const std::vector<float> got = C.get();
    for (size_t e = 0; e < got.size(); ++e)
      QVERIFY2(std::abs(got[e] - p.ref[e]) <= p.bound(e, QString(k.precision) == "tf32"), k.name);
  }
  cudaStreamDestroy(s);
}

// The emulated GPU has no cuBLAS: its vendor rungs refuse, naming what runs instead, rather
// than computing something else under cuBLAS's name.
void TstCudaKernels::vendorRungsNeedARealGpu() {
  REQUIRE_GPU();
  if (!onHost()) QSKIP("a real GPU has cuBLAS: its rungs run in gemmMatchesReference");
  Dev<float> A(zeros(4)), B(zeros(4)), C(zeros(4));
  for (const GemmCudaKernel& k : kGemmCudaKernels) {
    if (!isVendor(k)) continue;
    try {
      k.fn(false, false, 2, 2, 2, 1.f, A.p, 2, B.p, 2, 0.f, C.p, 2, nullptr);
      QFAIL(qPrintable(QString(k.name) + " ran on the emulated GPU"));
    } catch (const std::runtime_error& e) {
      qInfo("%s", e.what());
      QVERIFY2(QString(e.what()).contains("cuBLAS needs a real GPU"), e.what());
    }
  }
}

void TstCudaKernels::biasAndResidual() {
  REQUIRE_GPU();
  for (auto [rows, cols] : {std::pair{1, 1}, {7, 33}, {300, 257}, {1000, 5}}) {
    const std::vector<float> y0 = randomVec(size_t(rows) * cols, 1), b0 = randomVec(cols, 2);
    std::vector<float> y = y0, db(cols, 0.5f);
    Dev<float> dy(y0), dbias(b0), ddb(db);
    bias_add(y.data(), b0.data(), rows, cols);
    bias_add_cuda(dy.p, dbias.p, rows, cols);
    expectNear(dy.get(), y, 0, 0, "bias_add");  // one add per element: exact
    bias_backward(db.data(), y0.data(), rows, cols);
    Dev<float> dgrad(y0);
    bias_backward_cuda(ddb.p, dgrad.p, rows, cols);
    // Sums of `rows` terms in another order: fp32 bound rows * 2^-24 * sum |dy| <= rows^2 6e-8.
    expectNear(ddb.get(), db, 1.2e-7 * rows * rows, 0, "bias_backward");
    const std::vector<float> x = randomVec(y0.size(), 3);
    std::vector<float> r = y0;
    for (size_t i = 0; i < r.size(); ++i) r[i] += x[i];
    Dev<float> dr(y0), dx(x);
    residual_add_cuda(dr.p, dx.p, long(r.size()));
    expectNear(dr.get(), r, 0, 0, "residual_add");
  }
}

void TstCudaKernels::gelu() {
  REQUIRE_GPU();
  const long n = 100003;
  const std::vector<float> x = randomVec(n, 4, -6.f, 6.f), dy = randomVec(n, 5);
  std::vector<float> y(n), dx(n);
  gelu_forward(y.data(), x.data(), n);
  gelu_backward(dx.data(), x.data(), dy.data(), n);
  Dev<float> dX(x), dY(zeros(n)), dDy(dy);
  gelu_forward_cuda(dY.p, dX.p, n);
  // The CPU's fp32 GELU uses its own tanh (absolute error ~1e-7), the GPU tanhf: both within
  // a few ulps of the true value, scaled by |x| <= 6.
  expectNear(dY.get(), y, 2e-6, 1e-6, "gelu_forward");
  gelu_backward_cuda(dDy.p, dX.p, dDy.p, n);  // in place, as the MLP calls it
  expectNear(dDy.get(), dx, 2e-6, 1e-6, "gelu_backward");
}

void TstCudaKernels::layernorm() {
  REQUIRE_GPU();
  for (auto [rows, cols] : {std::pair{1, 1}, {3, 31}, {17, 256}, {64, 1000}}) {
    const size_t n = size_t(rows) * cols;
    const std::vector<float> x = randomVec(n, 6, -2.f, 3.f), g = randomVec(cols, 7),
                             b = randomVec(cols, 8), dy = randomVec(n, 9);
    std::vector<float> y(n), mean(rows), rstd(rows), dx(n), dg(cols, 0.25f), dbt(cols, -0.5f);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), rows, cols);
    layernorm_backward(dx.data(), dg.data(), dbt.data(), dy.data(), x.data(), mean.data(),
                       rstd.data(), g.data(), rows, cols);
    Dev<float> dX(x), dG(g), dB(b), dY(zeros(n)), dMean(mean), dRstd(rstd);
    layernorm_forward_cuda(dY.p, dMean.p, dRstd.p, dX.p, dG.p, dB.p, rows, cols);
    // Row sums of `cols` terms in another order: relative error ~ cols * 2^-24 on the sums.
    const double tol = 2e-7 * (cols + 8);
    expectNear(dMean.get(), mean, tol, tol, "layernorm mean");
    expectNear(dRstd.get(), rstd, tol, tol, "layernorm rstd");
    expectNear(dY.get(), y, 4 * tol, tol, "layernorm y");
    for (bool inPlace : {false, true}) {  // the MLP passes dx == dy
      Dev<float> dDy(dy), dDx(zeros(n)), dDg(std::vector<float>(size_t(cols), 0.25f)),
          dDb(std::vector<float>(cols, -0.5f));
      float* out = inPlace ? dDy.p : dDx.p;
      layernorm_backward_cuda(out, dDg.p, dDb.p, dDy.p, dX.p, dMean.p, dRstd.p, dG.p, rows, cols);
      expectNear(inPlace ? dDy.get() : dDx.get(), dx, 8 * tol, 4 * tol, "layernorm dx");
      expectNear(dDg.get(), dg, 4e-7 * (rows + 8), 4 * tol, "layernorm dgamma");
      expectNear(dDb.get(), dbt, 4e-7 * (rows + 8), 4 * tol, "layernorm dbeta");
    }
  }
}

void TstCudaKernels::softmaxCrossEntropy() {
  REQUIRE_GPU();
  for (auto [rows, classes] : {std::pair{1, 1}, {5, 10}, {1000, 10}, {33, 1000}, {0, 10}}) {
    const std::vector<float> z = randomVec(size_t(rows) * classes, 10, -8.f, 8.f);
    std::vector<int> labels(rows);
    for (int r = 0; r < rows; ++r) labels[r] = (r * 7 + 3) % classes;
    const double norm = 2.0 * rows + 1;
    std::vector<float> dz(z.size());
    const double loss = softmax_xent(dz.data(), z.data(), labels.data(), rows, classes, norm);
    const int correct = count_correct(z.data(), labels.data(), rows, classes);
    Dev<float> dZ(z), dDz(zeros(z.size()));
    Dev<int> dLabels(labels), dCorrect(std::vector<int>{-1});
    Dev<double> dLoss(std::vector<double>{-1.0});
    softmax_xent_cuda(dDz.p, dLoss.p, dCorrect.p, dZ.p, dLabels.p, rows, classes, norm);
    const double gotLoss = dLoss.get()[0];
    QVERIFY2(std::abs(gotLoss - loss) <= 1e-5 * (std::abs(loss) + rows),
             qPrintable(QString("loss GPU %1 CPU %2").arg(gotLoss).arg(loss)));
    QCOMPARE(dCorrect.get()[0], correct);
    expectNear(dDz.get(), dz, 1e-6 / norm * classes, 1e-5, "dlogits");
  }
  // Ties go to the first arg-max, as std::max_element: row [1, 3, 3] with label 1 is correct.
  Dev<float> z(std::vector<float>{1, 3, 3}), dz(zeros(3));
  Dev<int> label(std::vector<int>{1}), correct(std::vector<int>{-1});
  Dev<double> loss(std::vector<double>{0});
  softmax_xent_cuda(dz.p, loss.p, correct.p, z.p, label.p, 1, 3, 1.0);
  QCOMPARE(correct.get()[0], 1);
}

void TstCudaKernels::optimizers() {
  REQUIRE_GPU();
  const long n = 70001;
  const std::vector<float> p0 = randomVec(n, 11), g = randomVec(n, 12);
  std::vector<float> p = p0, v(n, 0.f), m(n, 0.f), vv(n, 0.f);
  Dev<float> dP(p0), dG(g), dV(v);
  for (int step = 0; step < 3; ++step) {
    sgd_update(p.data(), g.data(), n, 0.1f);
    sgd_update_cuda(dP.p, dG.p, n, 0.1f);
  }
  expectNear(dP.get(), p, 1e-6, 1e-6, "sgd");
  p = p0;
  Dev<float> dP2(p0);
  for (int step = 0; step < 3; ++step) {
    momentum_update(p.data(), v.data(), g.data(), n, 0.1f, 0.9f);
    momentum_update_cuda(dP2.p, dV.p, dG.p, n, 0.1f, 0.9f);
  }
  expectNear(dP2.get(), p, 1e-6, 1e-6, "momentum p");
  expectNear(dV.get(), v, 1e-6, 1e-6, "momentum v");
  p = p0;
  Dev<float> dP3(p0), dM(m), dVV(vv);
  for (long t = 1; t <= 3; ++t) {
    adam_update(p.data(), m.data(), vv.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, t);
    adam_update_cuda(dP3.p, dM.p, dVV.p, dG.p, n, 1e-3f, 0.9f, 0.999f, 1e-8f, t);
  }
  // The step lr * mhat / (sqrt(vhat) + eps) is ~lr in size; fused multiply-adds on the GPU
  // change it in the last bits only.
  expectNear(dP3.get(), p, 1e-6, 1e-6, "adam p");
  expectNear(dM.get(), m, 1e-7, 1e-5, "adam m");
  expectNear(dVV.get(), vv, 1e-9, 1e-5, "adam v");
}

void TstCudaKernels::gatherScatter() {
  REQUIRE_GPU();
  const int srcRows = 50, rows = 173, cols = 37;
  const std::vector<float> in = randomVec(size_t(srcRows) * cols, 13), w = randomVec(rows, 14);
  std::vector<int> index(rows);
  for (int r = 0; r < rows; ++r) index[r] = (r * 31 + 7) % srcRows;  // repeats: 173 rows onto 50
  std::vector<float> gathered(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) gathered[size_t(r) * cols + c] = in[size_t(index[r]) * cols + c];
  Dev<float> dIn(in), dOut(zeros(gathered.size())), dW(w);
  Dev<int> dIndex(index);
  gather_rows_cuda(dOut.p, dIn.p, dIndex.p, rows, cols);
  expectNear(dOut.get(), gathered, 0, 0, "gather_rows");  // copies: exact
  for (bool weighted : {false, true}) {
    std::vector<float> acc = in;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        acc[size_t(index[r]) * cols + c] += (weighted ? w[r] : 1.f) * gathered[size_t(r) * cols + c];
    Dev<float> dAcc(in);
    scatter_add_rows_cuda(dAcc.p, dOut.p, dIndex.p, weighted ? dW.p : nullptr, rows, cols);
    // Up to 4 rows meet per destination, added in any order: a few fp32 roundings.
    expectNear(dAcc.get(), acc, 1e-6, 1e-6, "scatter_add_rows");
  }
}

// The MoE backward's dgate (row dots against gathered rows, summed in double on both sides) and
// dsend (rows scaled by their gates) against kernels/cpu.
void TstCudaKernels::rowDotAndScale() {
  REQUIRE_GPU();
  const int srcRows = 50, rows = 173, cols = 37;  // cols not a multiple of the warp
  const std::vector<float> a = randomVec(size_t(srcRows) * cols, 15),
                           b = randomVec(size_t(rows) * cols, 16), w = randomVec(rows, 17);
  std::vector<int> index(rows);
  for (int r = 0; r < rows; ++r) index[r] = (r * 17 + 3) % srcRows;
  std::vector<float> dots(rows);
  dot_rows(dots.data(), a.data(), index.data(), b.data(), rows, cols);
  Dev<float> dA(a), dB(b), dOut(zeros(rows)), dW(w);
  Dev<int> dIndex(index);
  dot_rows_cuda(dOut.p, dA.p, dIndex.p, dB.p, rows, cols);
  // Double sums of the same products in another order: equal once rounded to float, or 1 ulp.
  expectNear(dOut.get(), dots, 1e-7, 1e-7, "dot_rows");
  std::vector<float> scaled = b;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) scaled[size_t(r) * cols + c] *= w[r];
  scale_rows_cuda(dB.p, dW.p, rows, cols);
  expectNear(dB.get(), scaled, 0, 0, "scale_rows");  // one product each: exact
}

// Causal multi-head attention (probs, forward, backward) against the CPU's float version on the
// same inputs. Rows: T = 1 (a token sees only itself: P = 1, dq = dk = 0), NH = hs = 1, T not a
// multiple of anything, several heads and sequences.
void TstCudaKernels::attention_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("C");
  QTest::addColumn<int>("NH");
  for (auto [B, T, C, NH] : {std::array{1, 1, 1, 1}, std::array{2, 1, 8, 2},
                             std::array{2, 9, 1, 1}, std::array{2, 17, 12, 3},
                             std::array{3, 33, 64, 4}, std::array{1, 64, 32, 1}})
    QTest::addRow("B=%d T=%d C=%d NH=%d", B, T, C, NH) << B << T << C << NH;
}

void TstCudaKernels::attention() {
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
  attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                     NH);
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
void TstCudaKernels::attentionTiled_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("C");
  QTest::addColumn<int>("NH");
  for (auto [B, T, C, NH] :
       {std::array{1, 1, 8, 1}, std::array{2, 5, 16, 2}, std::array{2, 32, 32, 2},
        std::array{2, 33, 64, 2}, std::array{3, 70, 48, 3}, std::array{1, 64, 96, 12},
        std::array{1, 100, 64, 1}})
    QTest::addRow("B=%d T=%d C=%d NH=%d hs=%d", B, T, C, NH, C / NH) << B << T << C << NH;
}

void TstCudaKernels::attentionTiled() {
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
void TstCudaKernels::attentionTiledRejectsLargeHeads() {
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
void TstCudaKernels::attentionBlocks_data() {
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

void TstCudaKernels::attentionBlocks() {
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
  QCOMPARE(attention_block_forward(o.data(), m.data(), l.data(), scratch.data(), qkv.data(),
                                   3 * C, kv.data(), kv.data() + C, 2 * C, B, NH, hs, q0, Tq, k0,
                                   Tk),
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
  Dev<float> dQkv(qkv), dKv(kv), dDout(dout), dO(nans(o.size())), dM(nans(stats)),
      dL(nans(stats)), dOut(nans(out.size())), dLse(nans(stats)), dD(nans(stats)), dDqkv(dqkv0),
      dDkv(dkv0);
  attention_blocks_init_cuda(dO.p, dM.p, dL.p, B, Tq, NH, hs);
  QCOMPARE(attention_block_forward_cuda(dO.p, dM.p, dL.p, dQkv.p, 3 * C, dQkv.p + C,
                                        dQkv.p + 2 * C, 3 * C, B, NH, hs, q0, Tq, q0, Tq),
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
  QCOMPARE(attention_block_forward_cuda(dO.p, dM.p, dL.p, dQkv.p, 3 * C, dKv.p, dKv.p + C, 2 * C,
                                        B, NH, hs, q0, Tq, k0, Tk),
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
  attention_block_backward_cuda(dDqkv.p, dDqkv.p + C, dDqkv.p + 2 * C, dDout.p, dLseCpu.p,
                                dDCpu.p, dQkv.p, 3 * C, dQkv.p + C, dQkv.p + 2 * C, 3 * C, B, NH,
                                hs, q0, Tq, q0, Tq);
  const std::vector<float> dqkvDiag = dDqkv.get();
  QCOMPARE(attention_block_backward_cuda(dDqkv.p, dDkv.p, dDkv.p + C, dDout.p, dLseCpu.p, dDCpu.p,
                                         dQkv.p, 3 * C, dKv.p, dKv.p + C, 2 * C, B, NH, hs, q0,
                                         Tq, k0, Tk),
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
void TstCudaKernels::stridedRows() {
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
void TstCudaKernels::embedding() {
  REQUIRE_GPU();
  for (auto [B, T, C, V] : {std::array{1, 1, 1, 1}, std::array{2, 7, 5, 3},
                            std::array{3, 16, 33, 50}}) {
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

// The communicators' device reduction (ThreadComm's device path) against a host loop: sums and
// maxima over up to 40 sources (two launches past the 32 a launch carries), averaged.
void TstCudaKernels::deviceReduction() {
  REQUIRE_GPU();
  const int64_t count = 3001;
  for (int nsrc : {1, 3, 40})
    for (DeviceReduce op : {DeviceReduce::Sum, DeviceReduce::Max}) {
      std::vector<std::vector<float>> host;
      std::vector<std::unique_ptr<Dev<float>>> dev;
      std::vector<const float*> srcs;
      for (int k = 0; k < nsrc; ++k) {
        host.push_back(randomVec(size_t(count), unsigned(20 + k)));
        dev.push_back(std::make_unique<Dev<float>>(host.back()));
        srcs.push_back(dev.back()->p);
      }
      const float divisor = op == DeviceReduce::Sum ? float(nsrc) : 1.f;
      std::vector<float> want(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        float acc = host[0][size_t(i)];  // in source order, as the kernel combines them
        for (int k = 1; k < nsrc; ++k)
          acc = op == DeviceReduce::Max ? std::max(acc, host[size_t(k)][size_t(i)])
                                        : acc + host[size_t(k)][size_t(i)];
        want[size_t(i)] = divisor != 1.f ? acc / divisor : acc;
      }
      Dev<float> out(zeros(size_t(count)));
      reduce_device(out.p, srcs.data(), nsrc, count, op, divisor, nullptr);
      expectNear(out.get(), want, 0, 0, "reduce_device");  // the same adds in the same order
      // dst may be a source: each element is read from every source before it is written.
      reduce_device(dev[0]->p, srcs.data(), nsrc, count, op, divisor, nullptr);
      expectNear(dev[0]->get(), want, 0, 0, "reduce_device in place");
    }
}

// On a GPU the experiments time the hardware. On the host they only show that the kernels run:
// the times are the host's, not a GPU's, and say nothing about divergence or coalescing.
void TstCudaKernels::teachingExperiments() {
  REQUIRE_GPU();
  const bool host = onHost();
  const char* label = host ? " (host execution: not GPU times)" : "";
  const WarpDivergenceResult d =
      warp_divergence_experiment(host ? 1L << 12 : 1L << 20, host ? 1 : 3);
  QVERIFY(d.divergentMs > 0 && d.uniformMs > 0);
  qInfo("warp divergence, %ld threads: branch on thread %.3f ms, on warp %.3f ms, ratio %.2fx%s",
        d.elements, d.divergentMs, d.uniformMs, d.slowdown(), label);
  const CoalescingResult c = coalescing_experiment(host ? 1L << 14 : 1L << 22, 32, host ? 1 : 3);
  QVERIFY(c.coalescedGBs > 0 && c.stridedGBs > 0);
  qInfo("coalescing, %ld floats: stride 1 %.1f GB/s, stride %d %.1f GB/s%s", c.elements,
        c.coalescedGBs, c.stride, c.stridedGBs, label);
}

QTEST_GUILESS_MAIN(TstCudaKernels)
#include "tst_cuda_kernels.moc"
