// LessonScore: the learner's score over a lesson's predictions. Each counts by its first attempt
// (a "try again" never improves the score): near the reference when within 10 % of the value
// its step's formula gives, and, where the step was run, its miss against the measurement.
// See tests/lessons/tst_lessons_progress.cpp (scoreCountsFirstAttempts).
#pragma once
#include <QString>
#include <functional>

#include "lesson.h"
#include "progress.h"

namespace paralab::lessons {

struct LessonScore {
  int predictions = 0;    // steps with a prediction the learner can run here
  int locked = 0;         // of those, locked in
  int nearReference = 0;  // first attempts within kNear of the reference
  int measured = 0;       // locked steps whose measurement was kept
  double medianMissPercent = 0;  // |first attempt - measured| / |measured|, over `measured`
  static constexpr double kNear = 0.10;
  // "5 of 8 predictions within 10 % of the reference; against your measurements, a median miss
  // of 23 % (6 measured)" — or what is missing for a score.
  QString text() const;
};

// `runnable` says whether a step can run on this machine (a step needing a GPU, without one,
// is left out of the score). Steps are keyed as Progress keys them: step index + 1.
LessonScore scoreLesson(const Lesson& lesson, const LessonProgress& progress,
                        const std::function<bool(const Step&)>& runnable);

}  // namespace paralab::lessons
