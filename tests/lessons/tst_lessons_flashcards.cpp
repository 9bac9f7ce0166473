// The flashcard scheduler's rules (Again resets, Hard halves, Good grows by the ease) and its
// file surviving a restart, and a review across lessons taking them in turn. Run: ctest -R
// tst_lessons_flashcards.
#include <QTemporaryDir>
#include <QtTest>

#include "flashcards.h"

using namespace paralab::lessons;

class TestFlashcards : public QObject {
  Q_OBJECT
  const QDateTime t0 = QDateTime(QDate(2025, 1, 6), QTime(9, 0), Qt::UTC);
  static qint64 days(const QDateTime& from, const QDateTime& to) { return from.secsTo(to) / 86400; }

 private slots:
  void goodGrowsOneSixThenEase() {
    CardState s;
    s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 1.0);
    QCOMPARE(days(t0, s.due), 1);
    s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 6.0);
    s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 15.0);  // 6 x 2.5
    s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 38.0);  // round(15 x 2.5 = 37.5)
    QCOMPARE(s.ease, 2.5);
    QCOMPARE(s.reviews, 4);
    QCOMPARE(days(t0, s.due), 38);
  }

  void againResets() {
    CardState s;
    for (int i = 0; i < 3; ++i) s = schedule(s, Grade::Good, t0);
    s = schedule(s, Grade::Again, t0);
    QCOMPARE(s.intervalDays, 0.0);
    QCOMPARE(s.reviews, 0);
    QCOMPARE(s.lapses, 1);
    QCOMPARE(s.ease, 2.3);
    QCOMPARE(t0.secsTo(s.due), 600);  // again in 10 minutes
    s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 1.0);  // starts over: 1, 6, ...
    // Again on a card never learnt is not a lapse.
    const CardState fresh = schedule(CardState{}, Grade::Again, t0);
    QCOMPARE(fresh.lapses, 0);
  }

  void hardShortens() {
    CardState s;
    for (int i = 0; i < 3; ++i) s = schedule(s, Grade::Good, t0);
    QCOMPARE(s.intervalDays, 15.0);
    s = schedule(s, Grade::Hard, t0);
    QCOMPARE(s.intervalDays, 8.0);  // round(15 / 2)
    QCOMPARE(s.ease, 2.35);
    s = schedule(s, Grade::Hard, t0);
    s = schedule(s, Grade::Hard, t0);
    s = schedule(s, Grade::Hard, t0);
    QCOMPARE(s.intervalDays, 1.0);  // never below a day
    const CardState fresh = schedule(CardState{}, Grade::Hard, t0);
    QCOMPARE(fresh.intervalDays, 1.0);
  }

  void easeHasAFloor() {
    CardState s;
    for (int i = 0; i < 20; ++i) s = schedule(s, Grade::Again, t0);
    QCOMPARE(s.ease, 1.3);
    for (int i = 0; i < 20; ++i) s = schedule(s, Grade::Hard, t0);
    QCOMPARE(s.ease, 1.3);
  }

  void dueOrderAndIds() {
    QTemporaryDir dir;
    FlashcardDeck deck(dir.filePath("cards.json"));
    const QString a = FlashcardDeck::cardId("01-serial", "What is a rank?");
    const QString b = FlashcardDeck::cardId("01-serial", "What is  a rank?  ");  // same words
    QCOMPARE(a, b);
    const QString c = FlashcardDeck::cardId("01-serial", "Another question");
    const QString d = FlashcardDeck::cardId("02-amdahl", "Another question");
    QVERIFY(c != a && c != d);
    deck.review(a, Grade::Good, t0);   // due t0 + 1 day
    deck.review(c, Grade::Again, t0);  // due t0 + 10 min
    QCOMPARE(deck.due({a, c, d}, t0), QStringList({d}));  // only the new card
    QCOMPARE(deck.due({a, c, d}, t0.addSecs(3600)), QStringList({d, c}));
    QCOMPARE(deck.due({a, c, d}, t0.addDays(2)), QStringList({d, c, a}));
  }

  // After an Again the next card is ten minutes away, not "tomorrow": nextDue says when, and
  // waitText says it as a learner reads it (rounded up, never sooner than it is).
  void nextDueIsSaid() {
    QTemporaryDir dir;
    FlashcardDeck deck(dir.filePath("cards.json"));
    const QString a = FlashcardDeck::cardId("02-amdahl", "a"),
                  b = FlashcardDeck::cardId("02-amdahl", "b");
    QVERIFY(!deck.nextDue({a, b}, t0).isValid());  // new cards: due now, nothing later
    deck.review(a, Grade::Good, t0);
    deck.review(b, Grade::Again, t0);
    QCOMPARE(deck.nextDue({a, b}, t0), t0.addSecs(600));
    QCOMPARE(waitText(t0, deck.nextDue({a, b}, t0)), QString("in 10 minutes"));
    QCOMPARE(deck.nextDue({a, b}, t0.addSecs(601)), t0.addDays(1));  // b is due: a comes next
    QCOMPARE(waitText(t0, t0.addSecs(30)), QString("in a minute"));
    QCOMPARE(waitText(t0, t0.addSecs(9 * 60 + 1)), QString("in 10 minutes"));
    QCOMPARE(waitText(t0, t0.addSecs(3 * 3600)), QString("in 3 hours"));
    QCOMPARE(waitText(t0, t0.addDays(1)), QString("tomorrow"));
    QCOMPARE(waitText(t0, t0.addDays(6)), QString("in 6 days"));
  }

  void survivesRestart() {
    QTemporaryDir dir;
    const QString path = dir.filePath("sub/flashcards.json");
    const QString id = FlashcardDeck::cardId("05-data-parallel", "Ring all-reduce bytes per rank?");
    {
      FlashcardDeck deck(path);
      QVERIFY(deck.review(id, Grade::Good, t0));
      QVERIFY(deck.review(id, Grade::Good, t0));
      QVERIFY(deck.review(id, Grade::Hard, t0));
    }
    FlashcardDeck reopened(path);
    const CardState s = reopened.state(id);
    QCOMPARE(s.intervalDays, 3.0);
    QCOMPARE(s.reviews, 3);
    QCOMPARE(s.ease, 2.35);
    QCOMPARE(s.due, t0.addDays(3));
    reopened.reset(id);
    QCOMPARE(FlashcardDeck(path).state(id).reviews, 0);
  }

  void unwritablePathSaysWhy() {
    FlashcardDeck deck("/proc/no-such-dir/flashcards.json");
    QVERIFY(!deck.review("x#1", Grade::Good, t0));
    QVERIFY(!deck.error().isEmpty());
    QCOMPARE(deck.state("x#1").reviews, 1);  // kept in memory
  }

  // A review across lessons takes the lessons in turn; each lesson's cards keep their order,
  // and a lesson with more due cards fills the end.
  void interleavesLessons() {
    const QStringList due = {"02-amdahl#a", "02-amdahl#b", "02-amdahl#c",
                             "05-dp#x",     "07-zero#p",   "05-dp#y"};
    QCOMPARE(interleaveByLesson(due), QStringList({"02-amdahl#a", "05-dp#x", "07-zero#p",
                                                   "02-amdahl#b", "05-dp#y", "02-amdahl#c"}));
    QCOMPARE(interleaveByLesson({}), QStringList());
    QCOMPARE(interleaveByLesson({"02-amdahl#a", "02-amdahl#b"}),
             QStringList({"02-amdahl#a", "02-amdahl#b"}));
  }
};

QTEST_GUILESS_MAIN(TestFlashcards)
#include "tst_lessons_flashcards.moc"
