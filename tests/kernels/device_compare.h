// What the GPU kernel suites share: a device copy of a host vector, seeded random inputs, and an
// element-wise comparison against the CPU that names the first element out of bounds. Used by
// tst_cuda_kernels and tst_cuda_kernels_attention (each built for the emulated and a real GPU).
#pragma once
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cuda/check.h"
#include "cuda/device.h"

namespace paralab::test {

inline bool haveGpu() { return kernels::cuda_query_devices().count > 0; }
// The kernels run on the host (the emulated GPU), not on a GPU.
inline bool onHost() { return kernels::cuda_query_devices().emulated; }

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

inline std::vector<float> randomVec(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

inline std::vector<float> zeros(size_t n) { return std::vector<float>(n, 0.f); }

// |got - want| <= abs + rel |want| everywhere; names the first element that is not (the message
// is made only then: QVERIFY2 would format it for every element). A NaN fails: an output a
// kernel never wrote, where the test filled it with NaN first.
inline void expectNear(const std::vector<float>& got, const std::vector<float>& want, double abs,
                       double rel, const char* what) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(double(got[i]) - want[i]) <= abs + rel * std::abs(double(want[i]))))
      QFAIL(
          qPrintable(QString("%1[%2]: GPU %3, CPU %4").arg(what).arg(i).arg(got[i]).arg(want[i])));
}

}  // namespace paralab::test

// Skips the test function (in initTestCase: the whole suite) where no GPU, real or emulated,
// answers, naming why.
#define REQUIRE_GPU()                                                                           \
  do {                                                                                          \
    if (!paralab::test::haveGpu())                                                              \
      QSKIP(qPrintable("no GPU: " +                                                             \
                       QString::fromStdString(paralab::kernels::cuda_query_devices().reason))); \
  } while (0)
