// The lessons panel, offscreen: every lesson loads, a step's experiment reaches the run controls
// as a RunConfig only once a prediction is locked in (and a locked one stays locked), "43%" reads
// as 0.43, a locked-in prediction shows beside its reference and the measurement, buttons stay
// put while a page changes, lessons the engine cannot run are "coming", glossary terms become
// hover links in either theme, every page fits a narrow dock, a finished lesson is ticked at
// once, the flashcards say when the next card is due, progress and cards survive a restart;
// the review mixes the due cards of every lesson on the same deck, the glossary page lists and
// filters every term and opens the steps that use it, answers carry glossary links.
// Run: ctest -R tst_lessons_dock.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QtTest>
#include <memory>

#include "flashcards.h"
#include "glossary.h"
#include "panels/flashcard_page.h"
#include "panels/glossary_page.h"
#include "panels/lesson_dock.h"
#include "panels/review_page.h"
#include "progress.h"
#include "train/sweep.h"

using namespace paralab;

class TestLessonDock : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  const QStringList m_caps{"device:cpu", "strategy:sync"};  // ZeRO and the rest: coming

  LessonDock::Paths paths() const {
    LessonDock::Paths p;
    p.lessons = PARALAB_SOURCE_DIR "/lessons";
    p.progress = m_dir.filePath("progress.json");
    p.flashcards = m_dir.filePath("flashcards.json");
    return p;
  }
  // The same, with a progress file of its own in `dir`: a test that locks predictions.
  LessonDock::Paths pathsIn(const QTemporaryDir& dir) const {
    LessonDock::Paths p = paths();
    p.progress = dir.filePath("progress.json");
    return p;
  }
  // Types `text` as the prediction and presses Lock in.
  static void lock(LessonDock& d, const QString& text) {
    auto* edit = d.findChild<QLineEdit*>("lessonPrediction");
    QVERIFY(!edit->isReadOnly());
    edit->setText(text);
    d.findChild<QPushButton*>("lessonLock")->click();
  }
  // Where `w` is in its window: what the pointer aims at.
  static QRect placeOf(const QWidget* w) {
    return QRect(w->mapTo(w->window(), QPoint(0, 0)), w->size());
  }
  // Shows the dock at the width it has beside the charts (~380 px).
  static void showNarrow(LessonDock& dock) {
    dock.resize(380, 900);
    dock.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dock));
  }
  static int slugIndex(const LessonDock& d, const QString& slug) {
    for (int i = 0; i < d.lessons().size(); ++i)
      if (d.lessons()[i].slug == slug) return i;
    return -1;
  }
  // The first visible wrapped label that is cut (shorter than its lines need, or outside its
  // box), described; "" when none is.
  static QString cutLabel(const LessonDock& dock) {
    for (QLabel* label : dock.findChildren<QLabel*>())
      if (label->isVisible() && label->wordWrap() && !label->text().isEmpty() &&
          (label->height() < label->heightForWidth(label->width()) ||
           !label->parentWidget()->rect().contains(label->geometry())))
        return QString("'%1' has %2 of the %3 px it needs, or lies outside its box")
            .arg(label->text().left(60))
            .arg(label->height())
            .arg(label->heightForWidth(label->width()));
    return {};
  }

 private slots:
  void loadsEveryLesson() {
    LessonDock dock(m_caps, paths());
    QVERIFY2(dock.loadErrors().isEmpty(), qPrintable(dock.loadErrors().join('\n')));
    QCOMPARE(dock.lessons().size(), 15);
    QCOMPARE(dock.currentLesson(), 0);
    QCOMPARE(dock.currentPage(), 0);
  }

  void experimentReachesTheControls() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "01-serial-parallel"));
    dock.openPage(1);
    QVERIFY(dock.currentStep() && dock.currentStep()->experiment);
    QSignalSpy applied(&dock, &LessonDock::applyExperiment);
    QSignalSpy ran(&dock, &LessonDock::runExperiment);
    lock(dock, "600");
    dock.findChild<QPushButton*>("lessonApply")->click();
    dock.findChild<QPushButton*>("lessonRun")->click();
    QCOMPARE(applied.size(), 1);
    QCOMPARE(ran.size(), 1);
    const RunConfig c = applied.first().first().value<RunConfig>();
    QCOMPARE(c.ranks, 1);
    QCOMPARE(c.hidden, 256);
    QCOMPARE(c.batch, 256);
    QCOMPARE(c.evalEvery, 50);
  }

  // A prediction with choices: picked with a radio button, locked before the run; after the run
  // the step shows the pick, the reference answer and the measured one with each choice's value,
  // all kept for the score. Saved at the dock's narrow width before the lock, after it and after
  // the run (build/screenshots/lessons/choice-*.png), with nothing cut.
  void choicePickedRunAndShown() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    showNarrow(dock);
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots/lessons";
    QDir().mkpath(shots);
    dock.openLesson(slugIndex(dock, "06-communication"));
    const auto& steps = dock.lessons()[dock.currentLesson()].steps;
    int page = 0;
    for (int i = 0; i < steps.size(); ++i)
      if (steps[i].title == "Who waits, who works") page = i + 1;
    QVERIFY(page > 0);
    dock.openPage(page);
    const auto fits = [&](const QString& shot) {
      QApplication::processEvents();
      QVERIFY2(dock.minimumSizeHint().width() <= 380,
               qPrintable(QString("needs %1 px").arg(dock.minimumSizeHint().width())));
      const QString cut = cutLabel(dock);
      QVERIFY2(cut.isEmpty(), qPrintable(shot + ": " + cut));
      QVERIFY(dock.grab().save(QString("%1/choice-%2.png").arg(shots, shot)));
    };
    QVERIFY(!dock.findChild<QLineEdit*>("lessonPrediction")->isVisible());
    auto* run = dock.findChild<QPushButton*>("lessonRun");
    auto* pick = dock.findChild<QRadioButton*>("lessonChoice2");
    QVERIFY(pick && pick->isVisible() && pick->text() == "rank 2");
    QVERIFY(!run->isEnabled());
    fits("before");
    // Lock in without a pick: said, nothing locked.
    dock.findChild<QPushButton*>("lessonLock")->click();
    QVERIFY(!dock.predictionLocked());
    QVERIFY2(dock.comparisonText().contains("Pick one of the answers first"),
             qPrintable(dock.comparisonText()));
    pick->click();
    dock.findChild<QPushButton*>("lessonLock")->click();
    QVERIFY(dock.predictionLocked());
    QVERIFY(!pick->isEnabled() && pick->isChecked());
    QVERIFY(run->isEnabled());
    QString text = dock.comparisonText();
    QVERIFY2(text.contains("Your choice") && text.contains("run the experiment") &&
                 text.contains("Where the reference comes from"),
             qPrintable(text));
    fits("locked");
    QSignalSpy ran(&dock, &LessonDock::runExperiment);
    run->click();
    QCOMPARE(ran.size(), 1);
    QCOMPARE(ran.first().first().value<RunConfig>().ranks, 4);
    // Idle times in ms of ranks 0..3 per step; the median over steps 3 to 5 (after the 2 warm-up
    // steps): 95, 84, 18 and 93 — rank 0 measured most, and the lesson asks for the least.
    QList<QJsonObject> run4;
    for (const auto& idle : QList<QList<double>>{{600, 600, 170, 600},
                                                 {10, 20, 15, 30},
                                                 {40, 50, 2, 60},
                                                 {95, 120, 18, 107},
                                                 {101, 84, 34, 93}}) {
      QJsonArray ranks;
      for (double v : idle) ranks.append(QJsonObject{{"idle_ms", v}});
      run4 << QJsonObject{{"ranks", ranks}};
    }
    dock.showRunResult(run4);
    text = dock.comparisonText();
    for (const char* shown : {"<td style='padding-right:12px'>Your choice</td><td><b>rank 2</b>",
                              "<td style='padding-right:12px'>Reference</td><td><b>rank 2</b>",
                              "<td style='padding-right:12px'>Measured</td><td><b>rank 2</b>",
                              "The smallest value wins (median over the run)", "<b>95 ms</b>",
                              "<b>84 ms</b>", "<b>18 ms</b>", "<b>93 ms</b>", "ranks[2].idle_ms",
                              "your choice: the same; the reference: the same"})
      QVERIFY2(text.contains(shown), qPrintable(QString("%1 in %2").arg(shown, text)));
    fits("measured");
    // Kept: back on the step, the measured answer is there; the score counts the choice.
    dock.openPage(page - 1);
    dock.openPage(page);
    QVERIFY2(dock.comparisonText().contains("<b>18 ms</b>"), qPrintable(dock.comparisonText()));
    dock.openPage(int(steps.size()));
    QVERIFY2(dock.comparisonText().contains(
                 "Choices: 1 of 1 first picks were the reference answer; 1 of 1 matched your "
                 "measurement."),
             qPrintable(dock.comparisonText()));
  }

  void predictionReferenceMeasurement() {
    LessonDock::Paths p = paths();
    p.cores = 8;  // as an 8-core machine sees the lesson, whatever this one has
    LessonDock dock(m_caps, p);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(2);  // measure the speedup: a sweep over 1, 2, 4, 8 ranks (up to the cores)
    QVERIFY(dock.currentStep()->sweep);
    QVERIFY(dock.comparisonText().contains("Lock in"));
    QSignalSpy swept(&dock, &LessonDock::runSweep);
    dock.findChild<QLineEdit*>("lessonPrediction")->setText("6.5");
    dock.findChild<QPushButton*>("lessonLock")->click();
    dock.findChild<QPushButton*>("lessonRun")->click();
    QCOMPARE(swept.size(), 1);
    QCOMPARE(swept.first().at(1).value<QList<int>>(), QList<int>({1, 2, 4, 8}));
    QJsonArray points;
    for (auto [n, s] : {std::pair{1, 1.0}, {2, 1.8}, {4, 3.1}, {8, 4.25}})
      points.append(QJsonObject{{"ranks", n}, {"speedup", s}});
    dock.showSweepResult(QJsonObject{{"points", points}});
    const QString text = dock.comparisonText();
    QVERIFY2(text.contains("6.5") && text.contains("5.926") && text.contains("4.25"),
             qPrintable(text));
    QVERIFY2(text.contains("Your machine sets the measured value"),
             qPrintable(text));  // the explanation
    // Its glossary terms are hover links, as in the lesson's text.
    QVERIFY2(text.contains("<a href=\"glossary:all-reduce\">all-reduce</a>"), qPrintable(text));
    // The misses in percent: 6.5 against the reference 5.926 and the measured 4.25; the
    // reference against the measurement.
    for (const char* miss : {"your prediction: 9.7 % above", "your prediction: 53 % above",
                             "the reference: 39 % above"})
      QVERIFY2(text.contains(miss), qPrintable(QString("%1 in %2").arg(miss, text)));
    // The measurement is kept: back on the step after another page, it is still there.
    dock.openPage(1);
    dock.openPage(2);
    QVERIFY2(dock.comparisonText().contains("4.25"), qPrintable(dock.comparisonText()));
    // The next step's field starts empty, not with this step's locked 6.5.
    dock.openPage(3);
    QVERIFY(dock.currentStep()->prediction && !dock.predictionLocked());
    QCOMPARE(dock.findChild<QLineEdit*>("lessonPrediction")->text(), QString());
    // The lesson's last step gives the score over its predictions.
    dock.openPage(int(dock.lessons()[dock.currentLesson()].steps.size()));
    QVERIFY2(dock.comparisonText().contains("Your score: ") &&
                 dock.comparisonText().contains("(1 measured)"),
             qPrintable(dock.comparisonText()));
  }

  void comingLessonsCannotRun() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "07-zero-fsdp"));
    dock.openPage(1);
    auto* run = dock.findChild<QPushButton*>("lessonRun");
    QVERIFY(!run->isEnabled());
    QVERIFY2(run->toolTip().contains("zero-1"), qPrintable(run->toolTip()));
  }

  void glossaryTermsAreLinks() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "05-data-parallel"));
    dock.openPage(3);  // the ring all-reduce
    const QString md = dock.findChild<QTextBrowser*>("lessonText")->toMarkdown();
    QVERIFY2(md.contains("glossary:ring%20all-reduce") && md.contains("glossary:reduce-scatter"),
             qPrintable(md));
    // Headings keep their weight: no term inside one becomes a link (on any page).
    for (int l = 0; l < dock.lessons().size(); ++l) {
      dock.openLesson(l);
      for (int p = 0; p < dock.pageCount(); ++p) {
        dock.openPage(p);
        const QString page = dock.findChild<QTextBrowser*>("lessonText")->toMarkdown();
        for (const QString& line : page.split('\n'))
          if (line.startsWith('#')) QVERIFY2(!line.contains("glossary:"), qPrintable(line));
      }
    }
  }

  // A fitted p of −1.135 is no fraction of anything: the comparison says the fit does not
  // describe the run, in words, and shows no number for it.
  void fitOutsideItsRangeIsWords() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    int page = 0;
    for (int i = 1; i < dock.pageCount() && !page; ++i) {
      dock.openPage(i);
      if (dock.currentStep() && dock.currentStep()->compare &&
          dock.currentStep()->compare->metric == "amdahl_p")
        page = i;
    }
    QVERIFY(page > 0);
    lock(dock, "0.9");
    dock.showSweepResult(QJsonObject{{"amdahl_p", -1.135}, {"points", QJsonArray()}});
    const QString text = dock.comparisonText();
    QVERIFY2(text.contains("no fit") && text.contains("slower"), qPrintable(text));
    QVERIFY2(!text.contains("-1.135") && !text.contains("−1.135"), qPrintable(text));
    dock.showSweepResult(QJsonObject{{"amdahl_p", 0.91}, {"points", QJsonArray()}});
    QVERIFY2(dock.comparisonText().contains("0.91"), qPrintable(dock.comparisonText()));
  }

  // "Lock in" locks: the experiment does not run before a prediction is locked; a locked
  // prediction cannot be edited, survives a restart as locked, and "Try again" keeps both.
  void lockedPredictionStaysLocked() {
    const QString slug = "02-amdahl";
    QTemporaryDir dir;
    LessonDock::Paths p = pathsIn(dir);
    {
      LessonDock dock(m_caps, p);
      dock.openLesson(slugIndex(dock, slug));
      dock.openPage(2);  // a sweep, with a prediction
      const QString step = dock.currentStep()->title;  // what its progress is kept under
      QSignalSpy swept(&dock, &LessonDock::runSweep);
      QSignalSpy applied(&dock, &LessonDock::applyExperiment);
      auto* run = dock.findChild<QPushButton*>("lessonRun");
      auto* apply = dock.findChild<QPushButton*>("lessonApply");
      auto* edit = dock.findChild<QLineEdit*>("lessonPrediction");
      auto* lockButton = dock.findChild<QPushButton*>("lessonLock");
      QVERIFY(!dock.predictionLocked());
      QVERIFY(!run->isEnabled() && !apply->isEnabled());
      QVERIFY2(run->toolTip().contains("Lock in your prediction first"),
               qPrintable(run->toolTip()));
      emit run->clicked();  // even a click that reaches the button runs nothing
      emit apply->clicked();
      QCOMPARE(swept.size() + applied.size(), 0);
      QVERIFY(dock.comparisonText().contains("Lock in your prediction"));

      lock(dock, "6.5");
      QVERIFY(dock.predictionLocked());
      QVERIFY(edit->isReadOnly());
      QVERIFY(run->isEnabled());
      QCOMPARE(lockButton->text(), QString("Try again"));
      // Typing into the locked field changes nothing, in the field or in the file.
      edit->setFocus();
      QTest::keyClicks(edit, "99");
      QCOMPARE(edit->text(), QString("6.5"));
      QCOMPARE(lessons::Progress(p.progress).lesson(slug).predictions.value(step),
               QList<double>({6.5}));
      run->click();
      QCOMPARE(swept.size(), 1);

      lockButton->click();  // Try again: a new attempt, the first one kept
      QVERIFY(!edit->isReadOnly());
      QVERIFY(edit->text().isEmpty());
      QVERIFY(!run->isEnabled());  // the new attempt is locked before the next run
      lock(dock, "5.9");
      QCOMPARE(lessons::Progress(p.progress).lesson(slug).predictions.value(step),
               QList<double>({6.5, 5.9}));
      const QString text = dock.comparisonText();
      QVERIFY2(text.contains("5.9") && text.contains("before: 6.5"), qPrintable(text));
    }
    LessonDock again(m_caps, p);
    again.openLesson(slugIndex(again, slug));
    again.openPage(2);
    QVERIFY(again.predictionLocked());
    QVERIFY(again.findChild<QLineEdit*>("lessonPrediction")->isReadOnly());
    QCOMPARE(again.findChild<QLineEdit*>("lessonPrediction")->text(), QString("5.9"));
  }

  // The student's "43%" against a bubble of 3/7 = 0.4286: read as 0.43, and what cannot be
  // read is said, not dropped.
  void percentIsReadAsItSays() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    dock.openLesson(slugIndex(dock, "11-pipeline"));
    int page = 0;
    for (int p = 1; p < dock.pageCount() && !page; ++p) {
      dock.openPage(p);
      if (dock.currentStep() && dock.currentStep()->prediction &&
          dock.currentStep()->prediction->expect == 0.43)
        page = p;
    }
    QVERIFY(page > 0);
    QVERIFY(dock.findChild<QLineEdit*>("lessonPrediction")->placeholderText().contains("43%"));
    lock(dock, "about half");
    QVERIFY(!dock.predictionLocked());
    QVERIFY2(dock.comparisonText().contains("not a number"), qPrintable(dock.comparisonText()));
    lock(dock, "43%");
    QVERIFY(dock.predictionLocked());
    const QString text = dock.comparisonText();
    QVERIFY2(text.contains("<b>0.43</b>") && text.contains("0.4286"), qPrintable(text));
    QVERIFY(!text.contains("not a number"));
  }

  // The buttons stay under the pointer while a step is open: when the prediction is locked,
  // when the comparison grows with the measurement, when a line says why an answer cannot be
  // read, when a line says progress cannot be saved.
  void buttonsStayPut() {
    QTemporaryDir dir;
    const LessonDock::Paths p = pathsIn(dir);
    LessonDock dock(m_caps, p);
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(2);
    const QStringList names = {"lessonLock", "lessonRun", "lessonApply", "lessonPrediction"};
    auto places = [&] {
      QApplication::processEvents();
      QStringList out;
      for (const QString& n : names) {
        const QRect r = placeOf(dock.findChild<QWidget*>(n));
        out << QString("%1 %2,%3 %4x%5")
                   .arg(n)
                   .arg(r.x())
                   .arg(r.y())
                   .arg(r.width())
                   .arg(r.height());
      }
      for (QPushButton* b : dock.findChildren<QPushButton*>())  // the lesson's Back and Next
        if (b->isVisible() && (b->text().contains("Back") || b->text().contains("Next")))
          out << b->text() + " " + QString::number(placeOf(b).y());
      return out;
    };
    const QStringList before = places();
    lock(dock, "6.5");
    QCOMPARE(places(), before);
    QJsonArray points;
    for (auto [n, sp] : {std::pair{1, 1.0}, {2, 1.8}, {4, 3.1}, {8, 4.25}})
      points.append(QJsonObject{{"ranks", n}, {"speedup", sp}});
    dock.showSweepResult(QJsonObject{{"points", points}});
    QVERIFY(dock.comparisonText().contains("Measured against reference"));
    QCOMPARE(places(), before);
    dock.findChild<QPushButton*>("lessonLock")->click();  // Try again
    lock(dock, "six-ish");
    QVERIFY(dock.comparisonText().contains("not a number"));
    QCOMPARE(places(), before);
    // The progress file becomes a folder: the next save fails and the dock says so.
    QFile::remove(dir.filePath("progress.json"));
    QVERIFY(QDir().mkpath(dir.filePath("progress.json")));
    lock(dock, "6");
    QVERIFY(!dock.problems().isEmpty());
    QVERIFY(dock.findChild<QLabel*>("lessonProblems")->isVisible());
    QCOMPARE(places(), before);
  }

  // Flashcards: the buttons stay in one place from card to card, long card or short.
  void flashcardButtonsStayPut() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    LessonDock dock(m_caps, p);
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "05-data-parallel"));
    dock.openPage(dock.pageCount() - 1);
    auto* show = dock.findChild<QPushButton*>("cardShow");
    auto* good = dock.findChild<QPushButton*>("cardGood");
    QRect showAt, goodAt;
    const int cards = dock.lessons()[dock.currentLesson()].cards.size();
    QVERIFY(cards >= 2);
    for (int i = 0; i < cards; ++i) {
      QApplication::processEvents();
      QVERIFY(show->isVisible());
      if (i == 0) showAt = placeOf(show);
      QCOMPARE(placeOf(show), showAt);
      show->click();
      QApplication::processEvents();
      if (i == 0) goodAt = placeOf(good);
      QCOMPARE(placeOf(good), goodAt);
      good->click();
    }
  }

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

  // Glossary links take the palette's link colour when the theme changes under an open page
  // (a page laid out in the light theme kept its dark blue on the dark theme's near-black).
  void linksFollowTheTheme() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "05-data-parallel"));
    dock.openPage(3);
    auto linkColours = [&] {
      QSet<QRgb> out;
      QTextDocument* doc = dock.findChild<QTextBrowser*>("lessonText")->document();
      for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
          if (it.fragment().charFormat().isAnchor())
            out << it.fragment().charFormat().foreground().color().rgb();
      return out;
    };
    QVERIFY(!linkColours().isEmpty());
    const QPalette light = QApplication::palette();
    QPalette dark = light;
    dark.setColor(QPalette::Window, QColor(45, 45, 48));
    dark.setColor(QPalette::Base, QColor(30, 30, 32));
    dark.setColor(QPalette::Text, QColor(225, 225, 225));
    dark.setColor(QPalette::Link, QColor(100, 170, 240));
    QApplication::setPalette(dark);
    QApplication::processEvents();  // the palette change reaches the widgets
    QCOMPARE(linkColours(), QSet<QRgb>({QColor(100, 170, 240).rgb()}));
    QApplication::setPalette(light);
  }

  // A dock beside the charts is ~380 px wide. Nothing on any page may hold it wider: retrieval
  // questions wrap in labels (a QGroupBox title does not wrap), experiments wrap as text.
  // Every page is also saved at that width (build/screenshots/lessons/<slug>-<page>.png) to be
  // looked at as a learner would.
  void everyPageFitsANarrowDock() {
    LessonDock dock(m_caps, paths());
    showNarrow(dock);
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots/lessons";
    QDir().mkpath(shots);
    for (int l = 0; l < dock.lessons().size(); ++l) {
      dock.openLesson(l);
      for (int p = 0; p < dock.pageCount(); ++p) {
        dock.openPage(p);
        const int need = dock.minimumSizeHint().width();
        QVERIFY2(
            need <= 380,
            qPrintable(
                QString("%1, page %2 needs %3 px").arg(dock.lessons()[l].slug).arg(p).arg(need)));
        // No wrapped text is cut: each visible label is as tall as its lines need.
        const QString cut = cutLabel(dock);
        QVERIFY2(cut.isEmpty(),
                 qPrintable(QString("%1, page %2: %3").arg(dock.lessons()[l].slug).arg(p).arg(cut)));
        QVERIFY(dock.grab().save(
            QString("%1/%2-%3.png").arg(shots, dock.lessons()[l].slug).arg(p, 2, 10, QChar('0'))));
      }
      const auto questions = dock.findChildren<QLabel*>("lessonQuestion");
      QCOMPARE(questions.size(), dock.lessons()[l].retrieval.size());
      for (QLabel* q : questions) {
        QVERIFY(q->wordWrap());
        // `code` in lesson.md shows in the code font, not as backticks.
        QVERIFY2(!q->text().contains('`'), qPrintable(q->text()));
      }
    }
  }

  // Amdahl's timing sweeps are sized to this machine's cores, and the step that goes past them
  // says so; a fitted p says what it stands on. Each page is saved with its comparison
  // (build/screenshots/lessons/sized-<page>.png) to be looked at as a learner would.
  void machineSizedStepsSayWhatTheyStandOn() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots/lessons";
    QDir().mkpath(shots);
    const int cores = machineCores();
    QStringList sized;
    for (int page = 1; page < dock.pageCount(); ++page) {
      dock.openPage(page);
      const lessons::Step* s = dock.currentStep();
      if (!s || !s->sweep || s->sweep->sizedTo.isEmpty()) continue;
      sized << s->sweep->sizedTo;
      QString shown;
      for (QLabel* l : dock.findChildren<QLabel*>())
        if (l->isVisible() && l->text().contains("swept over")) shown = l->text();
      QVERIFY2(shown.contains(QString("this machine's %1 core").arg(cores)), qPrintable(shown));
      QCOMPARE(shown.contains("(past this machine's"), s->sweep->sizedTo != "cores");
      lock(dock, "1");
      // A sweep as this machine would measure it: 80 % efficient up to the cores, flat past.
      QJsonArray points;
      for (int n : s->sweep->ranks)
        points.append(
            QJsonObject{{"ranks", n}, {"speedup", n == 1 ? 1 : 0.8 * std::min(n, cores)}});
      dock.showSweepResult(QJsonObject{{"cores", cores},
                                       {"amdahl_p", 0.6},
                                       {"gustafson_serial_fraction", 0.3},
                                       {"points", points}});
      const QString text = dock.comparisonText();
      QVERIFY2(!text.contains("run the experiment"), qPrintable(text));
      if (s->compare->metric == "amdahl_p")
        QVERIFY2(text.contains(QString("fitted on ranks 1–%1").arg(s->sweep->ranks.last())) &&
                     text.contains(lessons::fitNote(*s)),
                 qPrintable(text));
      QApplication::processEvents();
      QVERIFY(dock.grab().save(QString("%1/sized-%2.png").arg(shots).arg(page, 2, 10, QChar('0'))));
    }
    QCOMPARE(sized, QStringList({"cores", "cores", "4*cores"}));
  }

  // On a machine with more cores than the engine's largest run (64 ranks), the step that goes
  // past the cores cannot: it says so instead of claiming ranks beyond the cores.
  void oversubscriptionStepOnAManyCoreMachine() {
    QTemporaryDir dir;
    LessonDock::Paths p = pathsIn(dir);
    p.cores = 128;
    LessonDock dock(m_caps, p);
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    int seen = 0;
    for (int page = 1; page < dock.pageCount(); ++page) {
      dock.openPage(page);
      const lessons::Step* s = dock.currentStep();
      if (!s || !s->sweep || s->sweep->sizedTo.isEmpty()) continue;
      QString shown;
      for (QLabel* l : dock.findChildren<QLabel*>())
        if (l->isVisible() && l->text().contains("swept over")) shown = l->text();
      QVERIFY2(!shown.contains("(past this machine's"), qPrintable(shown));
      if (s->sweep->sizedTo != "cores") {
        ++seen;
        QVERIFY2(shown.contains("the engine's largest run, 64 ranks, does not go past this "
                                "machine's 128 cores"),
                 qPrintable(shown));
      }
    }
    QCOMPARE(seen, 1);
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
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    int due = 0;
    {
      LessonDock probe(m_caps, p);
      onlyDue(probe, p.flashcards, {"02-amdahl", "05-data-parallel"});
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

  // Both pages at the dock's narrow width and at a wide one: nothing holds the dock wider,
  // no wrapped text is cut; saved as build/screenshots/lessons/{review,glossary}-<width>.png.
  void reviewAndGlossaryFit() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    LessonDock dock(m_caps, p);
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots/lessons";
    QDir().mkpath(shots);
    dock.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dock));
    for (int width : {380, 700}) {
      dock.resize(width, 900);
      for (const QString& view : {"review", "review-answer", "glossary"}) {
        if (view == "glossary")
          dock.openGlossary();
        else
          dock.openReview();
        if (view == "review-answer") dock.findChild<QPushButton*>("reviewShow")->click();
        QApplication::processEvents();
        QVERIFY2(
            dock.minimumSizeHint().width() <= 380,
            qPrintable(QString("%1 needs %2 px").arg(view).arg(dock.minimumSizeHint().width())));
        for (QLabel* label : dock.findChildren<QLabel*>())
          if (label->isVisible() && label->wordWrap() && !label->text().isEmpty())
            QVERIFY2(label->height() >= label->heightForWidth(label->width()),
                     qPrintable(QString("%1 at %2 px: '%3' has %4 of %5 px")
                                    .arg(view)
                                    .arg(width)
                                    .arg(label->text().left(60))
                                    .arg(label->height())
                                    .arg(label->heightForWidth(label->width()))));
        QVERIFY(dock.grab().save(QString("%1/%2-%3.png").arg(shots, view).arg(width)));
      }
    }
  }

 private:
  static int dock_last_page(const LessonDock& d) { return d.pageCount() - 1; }
};

QTEST_MAIN(TestLessonDock)
#include "tst_lessons_dock.moc"
