// Flashcards: spaced repetition of the lessons' cards, SM-2-like (Wozniak 1990): Again sends
// a card back to the start, Hard halves its interval, Good multiplies it by the card's ease.
// Each card's state persists per user in a JSON file (default: flashcards.json under
// QStandardPaths::AppDataLocation). See tests/lessons/tst_lessons_flashcards.cpp.
#pragma once
#include <QDateTime>
#include <QHash>
#include <QString>
#include <QStringList>

namespace paralab::lessons {

enum class Grade { Again, Hard, Good };

struct CardState {
  double intervalDays = 0;  // 0: new, or relearning after Again
  double ease = 2.5;        // multiplier of Good; 1.3 .. 2.5 and more
  int reviews = 0;          // successful reviews in a row (Hard or Good)
  int lapses = 0;           // times graded Again after a successful review
  QDateTime due;            // invalid: new, due now
};

// The rules, as one function (no I/O), on the card's state when it was reviewed at `now`:
//   Again: interval 0, due in 10 minutes (seen again this session), reviews 0,
//          ease - 0.20 (never below 1.3), lapses + 1 if it had been learnt.
//   Hard:  interval halved, at least 1 day (a new card: 1 day), ease - 0.15 (>= 1.3).
//   Good:  first success 1 day, second 6 days, then interval x ease (SM-2's steps).
// Intervals are rounded to whole days from the second success on.
CardState schedule(const CardState& before, Grade grade, const QDateTime& now);

// `dueIds` (card ids, as FlashcardDeck::due orders them) with the lessons taking turns: the
// first due card of each lesson in the order the lessons first appear, then the second of each,
// and so on — a review across lessons mixes them (interleaved practice, Rohrer & Taylor 2007)
// instead of going lesson by lesson. Each lesson's own cards keep their order.
QStringList interleaveByLesson(const QStringList& dueIds);

// How long from `now` until `when`, as a learner reads it: "in 10 minutes", "in 3 hours",
// "tomorrow", "in 6 days" (rounded up: a card is never said to be due before it is).
QString waitText(const QDateTime& now, const QDateTime& when);

class FlashcardDeck {
 public:
  // Reads `path` if it exists (a missing file is an empty deck).
  explicit FlashcardDeck(const QString& path = defaultPath());
  static QString defaultPath();  // <AppDataLocation>/flashcards.json
  // A card's stable id: lesson slug + a hash of its question (reordering cards keeps states).
  static QString cardId(const QString& lessonSlug, const QString& question);

  CardState state(const QString& id) const;  // a new card's state when never reviewed
  // Grades the card at `now`, updates its state and writes the file. False when it cannot be
  // written (`error()` says why); the state in memory is updated regardless.
  bool review(const QString& id, Grade grade, const QDateTime& now = QDateTime::currentDateTimeUtc());
  // Of `ids`, those due at `now` (never reviewed, or due at or before now), most overdue first.
  QStringList due(const QStringList& ids, const QDateTime& now = QDateTime::currentDateTimeUtc()) const;
  // Of `ids`, when the first one not due at `now` falls due (an Again card: in 10 minutes);
  // invalid when every card is due now.
  QDateTime nextDue(const QStringList& ids,
                    const QDateTime& now = QDateTime::currentDateTimeUtc()) const;
  void reset(const QString& id);  // forget one card (it becomes new)

  bool save();
  QString path() const { return m_path; }
  QString error() const { return m_error; }

 private:
  void load();

  QString m_path;
  QString m_error;
  QHash<QString, CardState> m_states;
};

}  // namespace paralab::lessons
