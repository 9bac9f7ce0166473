// ReviewPage: the lessons panel's review across lessons — the flashcards of every lesson that
// are due now, the lessons taking turns, graded Again / Hard / Good on the same deck and SM-2
// schedule as each lesson's own flashcard page (FlashcardPage shows and grades them both).
// See tests/lessons/tst_lessons_dock.cpp (review*).
#pragma once
#include <QList>
#include <QWidget>

#include "flashcards.h"
#include "glossary.h"
#include "lesson.h"
#include "panels/flashcard_page.h"

class QPushButton;

namespace paralab {

class ReviewPage : public QWidget {
  Q_OBJECT
 public:
  // `lessons`, `deck` and `glossary` are the dock's and outlive the page.
  ReviewPage(const QList<lessons::Lesson>& lessons, lessons::FlashcardDeck& deck,
             const lessons::Glossary& glossary, QWidget* parent = nullptr);

  // The cards due now, the first one's question shown.
  void refresh();
  FlashcardPage* cards() const { return m_cards; }
  // How many cards of every lesson are due at `now` (what the dock's "Review" button says).
  int dueNow(const QDateTime& now = QDateTime::currentDateTimeUtc()) const;

 signals:
  void back();  // "Back to the lesson" pressed

 private:
  QList<FlashcardPage::LessonCard> allCards() const;

  const QList<lessons::Lesson>& m_lessons;
  lessons::FlashcardDeck& m_deck;
  FlashcardPage* m_cards = nullptr;
};

}  // namespace paralab
