// Every GPU kernel against the CPU: the GEMM ladder (fp32 and TF32 bounds, see
// gemm_reference.h), the training step's layers, the optimizers, the MoE's row gather,
// scatter-add, dot and scale, the communicators' reduction, and the teaching experiments (which
// must run and measure; their ratios are printed, not asserted). A GPT's attention and embedding
// are in tst_cuda_kernels_attention.cpp.
// Built twice from this file: tst_cuda_kernels runs the .cu source on the host (the emulated
// GPU: host execution, correctness only, with the shared-memory checks on; cuBLAS is not there,
// and the vendor rungs say so), tst_cuda_kernels_gpu on a real GPU (each row skips without one).
// Run: ctest -R tst_cuda_kernels --output-on-failure
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/moe.h"
#include "cpu/optim.h"
#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/gemm.h"
#include "cuda/layers.h"
#include "cuda/reduce.h"
#include "cuda/teach.h"
#include "device_compare.h"
#include "gemm_reference.h"

using namespace paralab::kernels;
using namespace paralab::test;

namespace {

bool isVendor(const GemmCudaKernel& k) { return std::string(k.name).rfind("vendor", 0) == 0; }

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
  // 1, primes, sizes around the 32-wide and 128-wide block tiles and the 16-deep k tiles, more
  // block-rows than the tensor-core rungs group (9 of 128 against 8: a last, partial group), and
  // one of whole tiles: 256 x 384 x 512 on a GPU, 128 x 256 x 64 on the host (a few seconds
  // less, and no edge case fewer).
  const int whole[3] = {onHost() ? 128 : 256, onHost() ? 256 : 384, onHost() ? 64 : 512};
  const int sizes[][3] = {
      {1, 1, 1},    {7, 7, 7},       {33, 17, 5},     {257, 33, 64},
      {5, 257, 33}, {130, 260, 300}, {1000, 129, 77}, {1100, 129, 5},
      {whole[0], whole[1], whole[2]}};
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
  const GemmProblem& p = sharedGemmProblem(M, N, K, ta, tb, alpha, beta, pad);
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
  const GemmProblem p = makeGemmProblem(200, 300, 100, false, false, 1.f, 0.f, 0);
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
        acc[size_t(index[r]) * cols + c] +=
            (weighted ? w[r] : 1.f) * gathered[size_t(r) * cols + c];
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
