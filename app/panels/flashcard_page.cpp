// FlashcardPage: due cards of one lesson or of all, one at a time (see flashcard_page.h).
// See tests/lessons/tst_lessons_dock.cpp (flashcards*, review*).
#include "panels/flashcard_page.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTextDocument>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "panels/glossary_page.h"

namespace paralab {

using namespace paralab::lessons;

QList<FlashcardPage::LessonCard> FlashcardPage::cardsOf(const Lesson& lesson) {
  QList<LessonCard> out;
  for (const Card& c : lesson.cards)
    out << LessonCard{lesson.slug, QString("%1. %2").arg(lesson.number).arg(lesson.title), c};
  return out;
}

FlashcardPage::FlashcardPage(FlashcardDeck& deck, const Glossary* glossary, QWidget* parent)
    : QWidget(parent), m_deck(deck), m_glossary(glossary) {
  m_text = new QLabel(this);
  m_text->setObjectName("lessonCard");
  m_text->setWordWrap(true);
  m_text->setTextFormat(Qt::RichText);
  m_text->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  m_text->setTextInteractionFlags(Qt::LinksAccessibleByMouse);
  connect(m_text, &QLabel::linkHovered, this, [this](const QString& link) {
    if (m_glossary) showGlossaryTip(*m_glossary, link, m_text);
  });
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
    if (m_due.isEmpty()) load();
  });
}

void FlashcardPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitCardHeight();
}

// The height of the tallest card the page may show, answer shown, at the card's width now.
void FlashcardPage::fitCardHeight() {
  QTextDocument doc;
  doc.setDefaultFont(m_text->font());
  doc.setDocumentMargin(0);
  doc.setTextWidth(std::max(80, m_text->contentsRect().width()));
  int tallest = 4 * m_text->fontMetrics().lineSpacing();  // the messages when none is due
  for (const LessonCard& c : m_cards) {
    doc.setHtml(cardHtml(c, true));
    tallest = std::max(tallest, int(std::ceil(doc.size().height())));
  }
  m_text->setFixedHeight(tallest + m_text->fontMetrics().lineSpacing());
}

QString FlashcardPage::cardHtml(const LessonCard& c, bool withAnswer) const {
  // "12 due", then on a review across lessons the card's lesson: the learner knows where to
  // look the answer up.
  return tr("%1 due").arg(m_due.size()) +
         (m_across ? " · " + tr("from <i>%1</i>").arg(c.lesson.toHtmlEscaped()) : QString()) +
         "<p>" + paragraphHtml(c.card.q) +
         (withAnswer ? "<p>" + paragraphHtml(c.card.a, m_glossary) : QString());
}

void FlashcardPage::showLesson(const Lesson& lesson) {
  m_cards = cardsOf(lesson);
  m_across = false;
  load();
}

void FlashcardPage::showAcrossLessons(const QList<LessonCard>& cards) {
  m_cards = cards;
  m_across = true;
  load();
}

void FlashcardPage::load() {
  fitCardHeight();
  QStringList ids;
  for (const LessonCard& c : m_cards) ids << c.id();
  m_due = m_deck.due(ids);
  if (m_across) m_due = interleaveByLesson(m_due);
  m_revealed = false;
  showCard();
}

const FlashcardPage::LessonCard* FlashcardPage::currentCard() const {
  if (m_due.isEmpty()) return nullptr;
  for (const LessonCard& c : m_cards)
    if (c.id() == m_due.first()) return &c;
  return nullptr;
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
  if (const LessonCard* c = currentCard()) return m_text->setText(cardHtml(*c, m_revealed));
  if (m_cards.isEmpty())
    return m_text->setText(m_across ? tr("No lesson has flashcards.")
                                    : tr("This lesson has no flashcards."));
  // Not "come back tomorrow" when a card graded Again is due in ten minutes: when, in words
  // and on the clock, and the card comes back by itself if the page is still open then.
  QStringList ids;
  for (const LessonCard& c : m_cards) ids << c.id();
  const QDateTime now = QDateTime::currentDateTimeUtc();
  const QDateTime next = m_deck.nextDue(ids, now);
  if (!next.isValid())
    return m_text->setText(m_across ? tr("No cards are due.")
                                    : tr("No cards of this lesson are due."));
  const QDateTime local = next.toLocalTime();
  const QString clock = now.daysTo(next) < 1 && local.date() == QDate::currentDate()
                            ? QLocale().toString(local.time(), QLocale::ShortFormat)
                            : QLocale().toString(local, QLocale::ShortFormat);
  if (!m_across) {
    m_text->setText(tr("No cards of this lesson are due now. The next one is due %1 (%2).")
                        .arg(waitText(now, next), clock));
  } else {
    QString lesson;  // of the card that falls due first
    for (const LessonCard& c : m_cards)
      if (lesson.isEmpty() && m_deck.state(c.id()).due == next) lesson = c.lesson;
    m_text->setText(tr("No cards are due now. The next one is due %1 (%2), from <i>%3</i>.")
                        .arg(waitText(now, next), clock, lesson.toHtmlEscaped()));
  }
  const qint64 ms = now.msecsTo(next) + 500;
  if (ms < std::numeric_limits<int>::max()) m_wake.start(int(ms));
}

}  // namespace paralab
