// ReviewPage: the lessons panel's review across lessons — the flashcards due now of the lessons
// the learner has met (finished, or a card of it graded on its own page), the lessons taking turns, graded Again / Hard / Good on the same deck and SM-2
// schedule as each lesson's own flashcard page (FlashcardPage shows and grades them both).
// See tests/lessons/tst_lessons_dock.cpp (review*).
#pragma once
#include <QList>
#include <QWidget>

#include "flashcards.h"
#include "glossary.h"
#include "lesson.h"
#include "progress.h"
#include "panels/flashcard_page.h"

class QPushButton;

namespace paralab {

class ReviewPage : public QWidget {
  Q_OBJECT
 public:
  // `lessons`, `progress`, `deck` and `glossary` are the dock's and outlive the page.
  ReviewPage(const QList<lessons::Lesson>& lessons, const lessons::Progress& progress,
             lessons::FlashcardDeck& deck, const lessons::Glossary& glossary,
             QWidget* parent = nullptr);

  // The cards due now, the first one's question shown.
  void refresh();
  FlashcardPage* cards() const { return m_cards; }
  // How many cards are due at `now` (what the dock's "Review" button says): none before the
  // learner has met a lesson.
  int dueNow(const QDateTime& now = QDateTime::currentDateTimeUtc()) const;

 signals:
  void back();  // "Back to the lesson" pressed

 private:
  // The cards the review draws from: those of finished lessons, and any card already graded on
  // its lesson's page. A card of a lesson never opened is not yet learnt, so not due.
  QList<FlashcardPage::LessonCard> allCards() const;

  const QList<lessons::Lesson>& m_lessons;
  const lessons::Progress& m_progress;
  lessons::FlashcardDeck& m_deck;
  FlashcardPage* m_cards = nullptr;
};

}  // namespace paralab
