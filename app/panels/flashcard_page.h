// FlashcardPage: the last page of a lesson in the lessons panel — its due cards one at a time
// (question, then the answer and Again / Hard / Good), or when the next one falls due. The
// card is as tall as the lesson's longest, the buttons in one row under it, so the pointer
// finds them where it left them from card to card. See tests/lessons/tst_lessons_dock.cpp
// (flashcards*).
#pragma once
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include "flashcards.h"
#include "lesson.h"

class QLabel;
class QPushButton;

namespace paralab {

class FlashcardPage : public QWidget {
  Q_OBJECT
 public:
  explicit FlashcardPage(lessons::FlashcardDeck& deck, QWidget* parent = nullptr);

  // The cards of `lesson` due now, the first one's question shown.
  void showLesson(const lessons::Lesson& lesson);
  int dueCount() const { return int(m_due.size()); }

 signals:
  void reviewed();  // a card was graded and the deck written (its error() says if not)

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void showCard();
  void fitCardHeight();
  QString cardHtml(const lessons::Card& card, bool withAnswer) const;
  void grade(lessons::Grade grade);

  lessons::FlashcardDeck& m_deck;
  lessons::Lesson m_lesson;
  QStringList m_due;
  bool m_revealed = false;
  QTimer m_wake;  // shows a card again when it falls due while the page is open
  QLabel* m_text = nullptr;
  QPushButton *m_show = nullptr, *m_again = nullptr, *m_hard = nullptr, *m_good = nullptr;
};

}  // namespace paralab
