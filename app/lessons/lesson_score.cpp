// The score over a lesson's predictions (lesson_score.h).
// See tests/lessons/tst_lessons_progress.cpp (scoreCountsFirstAttempts).
#include "lesson_score.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <vector>

namespace paralab::lessons {

LessonScore scoreLesson(const Lesson& lesson, const LessonProgress& progress,
                        const std::function<bool(const Step&)>& runnable) {
  LessonScore score;
  std::vector<double> misses;
  for (int i = 0; i < lesson.steps.size(); ++i) {
    const Step& s = lesson.steps[i];
    if (!s.prediction || !runnable(s)) continue;
    if (s.prediction->isChoice()) {
      ++score.choices;
      const QStringList picks = progress.choices.value(s.title);
      if (picks.isEmpty()) continue;
      ++score.choicesLocked;
      score.choicesRight += picks.first() == s.prediction->expectChoice;
      if (const auto m = progress.measuredChoices.find(s.title);
          m != progress.measuredChoices.end() && !m->answer.isEmpty()) {
        ++score.choicesMeasured;
        score.choicesMatched += picks.first() == m->answer;
      }
      continue;
    }
    ++score.predictions;
    const QList<double> attempts = progress.predictions.value(s.title);
    if (attempts.isEmpty()) continue;
    ++score.locked;
    const double first = attempts.first();
    QString error;
    if (const auto ref = referenceValue(*s.prediction, s.experiment.value_or(QJsonObject()), &error))
      score.nearReference += std::abs(first - *ref) <= LessonScore::kNear * std::abs(*ref);
    if (const auto m = progress.measured.find(s.title); m != progress.measured.end() && *m != 0) {
      ++score.measured;
      misses.push_back(100 * std::abs(first - *m) / std::abs(*m));
    }
  }
  if (!misses.empty()) {
    std::sort(misses.begin(), misses.end());
    const size_t n = misses.size();
    score.medianMissPercent = n % 2 ? misses[n / 2] : (misses[n / 2 - 1] + misses[n / 2]) / 2;
  }
  return score;
}

QString LessonScore::text() const {
  const auto tr = [](const char* s) { return QCoreApplication::translate("LessonScore", s); };
  if (predictions == 0 && choices == 0) return tr("This lesson asks for no predictions.");
  QString out;
  if (predictions > 0) {
    out = tr("Your score: %1 of %2 predictions within %3 % of the reference")
              .arg(nearReference)
              .arg(predictions)
              .arg(int(std::lround(kNear * 100)));
    if (locked < predictions) out += tr(" (%1 not locked in yet)").arg(predictions - locked);
    out += measured > 0
               ? tr("; against your own measurements, a median miss of %1 % (%2 measured).")
                     .arg(medianMissPercent, 0, 'f', medianMissPercent < 10 ? 1 : 0)
                     .arg(measured)
               : tr("; none of them measured yet.");
  }
  if (choices > 0) {
    if (!out.isEmpty()) out += " ";
    out += tr("%1: %2 of %3 first picks were the reference answer")
               .arg(predictions > 0 ? tr("Choices") : tr("Your score"))
               .arg(choicesRight)
               .arg(choices);
    if (choicesLocked < choices) out += tr(" (%1 not picked yet)").arg(choices - choicesLocked);
    out += choicesMeasured > 0 ? tr("; %1 of %2 matched your measurement.")
                                     .arg(choicesMatched)
                                     .arg(choicesMeasured)
                               : tr("; none of them measured yet.");
  }
  return out;
}

}  // namespace paralab::lessons
