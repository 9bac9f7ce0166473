// ReviewPage: every lesson's due flashcards, interleaved (see review_page.h).
// See tests/lessons/tst_lessons_dock.cpp (review*).
#include "panels/review_page.h"

#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace paralab {

using namespace paralab::lessons;

ReviewPage::ReviewPage(const QList<Lesson>& lessons, const Progress& progress, FlashcardDeck& deck,
                       const Glossary& glossary, QWidget* parent)
    : QWidget(parent), m_lessons(lessons), m_progress(progress), m_deck(deck) {
  setObjectName("lessonReview");
  auto* title = new QLabel("<h3>" + tr("Review") + "</h3>" +
                               tr("The cards of every lesson that are due, the lessons taking "
                                  "turns: mixing topics makes you pick the idea, not just "
                                  "recall the last page."),
                           this);
  title->setWordWrap(true);
  m_cards = new FlashcardPage(deck, &glossary, this);
  // Not the names of the lesson's own flashcard page: both live in the dock.
  const QList<std::pair<const char*, const char*>> names = {{"lessonCard", "reviewCard"},
                                                            {"cardShow", "reviewShow"},
                                                            {"cardAgain", "reviewAgain"},
                                                            {"cardHard", "reviewHard"},
                                                            {"cardGood", "reviewGood"}};
  for (const auto& [from, to] : names) m_cards->findChild<QWidget*>(from)->setObjectName(to);
  auto* backButton = new QPushButton(tr("◀ Back to the lesson"), this);
  backButton->setObjectName("reviewBack");
  connect(backButton, &QPushButton::clicked, this, &ReviewPage::back);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(title);
  column->addWidget(m_cards, 1);
  column->addWidget(backButton, 0, Qt::AlignLeft);
}

QList<FlashcardPage::LessonCard> ReviewPage::allCards() const {
  QList<FlashcardPage::LessonCard> all;
  for (const Lesson& l : m_lessons) {
    const bool finished = m_progress.lesson(l.slug).completed;
    for (const FlashcardPage::LessonCard& c : FlashcardPage::cardsOf(l))
      if (finished || m_deck.state(c.id()).due.isValid()) all << c;
  }
  return all;
}

void ReviewPage::refresh() { m_cards->showAcrossLessons(allCards()); }

int ReviewPage::dueNow(const QDateTime& now) const {
  QStringList ids;
  for (const FlashcardPage::LessonCard& c : allCards()) ids << c.id();
  return int(m_deck.due(ids, now).size());
}

}  // namespace paralab
