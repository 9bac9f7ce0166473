// FlashcardPage: due flashcards one at a time (question, then the answer with its glossary terms
// as hover links, and Again / Hard / Good), or when the next one falls due. It shows the cards
// of one lesson (the last page of a lesson) or of every lesson, interleaved (the review page):
// the same display, grading and deck either way. The card is as tall as the longest it may show,
// the buttons in one row under it, so the pointer finds them where it left them from card to
// card. See tests/lessons/tst_lessons_dock.cpp (flashcards*, review*).
#pragma once
#include <QList>
#include <QTimer>
#include <QWidget>

#include "flashcards.h"
#include "glossary.h"
#include "lesson.h"

class QLabel;
class QPushButton;

namespace paralab {

class FlashcardPage : public QWidget {
  Q_OBJECT
 public:
  // A card and the lesson it belongs to.
  struct LessonCard {
    QString slug;    // the lesson's, as in FlashcardDeck::cardId
    QString lesson;  // "2. Amdahl's law", shown on a card of a review across lessons
    lessons::Card card;
    QString id() const { return lessons::FlashcardDeck::cardId(slug, card.q); }
  };
  static QList<LessonCard> cardsOf(const lessons::Lesson& lesson);

  // `glossary` (kept by the caller, may be null) links the terms of the answers.
  FlashcardPage(lessons::FlashcardDeck& deck, const lessons::Glossary* glossary,
                QWidget* parent = nullptr);

  // The cards of `lesson` due now, the first one's question shown.
  void showLesson(const lessons::Lesson& lesson);
  // Of `cards` (of any lessons), those due now, the lessons taking turns
  // (lessons::interleaveByLesson); each card names its lesson.
  void showAcrossLessons(const QList<LessonCard>& cards);
  int dueCount() const { return int(m_due.size()); }
  // The card shown now (nullptr when none is due).
  const LessonCard* currentCard() const;

 signals:
  void reviewed();  // a card was graded and the deck written (its error() says if not)

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void load();  // m_due from m_cards and the deck, then showCard()
  void showCard();
  void fitCardHeight();
  QString cardHtml(const LessonCard& card, bool withAnswer) const;
  void grade(lessons::Grade grade);

  lessons::FlashcardDeck& m_deck;
  const lessons::Glossary* m_glossary;
  QList<LessonCard> m_cards;  // those the page draws from, due or not
  bool m_across = false;      // of several lessons: interleaved, each card names its lesson
  QStringList m_due;          // ids, in the order they are shown
  bool m_revealed = false;
  QTimer m_wake;  // shows a card again when it falls due while the page is open
  QLabel* m_text = nullptr;
  QPushButton *m_show = nullptr, *m_again = nullptr, *m_hard = nullptr, *m_good = nullptr;
};

}  // namespace paralab
