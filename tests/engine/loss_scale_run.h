// fp16's dynamic loss scale watched over a run, in one place: tst_precision,
// tst_precision_accumulate, tst_precision_model_parallel and tst_precision_ps each check that an
// overflow anywhere skips the step on every rank and the scale follows; a forced overflow
// skips every step and moves nothing.
#pragma once
#include <QtTest>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace paralab::test {

// Runs `c` for `stepCount` steps with the scale doubling after every clean step (window 1), so
// it must overflow: every rank reports the step's scale and skipped steps, the scale halves
// after a skipped step and doubles after a clean one, and the run trains on. A caller checks
// QTest::currentTestFailed() after it.
inline void verifyScaleFollowsOverflows(RunConfig c, int stepCount) {
  c.lossScaleWindow = 1;
  QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
  Trainer t(c);
  std::vector<StepMetrics> steps;
  for (int s = 0; s < stepCount; ++s) steps.push_back(t.step());
  int64_t skipped = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const StepMetrics& m = steps[s];
    QVERIFY(m.lossScale && m.skippedSteps);
    for (const RankMetrics& r : m.ranks) {
      QCOMPARE(r.skippedSteps, m.skippedSteps);
      QCOMPARE(r.lossScale, m.lossScale);
    }
    if (s == 0) continue;
    const bool overflowed = *steps[s - 1].skippedSteps > skipped;
    skipped = *steps[s - 1].skippedSteps;
    QCOMPARE(*m.lossScale, *steps[s - 1].lossScale * (overflowed ? 0.5 : 2));
  }
  QVERIFY2(skipped > 0, "a scale doubled every step overflows");
  QVERIFY2(std::isfinite(steps.back().loss), "it trains on");
}

// Runs `c` at a fixed loss scale `scale` large enough to overflow every step: both steps are
// skipped on every rank (each counts 1, then 2) and the parameters stay as they were.
inline void verifyForcedOverflowSkips(RunConfig c, const std::string& scale) {
  c.lossScale = scale;
  QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
  Trainer t(c);
  const std::vector<float> start = t.saveState().params;
  for (int64_t s = 1; s <= 2; ++s) {
    const StepMetrics m = t.step();
    for (const RankMetrics& r : m.ranks) QCOMPARE(r.skippedSteps, std::optional<int64_t>(s));
    QCOMPARE(t.saveState().params, start);
  }
}

}  // namespace paralab::test
