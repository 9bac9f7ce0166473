// RetrievalPage: a lesson's retrieval practice in the lessons panel — each question with room
// to write an answer first, then the model answer on request (the answer written is kept in
// the learner's progress), its glossary terms as hover links. Scrolls: a lesson asks several
// questions.
// See tests/lessons/tst_lessons_dock.cpp (everyPageFitsANarrowDock).
#pragma once
#include <QScrollArea>

#include "glossary.h"
#include "lesson.h"
#include "progress.h"

class QVBoxLayout;

namespace paralab {

class RetrievalPage : public QScrollArea {
  Q_OBJECT
 public:
  // `glossary` (kept by the caller) links the terms of the model answers.
  RetrievalPage(lessons::Progress& progress, const lessons::Glossary& glossary,
                QWidget* parent = nullptr);

  // The questions of `lesson`, each with the answer the learner wrote last time.
  void showLesson(const lessons::Lesson& lesson);

 signals:
  void saved();  // an answer was written to the progress file (its error() says if not)

 private:
  lessons::Progress& m_progress;
  const lessons::Glossary& m_glossary;
  QWidget* m_page = nullptr;
  QVBoxLayout* m_questions = nullptr;
};

}  // namespace paralab
