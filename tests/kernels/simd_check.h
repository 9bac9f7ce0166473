// What the kernel tests that run a kernel at every vector level share: random inputs, the
// closeness check that names the level, and the levels this CPU runs. Used by
// tst_simd_levels.cpp and tst_attention_gemm.cpp.
#pragma once
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cpu/dispatch.h"

namespace paralab::kernels::test {

using Floats = std::vector<float>;

inline Floats randomFloats(size_t n, std::mt19937& gen, float scale = 1.f) {
  std::normal_distribution<float> d(0.f, scale);
  Floats v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// |got - want| <= tol * max(1, |want|) everywhere.
inline void checkClose(const Floats& got, const Floats& want, double tol, const QString& what) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    QVERIFY2(std::abs(double(got[i]) - want[i]) <= tol * std::max(1.0, std::abs(double(want[i]))),
             qPrintable(QString("%1 at %2 [%3]: %4 vs %5")
                            .arg(what, simdLevelName(simdLevel()))
                            .arg(i)
                            .arg(got[i])
                            .arg(want[i])));
}

// The levels this CPU runs, lowest first.
inline std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> out;
  for (int l = 0; l <= int(simdLevelCpu()); ++l) out.push_back(SimdLevel(l));
  return out;
}

// The kernels' exp (vec().expArray) at every level within `relative` of e^x in double, at
// every point of `x`.
inline void checkExpRelative(const Floats& x, double relative) {
  Floats y(x.size());
  for (SimdLevel l : levels()) {
    QVERIFY(setSimdLevel(l));
    vec().expArray(y.data(), x.data(), long(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(double(x[i]));
      QVERIFY2(std::abs(y[i] - want) <= relative * want,
               qPrintable(QString("exp(%1) at %2: %3 vs %4")
                              .arg(x[i])
                              .arg(simdLevelName(l))
                              .arg(y[i])
                              .arg(want)));
    }
  }
}

}  // namespace paralab::kernels::test
