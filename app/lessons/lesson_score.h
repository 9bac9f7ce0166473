// LessonScore: the learner's score over a lesson's predictions. Each counts by its first attempt
// (a "try again" never improves the score): a number is near the reference when within 10 % of
// the value its step's formula gives, and, where the step was run, its miss against the
// measurement; a choice is right when it is the reference answer, and, where the step was run,
// matched when it is the measured answer.
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
  // Predictions with choices (not counted above).
  int choices = 0;         // steps with one the learner can run here
  int choicesLocked = 0;   // of those, picked
  int choicesRight = 0;    // first picks that are the reference answer
  int choicesMeasured = 0; // picked steps whose measured answer was kept
  int choicesMatched = 0;  // of those, first picks that are the measured answer
  // "5 of 8 predictions within 10 % of the reference; against your measurements, a median miss
  // of 23 % (6 measured). Choices: 2 of 3 first picks were the reference answer; 2 of 3 matched
  // your measurement." — or what is missing for a score.
  QString text() const;
};

// `runnable` says whether a step can run on this machine (a step needing a GPU, without one,
// is left out of the score). Steps are keyed as Progress keys them: step index + 1.
LessonScore scoreLesson(const Lesson& lesson, const LessonProgress& progress,
                        const std::function<bool(const Step&)>& runnable);

}  // namespace paralab::lessons
