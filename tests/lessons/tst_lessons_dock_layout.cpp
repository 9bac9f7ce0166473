// The lessons panel as a learner sees it, offscreen: buttons stay put while a page changes,
// glossary terms become hover links (never in headings) in either theme, and every page, the
// review and the glossary fit a narrow dock with no text cut (saved under
// build/screenshots/lessons/). Run: ctest -R tst_lessons_dock_layout
#include <QApplication>
#include <QJsonArray>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

#include "lesson_dock_test.h"

using namespace paralab;

class TestLessonDockLayout : public test::LessonDockTest {
  Q_OBJECT

 private slots:
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
    const QString shots = shotsDir();
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
        QVERIFY2(
            cut.isEmpty(),
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

  // Both pages at the dock's narrow width and at a wide one: nothing holds the dock wider,
  // no wrapped text is cut; saved as build/screenshots/lessons/{review,glossary}-<width>.png.
  void reviewAndGlossaryFit() {
    QTemporaryDir dir;
    LessonDock::Paths p = paths();
    p.flashcards = dir.filePath("cards.json");
    LessonDock dock(m_caps, p);
    const QString shots = shotsDir();
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
};

QTEST_MAIN(TestLessonDockLayout)
#include "tst_lessons_dock_layout.moc"
