// LessonParser: one lesson.md's lines into a Lesson, or errors naming its file and line. The
// lines (front matter, headings, sections, fences) are read in lesson_parser.cpp, a step's blocks
// (experiment, sweep, prediction, compare, bench) checked in lesson_blocks.cpp. Private to the
// lesson library: parseLesson() (lesson.h) is the way in. See tests/lessons/tst_lessons_format.cpp.
#pragma once
#include <QJsonObject>
#include <QStringList>

#include "lesson.h"

namespace paralab::lessons {

class LessonParser {
 public:
  LessonParser(const QString& text, const QString& slug, const QString& path, int cores);
  ParseResult run();

 private:
  enum class Section { Intro, Step, Retrieval, Cards };

  void error(int line, const QString& what);
  // Returns the index of the first body line, or -1 when the front matter is unusable.
  int frontMatter();
  void checkNeeds(int line, const QStringList& needs);
  void body(int first);
  // The blocks of a step: experiment, sweep, prediction, compare, bench.
  void takeBlock(const QString& kind, int line, const QStringList& lines, Section section);
  // A ```prediction block with "choices": the learner picks one label; the run measures each.
  template <typename Bad>
  Prediction choicePrediction(const QJsonObject& o, const Bad& bad);
  // Checks that need the whole step: references into its experiment.
  void finishStep(Step& s);

  QStringList m_lines;
  QString m_where;
  int m_cores;  // what sweeps sized to the machine and "$cores" are resolved for
  Lesson m_lesson;
  QStringList m_errors;
};

}  // namespace paralab::lessons
