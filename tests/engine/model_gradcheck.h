// The whole models' gradient check, shared by tst_model (MLP), tst_gpt and tst_moe: every
// parameter's analytic gradient against central finite differences of the fp32 model's loss,
// h = 1e-2 (fp32 rounding of ~1e-7 in the loss, divided by 2h, plus O(h^2) on top), so a
// looser tolerance than the double-precision layer checks (tests/kernels/gradcheck.h).
#pragma once
#include <QtTest>

#include <cmath>
#include <functional>
#include <vector>

#include "model/param_set.h"

namespace paralab::test {

struct GradientCheck {
  int64_t checked = 0;
  int64_t skipped = 0;  // parameters whose perturbation switched a discrete choice
};

// `loss` evaluates the loss at the current parameters (host memory). `switched` (may be empty)
// says, after an evaluation, whether a discrete choice moved (the MoE's routing), which makes
// the difference quotient meaningless: that parameter is skipped. `onChecked` (may be empty)
// sees each checked parameter's numeric gradient. Fails the running test at the first mismatch.
inline GradientCheck checkModelGradient(
    ParamSet& ps, const std::vector<float>& analytic, const std::function<double()>& loss,
    const std::function<bool()>& switched = {},
    const std::function<void(const ParamRef&, double)>& onChecked = {}) {
  GradientCheck out;
  float* p = ps.params().data();
  const float h = 1e-2f;
  for (const ParamRef& ref : ps.refs())
    for (int64_t i = ref.offset; i < ref.offset + ref.numel(); ++i) {
      const float saved = p[i];
      p[i] = saved + h;
      const double up = loss();
      const bool moved = switched && switched();
      p[i] = saved - h;
      const double down = loss();
      const bool moved2 = switched && switched();
      p[i] = saved;
      if (moved || moved2) {
        ++out.skipped;
        continue;
      }
      const double numeric = (up - down) / (2.0 * h);
      const double tol = 2e-3 + 2e-2 * std::abs(numeric);
      if (std::abs(numeric - analytic[size_t(i)]) > tol) {
        QTest::qFail(qPrintable(QString("%1[%2]: numeric %3 analytic %4")
                                    .arg(ref.name.c_str())
                                    .arg(i - ref.offset)
                                    .arg(numeric)
                                    .arg(analytic[size_t(i)])),
                     __FILE__, __LINE__);
        return out;
      }
      ++out.checked;
      if (onChecked) onChecked(ref, numeric);
    }
  return out;
}

}  // namespace paralab::test
