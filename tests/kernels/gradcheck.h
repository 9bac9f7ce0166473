// The gradient checks' shared tools: random inputs, central finite differences against an
// analytic gradient, and the weighted-sum loss whose gradient is the weights. Double precision.
// Used by tst_layers_gradcheck.cpp and tst_attention_gradcheck.cpp.
#pragma once
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace gradcheck {

using Vec = std::vector<double>;

inline Vec randomVec(size_t n, std::mt19937& gen, double scale = 1.0) {
  std::normal_distribution<double> d(0.0, scale);
  Vec v(n);
  for (double& x : v) x = d(gen);
  return v;
}

// Checks d loss / d p[i] for every i against (loss(p + h) - loss(p - h)) / 2h.
inline void checkGradient(Vec& p, const Vec& analytic, const std::function<double()>& loss,
                          const char* what) {
  const double h = 1e-6;
  QCOMPARE(analytic.size(), p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double saved = p[i];
    p[i] = saved + h;
    const double up = loss();
    p[i] = saved - h;
    const double down = loss();
    p[i] = saved;
    const double numeric = (up - down) / (2 * h);
    // Central differences are O(h^2) accurate; double rounding adds ~1e-16 / h = 1e-10.
    const double tol = 1e-6 * std::max(1.0, std::abs(numeric));
    QVERIFY2(std::abs(numeric - analytic[i]) <= tol,
             qPrintable(QString("%1[%2]: numeric %3 analytic %4").arg(what).arg(i).arg(numeric).arg(analytic[i])));
  }
}

// A scalar loss of an output: sum(w .* y) with fixed random w, so dL/dy = w.
inline double weighted(const Vec& y, const Vec& w) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
  return s;
}

}  // namespace gradcheck
