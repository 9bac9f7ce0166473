// The host execution layer (kernels/cuda/host/) does what a GPU does with the same source: the
// built-in indices, a block barrier, warp shuffles with masks and widths, atomics, WMMA at TF32
// precision, dynamic shared memory and its opt-in, launch configurations refused as the CUDA
// runtime refuses them; and its checks catch what a GPU would let pass: two bugs seeded in
// copies of gemm_tiled.cu (a barrier dropped, a row index shifted), a missing __syncwarp(), a
// deadlock, a diverged warp, a host pointer in a kernel. Each message names the kernel, the
// block and the thread. Run: ctest -R tst_cuda_host --output-on-failure
#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

#include <mma.h>  // the host execution layer's (kernels/cuda/host/include)

#include "cuda/check.h"
#include "cuda/gemm.h"
#include "cuda/host/block.h"
#include "gemm_reference.h"
#include "host_kernels.h"

using namespace paralab;
using paralab::cuda_host::KernelError;

Q_DECLARE_METATYPE(dim3)

namespace {

template <typename T>
struct Dev {  // device memory of the emulated GPU, freed on scope exit
  T* p = nullptr;
  size_t n;
  explicit Dev(const std::vector<T>& host) : n(host.size()) {
    PARALAB_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * n));
    PARALAB_CUDA_CHECK(cudaMemcpy(p, host.data(), sizeof(T) * n, cudaMemcpyHostToDevice));
  }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> host(n);
    PARALAB_CUDA_CHECK(cudaDeviceSynchronize());  // runs the queued kernels
    PARALAB_CUDA_CHECK(cudaMemcpy(host.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return host;
  }
};

// Runs the queued work and returns the message of the KernelError it throws ("" if none).
QString kernelError() {
  try {
    cudaDeviceSynchronize();
  } catch (const KernelError& e) {
    return e.what();
  }
  return {};
}

#define VERIFY_MESSAGE(message, ...)                                                       \
  do {                                                                                     \
    const QString m_ = (message);                                                          \
    qInfo("%s", qPrintable(m_));                                                           \
    for (const char* part : {__VA_ARGS__})                                                 \
      QVERIFY2(m_.contains(part), qPrintable("'" + m_ + "' does not say '" + part + "'")); \
  } while (0)

}  // namespace

