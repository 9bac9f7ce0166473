// FlashcardPage: a lesson's due cards, one at a time (see flashcard_page.h).
// See tests/lessons/tst_lessons_dock.cpp (flashcards*).
#include "panels/flashcard_page.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTextDocument>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace paralab {

using namespace paralab::lessons;

FlashcardPage::FlashcardPage(FlashcardDeck& deck, QWidget* parent) : QWidget(parent), m_deck(deck) {
  m_text = new QLabel(this);
  m_text->setObjectName("lessonCard");
  m_text->setWordWrap(true);
  m_text->setTextFormat(Qt::RichText);
  m_text->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  m_show = new QPushButton(tr("Show answer"), this);
  m_again = new QPushButton(tr("Again"), this);
  m_hard = new QPushButton(tr("Hard"), this);
  m_good = new QPushButton(tr("Good"), this);
  m_show->setObjectName("cardShow");
  m_again->setObjectName("cardAgain");
  m_hard->setObjectName("cardHard");
  m_good->setObjectName("cardGood");
  m_again->setToolTip(tr("Start this card over: you will see it again in 10 minutes"));
  m_hard->setToolTip(tr("Halve its interval"));
  m_good->setToolTip(tr("Grow its interval (1 day, 6 days, then × its ease)"));
  // The card is as tall as the lesson's longest card with its answer (fitCardHeight), the
  // buttons right under it: a long card or a short one, they stay where they were.
  auto* row = new QHBoxLayout;
  for (QPushButton* b : {m_show, m_again, m_hard, m_good}) row->addWidget(b);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(m_text);
  column->addLayout(row);
  column->addStretch(1);
  connect(m_show, &QPushButton::clicked, this, [this] {
    m_revealed = true;
    showCard();
  });
  connect(m_again, &QPushButton::clicked, this, [this] { grade(Grade::Again); });
  connect(m_hard, &QPushButton::clicked, this, [this] { grade(Grade::Hard); });
  connect(m_good, &QPushButton::clicked, this, [this] { grade(Grade::Good); });
  m_wake.setSingleShot(true);
  connect(&m_wake, &QTimer::timeout, this, [this] {
    if (m_due.isEmpty()) showLesson(m_lesson);
  });
}

void FlashcardPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitCardHeight();
}

// The height of the tallest card of the lesson, answer shown, at the card's width now.
void FlashcardPage::fitCardHeight() {
  QTextDocument doc;
  doc.setDefaultFont(m_text->font());
  doc.setDocumentMargin(0);
  doc.setTextWidth(std::max(80, m_text->contentsRect().width()));
  int tallest = 4 * m_text->fontMetrics().lineSpacing();  // the messages when none is due
  for (const Card& c : m_lesson.cards) {
    doc.setHtml(cardHtml(c, true));
    tallest = std::max(tallest, int(std::ceil(doc.size().height())));
  }
  m_text->setFixedHeight(tallest + m_text->fontMetrics().lineSpacing());
}

QString FlashcardPage::cardHtml(const Card& c, bool withAnswer) const {
  return tr("%1 due").arg(m_due.size()) + "<p>" + paragraphHtml(c.q) +
         (withAnswer ? "<p>" + paragraphHtml(c.a) : QString());
}

void FlashcardPage::showLesson(const Lesson& lesson) {
  m_lesson = lesson;
  fitCardHeight();
  QStringList ids;
  for (const Card& c : lesson.cards) ids << FlashcardDeck::cardId(lesson.slug, c.q);
  m_due = m_deck.due(ids);
  m_revealed = false;
  showCard();
}

void FlashcardPage::grade(Grade g) {
  if (m_due.isEmpty()) return;
  m_deck.review(m_due.takeFirst(), g);
  m_revealed = false;
  emit reviewed();
  showCard();
}

void FlashcardPage::showCard() {
  const bool any = !m_due.isEmpty();
  for (QPushButton* b : {m_again, m_hard, m_good}) b->setVisible(any && m_revealed);
  m_show->setVisible(any && !m_revealed);
  m_wake.stop();
  if (any) {
    for (const Card& c : m_lesson.cards)
      if (FlashcardDeck::cardId(m_lesson.slug, c.q) == m_due.first())
        return m_text->setText(cardHtml(c, m_revealed));
  }
  if (m_lesson.cards.isEmpty()) return m_text->setText(tr("This lesson has no flashcards."));
  // Not "come back tomorrow" when a card graded Again is due in ten minutes: when, in words
  // and on the clock, and the card comes back by itself if the page is still open then.
  QStringList ids;
  for (const Card& c : m_lesson.cards) ids << FlashcardDeck::cardId(m_lesson.slug, c.q);
  const QDateTime now = QDateTime::currentDateTimeUtc();
  const QDateTime next = m_deck.nextDue(ids, now);
  if (!next.isValid()) return m_text->setText(tr("No cards of this lesson are due."));
  const QDateTime local = next.toLocalTime();
  const QString clock = now.daysTo(next) < 1 && local.date() == QDate::currentDate()
                            ? QLocale().toString(local.time(), QLocale::ShortFormat)
                            : QLocale().toString(local, QLocale::ShortFormat);
  m_text->setText(tr("No cards of this lesson are due now. The next one is due %1 (%2).")
                      .arg(waitText(now, next), clock));
  const qint64 ms = now.msecsTo(next) + 500;
  if (ms < std::numeric_limits<int>::max()) m_wake.start(int(ms));
}

}  // namespace paralab
