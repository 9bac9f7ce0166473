// RetrievalPage: a lesson's retrieval practice in the lessons panel — each question with room
// to write an answer first, then the model answer on request (the answer written is kept in
// the learner's progress). Scrolls: a lesson asks several questions.
// See tests/lessons/tst_lessons_dock.cpp (everyPageFitsANarrowDock).
#pragma once
#include <QScrollArea>

#include "lesson.h"
#include "progress.h"

class QVBoxLayout;

namespace paralab {

class RetrievalPage : public QScrollArea {
  Q_OBJECT
 public:
  explicit RetrievalPage(lessons::Progress& progress, QWidget* parent = nullptr);

  // The questions of `lesson`, each with the answer the learner wrote last time.
  void showLesson(const lessons::Lesson& lesson);

 signals:
  void saved();  // an answer was written to the progress file (its error() says if not)

 private:
  lessons::Progress& m_progress;
  QWidget* m_page = nullptr;
  QVBoxLayout* m_questions = nullptr;
};

}  // namespace paralab
