// The lessons panel's memory, offscreen: a finished lesson is ticked at once, the flashcards say
// when the next card is due, progress and cards survive a restart (and a file that cannot be
// written is said), the review mixes the due cards of every lesson on the same deck, the glossary
// page lists and filters every term and opens the steps that use it, answers carry glossary
// links. Run: ctest -R tst_lessons_dock_cards
#include <QComboBox>
#include <QPlainTextEdit>
#include <QTextBrowser>

#include "flashcards.h"
#include "glossary.h"
#include "lesson_dock_test.h"
#include "panels/flashcard_page.h"
#include "panels/glossary_page.h"
#include "panels/review_page.h"

using namespace paralab;

class TestLessonDockCards : public test::LessonDockTest {
  Q_OBJECT

 private slots:
  // When no card is due, the page says when the next one is: an Again card in ten minutes is
  // not "come back tomorrow".
  void reviewSaysWhenTheNextCardIsDue() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    LessonDock dock(m_caps, p);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(dock.pageCount() - 1);
    auto* card = dock.findChild<QLabel*>("lessonCard");
    const int cards = dock.lessons()[dock.currentLesson()].cards.size();
    for (int i = 0; i < cards; ++i) {
      dock.findChild<QPushButton*>("cardShow")->click();
      dock.findChild<QPushButton*>(i == 0 ? "cardAgain" : "cardGood")->click();
    }
    QVERIFY2(
        card->text().contains("due in 10 minutes") || card->text().contains("due in 9 minutes"),
        qPrintable(card->text()));
    QVERIFY(!card->text().contains("tomorrow"));
  }

  // A finished lesson's ✓ shows in the list at once, not after a restart.
  void finishedLessonTicksAtOnce() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    const int l = slugIndex(dock, "03-gustafson");
    auto* picker = dock.findChild<QComboBox*>("lessonPicker");
    dock.openLesson(l);
    QVERIFY(!picker->itemText(l).contains("✓"));
    dock.openPage(dock.pageCount() - 1);
    QVERIFY2(picker->itemText(l).endsWith("✓"), qPrintable(picker->itemText(l)));
  }

  // A progress file the dock cannot write is said in the dock, not swallowed; so is nothing
  // when all is well.
  void unsavedProgressIsSaid() {
    {
      LessonDock ok(m_caps, paths());
      QVERIFY(ok.problems().isEmpty());
      QVERIFY(ok.findChild<QLabel*>("lessonProblems")->isHidden());
    }
    LessonDock::Paths p = paths();
    p.progress = "/proc/no-such-dir/progress.json";
    LessonDock dock(m_caps, p);
    dock.openPage(1);  // records the step reached: the write fails
    QVERIFY2(dock.problems().join(' ').contains(p.progress), qPrintable(dock.problems().join(' ')));
    auto* label = dock.findChild<QLabel*>("lessonProblems");
    QVERIFY(!label->isHidden());
    QVERIFY(label->text().contains(p.progress));
  }

  void progressAndCardsSurviveRestart() {
    const int amdahl = [&] {
      LessonDock d(m_caps, paths());
      return slugIndex(d, "02-amdahl");
    }();
    int due = 0;
    {
      LessonDock dock(m_caps, paths());
      dock.openLesson(amdahl);
      dock.openPage(dock.pageCount() - 1);  // flashcards
      auto* card = dock.findChild<QLabel*>("lessonCard");
      due = card->text().section(' ', 0, 0).toInt();
      QCOMPARE(due, dock.lessons()[amdahl].cards.size());
      const auto buttons = dock.findChildren<QPushButton*>();
      auto button = [&](const QString& text) {
        for (QPushButton* b : buttons)  // the lesson's, not the review's (hidden)
          if (b->text() == text && b->isVisibleTo(&dock)) return b;
        return static_cast<QPushButton*>(nullptr);
      };
      button("Show answer")->click();
      button("Good")->click();
      QCOMPARE(card->text().section(' ', 0, 0).toInt(), due - 1);
      dock.openPage(3);
    }
    LessonDock again(m_caps, paths());
    again.openLesson(amdahl);
    QCOMPARE(again.currentPage(), dock_last_page(again));  // the furthest page reached: flashcards
    again.openPage(again.pageCount() - 1);
    QCOMPARE(again.findChild<QLabel*>("lessonCard")->text().section(' ', 0, 0).toInt(), due - 1);
  }

  // [SECTION] The review across lessons.

  // Every card of every lesson already learnt (due in a day), but those of `slugs`: due now.
  static void onlyDue(const LessonDock& d, const QString& deckPath, const QStringList& slugs) {
    lessons::FlashcardDeck deck(deckPath);
    for (const lessons::Lesson& l : d.lessons())
      if (!slugs.contains(l.slug))
        for (const lessons::Card& c : l.cards)
          deck.review(lessons::FlashcardDeck::cardId(l.slug, c.q), lessons::Grade::Good);
  }
  static int buttonCount(const LessonDock& d) {
    return d.findChild<QPushButton*>("lessonReviewButton")->text().section(' ', 1, 1).toInt();
  }

  // Two lessons with due cards: the review takes them in turn, each card names its lesson,
  // grading writes the deck (the same file the lessons' own pages use) and takes the card out
  // of the queue, and the count on the button follows.
  void reviewInterleavesLessons() {
    QTemporaryDir dir;
    LessonDock::Paths p = pathsIn(dir);
    p.flashcards = dir.filePath("cards.json");
    int due = 0;
    {
      LessonDock probe(m_caps, p);
      onlyDue(probe, p.flashcards, {"02-amdahl", "05-data-parallel"});
      lessons::Progress finished(p.progress);  // both finished: their new cards come up
      for (const char* slug : {"02-amdahl", "05-data-parallel"}) finished.complete(slug);
      QVERIFY(finished.save());
      due = int(probe.lessons()[slugIndex(probe, "02-amdahl")].cards.size() +
                probe.lessons()[slugIndex(probe, "05-data-parallel")].cards.size());
    }
    LessonDock dock(m_caps, p);
    QCOMPARE(buttonCount(dock), due);
    QVERIFY2(dock.findChild<QPushButton*>("lessonReviewButton")->text() ==
                 QString("Review: %1 cards due").arg(due),
             qPrintable(dock.findChild<QPushButton*>("lessonReviewButton")->text()));
    dock.findChild<QPushButton*>("lessonReviewButton")->click();
    QCOMPARE(dock.currentView(), LessonDock::View::Review);
    FlashcardPage* page = dock.reviewPage()->cards();
    QCOMPARE(page->dueCount(), due);
    auto* card = dock.findChild<QLabel*>("reviewCard");
    QStringList order;
    for (int i = 0; i < 4; ++i) {
      const FlashcardPage::LessonCard* c = page->currentCard();
      QVERIFY(c);
      order << c->slug;
      QVERIFY2(card->text().contains(c->lesson.toHtmlEscaped()), qPrintable(card->text()));
      const QString id = c->id();
      dock.findChild<QPushButton*>("reviewShow")->click();
      dock.findChild<QPushButton*>("reviewGood")->click();
      QCOMPARE(lessons::FlashcardDeck(p.flashcards).state(id).reviews, 1);  // written
      QCOMPARE(page->dueCount(), due - i - 1);
      QCOMPARE(buttonCount(dock), due - i - 1);
      QVERIFY(!page->currentCard() || page->currentCard()->id() != id);
    }
    QCOMPARE(order,
             QStringList({"02-amdahl", "05-data-parallel", "02-amdahl", "05-data-parallel"}));
    // The lesson's own flashcard page draws from the same deck: two of its cards are gone.
    dock.findChild<QPushButton*>("reviewBack")->click();
    QCOMPARE(dock.currentView(), LessonDock::View::Lesson);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(dock.pageCount() - 1);
    QCOMPARE(dock.findChild<QLabel*>("lessonCard")->text().section(' ', 0, 0).toInt(),
             dock.lessons()[dock.currentLesson()].cards.size() - 2);
  }

  // A learner who has not met a lesson has no card of it due: before any lesson is opened the
  // review is empty, and a lesson's cards join it when the lesson is finished.
  void noCardIsDueBeforeItsLesson() {
    QTemporaryDir dir;
    LessonDock::Paths p = pathsIn(dir);
    p.flashcards = dir.filePath("cards.json");
    LessonDock dock(m_caps, p);
    QCOMPARE(dock.findChild<QPushButton*>("lessonReviewButton")->text(),
             QString("Review: no cards due"));
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(dock.pageCount() - 2);  // retrieval practice: the flashcards not yet reached
    QCOMPARE(buttonCount(dock), 0);
    // The flashcards page finishes the lesson: its cards are due, less one graded Again (due in
    // ten minutes).
    dock.openPage(dock.pageCount() - 1);
    dock.findChild<QPushButton*>("cardShow")->click();
    dock.findChild<QPushButton*>("cardAgain")->click();
    QCOMPARE(buttonCount(dock), int(dock.lessons()[dock.currentLesson()].cards.size()) - 1);
  }

  // Nothing due: the review says when the next card is, and from which lesson.
  void reviewSaysWhenNothingIsDue() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    {
      LessonDock probe(m_caps, p);
      onlyDue(probe, p.flashcards, {});
    }
    LessonDock dock(m_caps, p);
    QCOMPARE(dock.findChild<QPushButton*>("lessonReviewButton")->text(),
             QString("Review: no cards due"));
    dock.openReview();
    const QString text = dock.findChild<QLabel*>("reviewCard")->text();
    QVERIFY2(text.contains("No cards are due now. The next one is due in 24 hours") &&
                 text.contains("from <i>"),
             qPrintable(text));
    QVERIFY(!dock.findChild<QPushButton*>("reviewShow")->isVisibleTo(&dock));
  }

  // A card's answer links its glossary terms (hover: the definition), on the review and on a
  // lesson's own flashcard page; so does a retrieval question's model answer.
  void answersLinkGlossaryTerms() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    p.progress = dir.filePath("progress.json");
    LessonDock dock(m_caps, p);
    dock.openLesson(slugIndex(dock, "05-data-parallel"));
    dock.openPage(dock.pageCount() - 1);
    bool linked = false;
    for (int i = 0; i < dock.lessons()[dock.currentLesson()].cards.size() && !linked; ++i) {
      dock.findChild<QPushButton*>("cardShow")->click();
      linked = dock.findChild<QLabel*>("lessonCard")->text().contains("href=\"glossary:");
      dock.findChild<QPushButton*>("cardGood")->click();
    }
    QVERIFY(linked);
    dock.openReview();
    linked = false;
    for (int i = 0; i < 10 && !linked; ++i) {
      dock.findChild<QPushButton*>("reviewShow")->click();
      linked = dock.findChild<QLabel*>("reviewCard")->text().contains("href=\"glossary:");
      dock.findChild<QPushButton*>("reviewGood")->click();
    }
    QVERIFY(linked);

    dock.openLesson(slugIndex(dock, "05-data-parallel"));
    dock.openPage(dock.pageCount() - 2);  // retrieval practice
    const auto edits = dock.findChildren<QPlainTextEdit*>();
    QVERIFY(!edits.isEmpty());
    for (QPlainTextEdit* e : edits) e->setPlainText("my answer");
    for (QPushButton* b : dock.findChildren<QPushButton*>())
      if (b->text() == "Show the model answer") b->click();
    QStringList answers;
    for (QLabel* a : dock.findChildren<QLabel*>("lessonModelAnswer")) answers << a->text();
    QVERIFY2(answers.join('\n').contains("href=\"glossary:"), qPrintable(answers.join('\n')));
  }

  // [SECTION] The glossary page.

  // Every term of glossary.md, A to Z; the filter keeps those whose name or other spelling
  // contains it, and says how many of how many.
  void glossaryListsAndFilters() {
    LessonDock dock(m_caps, paths());
    const lessons::Glossary g = lessons::Glossary::load(paths().lessons + "/glossary.md");
    dock.findChild<QPushButton*>("lessonGlossaryButton")->click();
    QCOMPARE(dock.currentView(), LessonDock::View::Glossary);
    GlossaryPage* page = dock.glossaryPage();
    QStringList all;
    for (const lessons::GlossaryTerm& t : g.terms()) all << t.term;
    QStringList shown = page->shownTerms();
    QCOMPARE(shown.size(), all.size());
    QCOMPARE(QSet<QString>(shown.begin(), shown.end()), QSet<QString>(all.begin(), all.end()));
    for (int i = 1; i < shown.size(); ++i)
      QVERIFY2(QString::localeAwareCompare(shown[i - 1].toLower(), shown[i].toLower()) <= 0,
               qPrintable(shown[i - 1] + " before " + shown[i]));
    const QString md = dock.findChild<QTextBrowser*>("glossaryText")->toMarkdown();
    QVERIFY2(md.contains("Non-uniform memory access"), qPrintable(md.left(400)));

    QTest::keyClicks(dock.findChild<QLineEdit*>("glossaryFilter"), "reduce");
    shown = page->shownTerms();
    QVERIFY2(shown.contains("all-reduce") && shown.contains("reduce-scatter") &&
                 shown.contains("ring all-reduce"),
             qPrintable(shown.join(", ")));
    QVERIFY(shown.size() < all.size());
    for (const QString& t : shown) {
      const lessons::GlossaryTerm* term = g.find(t);
      QVERIFY2(t.contains("reduce", Qt::CaseInsensitive) ||
                   term->aliases.join(' ').contains("reduce", Qt::CaseInsensitive),
               qPrintable(t));
    }
    QCOMPARE(dock.findChild<QLabel*>("glossaryCount")->text(),
             QString("%1 of %2").arg(shown.size()).arg(all.size()));
    page->setFilter("no such term");
    QVERIFY(page->shownTerms().isEmpty());
    page->setFilter("");
    QCOMPARE(page->shownTerms().size(), all.size());
  }

  // A term's link under it opens the lesson at the step that uses it; the term is on that
  // page, a hover link there (one matcher makes both).
  void glossaryLinkOpensTheStep() {
    LessonDock dock(m_caps, paths());
    dock.openGlossary();
    GlossaryPage* page = dock.glossaryPage();
    const QList<GlossaryPage::Use> uses = page->uses("ring all-reduce");
    QVERIFY(!uses.isEmpty());
    const GlossaryPage::Use use =
        *std::find_if(uses.begin(), uses.end(), [](const auto& u) { return u.page > 0; });
    auto* browser = dock.findChild<QTextBrowser*>("glossaryText");
    const QString href = page->link(use).toString();
    QVERIFY2(browser->toMarkdown().contains(href), qPrintable(href));
    emit browser->anchorClicked(page->link(use));
    QCOMPARE(dock.currentView(), LessonDock::View::Lesson);
    QCOMPARE(dock.currentLesson(), use.lesson);
    QCOMPARE(dock.currentPage(), use.page);
    QVERIFY(dock.currentStep());
    const QString md = dock.findChild<QTextBrowser*>("lessonText")->toMarkdown();
    QVERIFY2(md.contains("glossary:ring%20all-reduce"), qPrintable(md.left(600)));
  }

  // The terms the course added for the seed topics are each used by some lesson page.
  void newTermsAreUsed() {
    LessonDock dock(m_caps, paths());
    GlossaryPage* page = dock.glossaryPage();
    QStringList unused;
    for (const QString& t : {"MIMD", "SPMD", "NUMA", "GIL", "MPI", "NCCL", "federated learning",
                             "gradient accumulation", "activation recomputation"})
      if (page->uses(t).isEmpty()) unused << t;
    QVERIFY2(unused.isEmpty(), qPrintable("no lesson page uses: " + unused.join(", ")));
  }

 private:
  static int dock_last_page(const LessonDock& d) { return d.pageCount() - 1; }
};

QTEST_MAIN(TestLessonDockCards)
#include "tst_lessons_dock_cards.moc"