class TstCudaHost : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { cuda_host::setChecks(true); }

  void indicesCoverTheGrid() {
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    const int threads = 24, blocks = 12;
    Dev<int> out(std::vector<int>(12 * threads * blocks, -1));
    test::host_indices(out.p, grid, block);
    const std::vector<int> got = out.get();
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t) {
        const int* r = &got[size_t(12 * (b * threads + t))];
        const int want[12] = {b % 3, b / 3 % 2, b / 6, t % 4, t / 4 % 3, t / 12, 4, 3, 2, 3, 2, 2};
        for (int k = 0; k < 12; ++k) QCOMPARE(r[k], want[k]);
      }
  }

  void barrierMakesWritesVisible() {
    std::vector<float> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
    Dev<float> d(v);
    test::host_reverse(d.p, 1000, true);
    const std::vector<float> got = d.get();
    for (size_t i = 0; i < v.size(); ++i) QCOMPARE(got[i], float(999 - i));
  }

  void missingBarrierIsARace() {
    Dev<float> d(std::vector<float>(64, 1.f));
    test::host_reverse(d.p, 64, false);
    // Threads run in turn: thread 31 reads buffer[32] before thread 32 writes it.
    VERIFY_MESSAGE(kernelError(), "reverse_kernel<false> block (0,0,0) thread (32,0,0)",
                   "write of shared buffer[32] read by thread (31,0,0)",
                   "with no __syncthreads() between (write-after-read hazard)");
  }

  void warpShuffles() {
    const int n = 128;
    std::vector<float> in(n);
    for (int i = 0; i < n; ++i) in[size_t(i)] = float(i % 7) + 0.25f * float(i);
    Dev<float> dIn(in), dOut(std::vector<float>(2 * n));
    test::host_warp_sums(dOut.p, dIn.p, n);
    const std::vector<float> got = dOut.get();
    for (int w = 0; w < n / 32; ++w) {
      float sum = 0;  // exact: small integers and quarters
      for (int l = 0; l < 32; ++l) sum += in[size_t(32 * w + l)];
      for (int l = 0; l < 32; ++l) {
        QCOMPARE(got[size_t(2 * (32 * w + l))], sum);                     // butterfly: every lane
        QCOMPARE(got[size_t(2 * (32 * w + l) + 1)], l == 0 ? sum : 0.f);  // tree: lane 0
      }
    }
  }

  void shuffleMaskAndWidth() {
    std::vector<float> in(32);
    for (int l = 0; l < 32; ++l) in[size_t(l)] = float(1 << (l % 16));
    Dev<float> dIn(in), dOut(std::vector<float>(32));
    test::host_half_warp(dOut.p, dIn.p);
    const std::vector<float> half = dOut.get();
    for (int l = 0; l < 32; ++l) QCOMPARE(half[size_t(l)], l < 16 ? 65535.f : in[size_t(l)]);
    test::host_halves(dOut.p, dIn.p);
    for (float v : dOut.get()) QCOMPARE(v, 65535.f);  // 1 + 2 + ... + 2^15 in each half
    Dev<int> w(std::vector<int>(96));
    test::host_width(w.p);
    const std::vector<int> got = w.get();
    for (int l = 0; l < 32; ++l) {
      const int group = l / 8 * 8;
      QCOMPARE(got[size_t(3 * l)], l - 1 >= group ? l - 1 : l);         // up 1
      QCOMPARE(got[size_t(3 * l + 1)], l + 3 < group + 8 ? l + 3 : l);  // down 3
      QCOMPARE(got[size_t(3 * l + 2)], group + 5);                      // from lane 5
    }
  }

  void atomicsAddAcrossBlocks() {
    std::vector<int> values(1000);
    std::vector<int> want(10, 0);
    for (int i = 0; i < 1000; ++i) values[size_t(i)] = (i * 7) % 10, ++want[size_t((i * 7) % 10)];
    Dev<int> dValues(values), bins(std::vector<int>(10, 0));
    test::host_histogram(bins.p, dValues.p, 1000);
    QCOMPARE(bins.get(), want);
  }

  // __float_to_tf32 keeps 10 mantissa bits, rounding to nearest with ties away from zero.
  void tf32Rounding() {
    using nvcuda::wmma::__float_to_tf32;
    const float ulp = std::ldexp(1.f, -10);  // TF32's spacing at 1
    QCOMPARE(__float_to_tf32(1.f + ulp / 4), 1.f);
    QCOMPARE(__float_to_tf32(1.f + ulp / 2), 1.f + ulp);  // a tie: away from zero
    QCOMPARE(__float_to_tf32(-(1.f + ulp / 2)), -(1.f + ulp));
    QCOMPARE(__float_to_tf32(1.f + 3 * ulp / 4), 1.f + ulp);
    QCOMPARE(__float_to_tf32(1.f + ulp / 2 - std::ldexp(1.f, -23)), 1.f);
    QVERIFY(std::isinf(__float_to_tf32(INFINITY)) && std::isnan(__float_to_tf32(NAN)));
  }

  // One warp's 16 x 16 x 8 MMA equals the product of the TF32-rounded inputs summed in fp32;
  // with unrounded inputs it would not (the check that rounding happened).
  void wmmaIsTf32() {
    std::mt19937 gen(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> a(128), b(128), c(256);
    for (float& x : a) x = u(gen);
    for (float& x : b) x = u(gen);
    for (float& x : c) x = u(gen);
    Dev<float> dA(a), dB(b), dC(c), dD(std::vector<float>(256));
    test::host_wmma(dD.p, dA.p, dB.p, dC.p);
    const std::vector<float> got = dD.get();
    double worstTf32 = 0, worstFp32 = 0;
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double tf32 = c[size_t(16 * i + j)], fp32 = tf32;
        for (int k = 0; k < 8; ++k) {
          tf32 += double(nvcuda::wmma::__float_to_tf32(a[size_t(8 * i + k)])) *
                  nvcuda::wmma::__float_to_tf32(b[size_t(16 * k + j)]);
          fp32 += double(a[size_t(8 * i + k)]) * b[size_t(16 * k + j)];
        }
        worstTf32 = std::max(worstTf32, std::abs(got[size_t(16 * i + j)] - tf32));
        worstFp32 = std::max(worstFp32, std::abs(got[size_t(16 * i + j)] - fp32));
      }
    qInfo("worst |D - ref|: %.3g against TF32 inputs, %.3g against fp32 inputs", worstTf32,
          worstFp32);
    QVERIFY2(worstTf32 <= 9 * std::ldexp(1.0, -24) * 10, "fp32 sums of exact TF32 products");
    QVERIFY2(worstFp32 > 1e-5, "the inputs were rounded to TF32");
  }

  void syncwarpOrdersTheEpilogue() {
    Dev<float> out(std::vector<float>(256));
    test::host_wmma_epilogue(out.p, true);
    for (float v : out.get()) QCOMPARE(v, 1.f);
    test::host_wmma_epilogue(out.p, false);
    VERIFY_MESSAGE(kernelError(), "wmma_epilogue_kernel<false> block (0,0,0) thread (",
                   "read of shared scratch[", "no __syncwarp() or __syncthreads() between",
                   "read-after-write hazard");
  }

  // As the CUDA runtime: the launch returns, cudaGetLastError() names the problem, nothing runs.
  void launchConfigurationErrors_data() {
    QTest::addColumn<dim3>("grid");
    QTest::addColumn<dim3>("block");
    QTest::addColumn<qulonglong>("shared");
    QTest::addColumn<int>("error");
    QTest::newRow("fine") << dim3(2) << dim3(1024) << 0ull << int(cudaSuccess);
    QTest::newRow("1025 threads") << dim3(1) << dim3(1025) << 0ull
                                  << int(cudaErrorInvalidConfiguration);
    QTest::newRow("32 x 33 threads")
        << dim3(1) << dim3(32, 33) << 0ull << int(cudaErrorInvalidConfiguration);
    QTest::newRow("block z 65") << dim3(1) << dim3(1, 1, 65) << 0ull
                                << int(cudaErrorInvalidConfiguration);
    QTest::newRow("grid x 0") << dim3(0) << dim3(32) << 0ull << int(cudaErrorInvalidConfiguration);
    QTest::newRow("grid y 65536") << dim3(1, 65536) << dim3(32) << 0ull
                                  << int(cudaErrorInvalidConfiguration);
    QTest::newRow("48 KiB shared") << dim3(1) << dim3(32) << 49152ull << int(cudaSuccess);
    QTest::newRow("48 KiB + 4 shared")
        << dim3(1) << dim3(32) << 49156ull << int(cudaErrorInvalidValue);
  }
  void launchConfigurationErrors() {
    QFETCH(dim3, grid);
    QFETCH(dim3, block);
    QFETCH(qulonglong, shared);
    QFETCH(int, error);
    test::host_empty(grid, block, shared);
    const cudaError_t got = cudaGetLastError();
    QCOMPARE(QString(cudaGetErrorString(got)), QString(cudaGetErrorString(cudaError_t(error))));
    QCOMPARE(cudaGetLastError(), cudaSuccess);  // read once, then cleared
    try {
      PARALAB_CUDA_CHECK(got);
    } catch (const std::runtime_error& e) {
      qInfo("%s", e.what());
    }
    QCOMPARE(kernelError(), QString());
  }

  void dynamicSharedMemoryAndItsOptIn() {
    const int n = 16384;  // 64 KiB: more than 48 without the opt-in
    Dev<float> out{std::vector<float>(size_t(n))};
    test::host_dynamic_shared(out.p, n, false);
    QCOMPARE(cudaGetLastError(), cudaErrorInvalidValue);
    test::host_dynamic_shared(out.p, n, true);
    QCOMPARE(cudaGetLastError(), cudaSuccess);
    const std::vector<float> got = out.get();
    for (int i = 0; i < n; ++i) QCOMPARE(got[size_t(i)], float(n - 1 - i));
  }

  void deadlockIsReportedNotHung() {
    Dev<float> out(std::vector<float>(64));
    test::host_deadlock(out.p);
    VERIFY_MESSAGE(
        kernelError(), "deadlock_kernel block (0,0,0) thread (",
        "deadlock: 32 threads wait at __syncthreads() while 32 lanes wait in __shfl_xor_sync");
  }

  void divergedWarpIsReported() {
    Dev<float> out(std::vector<float>(32));
    test::host_diverged(out.p);
    VERIFY_MESSAGE(kernelError(), "diverged_kernel block (0,0,0) thread (16,0,0)",
                   "__shfl_down_sync (mask 0xffffffff) while lanes of its warp wait in "
                   "__shfl_xor_sync (mask 0xffffffff): the warp has diverged");
  }

  void hostPointerInAKernelFaults() {
    std::vector<float> host(32, 1.f);
    Dev<float> out(std::vector<float>(32));
    test::host_read(out.p, host.data());
    VERIFY_MESSAGE(kernelError(), "read_kernel block (0,0,0) thread (0,0,0)",
                   "illegal memory access at an address that is no device memory");
  }

  // [SECTION] The seeded bugs: copies of gemm_tiled.cu, each with one mistake.

  // First __syncthreads() dropped: thread (0,0) reads the tiles before the others have written
  // them; the first writer after its read is reported.
  void seededMissingBarrierIsCaught() {
    VERIFY_MESSAGE(tiled40(kernels::gemm_cuda_tiled_missing_barrier),
                   "gemm_tiled_kernel<false, false> block (0,0,0) thread (1,0,0)",
                   "write of shared As[0][1] read by thread (0,0,0)",
                   "no __syncwarp() or __syncthreads() between (write-after-read hazard)");
  }

  // Row i0 + r + 1 of A loaded instead of i0 + r: the last row's threads read past the end of
  // A, into the guard page after it.
  void seededShiftedIndexIsCaught() {
    VERIFY_MESSAGE(tiled40(kernels::gemm_cuda_tiled_shifted_row),
                   "gemm_tiled_kernel<false, false> block (0,1,0) thread (0,7,0)",
                   "out-of-bounds global read at 0x",
                   "0 bytes past the end of a 6400-byte device allocation");
  }

  // Without the seeded bugs the same problem passes the same checks, and is right.
  void unseededTiledPassesTheChecks() {
    const test::GemmProblem p = test::makeGemmProblem(40, 40, 40, false, false, 1.f, 0.f, 0);
    Dev<float> A(p.A), B(p.B), C(p.C0);
    kernels::gemm_cuda_tiled(false, false, 40, 40, 40, 1.f, A.p, p.lda, B.p, p.ldb, 0.f, C.p, p.ldc,
                             nullptr);
    const std::vector<float> got = C.get();
    for (size_t e = 0; e < got.size(); ++e)
      QVERIFY(std::abs(got[e] - p.ref[e]) <= p.bound(e, false));
  }

 private:
  // A 40 x 40 x 40 product by a tiled rung; what its run threw ("" if nothing).
  static QString tiled40(kernels::GemmCudaFn gemm) {
    const test::GemmProblem p = test::makeGemmProblem(40, 40, 40, false, false, 1.f, 0.f, 0);
    Dev<float> A(p.A), B(p.B), C(p.C0);
    gemm(false, false, 40, 40, 40, 1.f, A.p, p.lda, B.p, p.ldb, 0.f, C.p, p.ldc, nullptr);
    return kernelError();
  }
};

QTEST_GUILESS_MAIN(TstCudaHost)
#include "tst_cuda_host.moc"
