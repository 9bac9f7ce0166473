// The lessons panel, offscreen: every lesson loads, a step's experiment reaches the run controls
// as a RunConfig, a locked-in prediction shows beside its reference and the measurement, lessons
// the engine cannot run are "coming", glossary terms become hover links, every page fits a
// narrow dock, progress and cards survive a restart. Run: ctest -R tst_lessons_dock.
#include <QDir>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

#include "panels/lesson_dock.h"

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
  static int slugIndex(const LessonDock& d, const QString& slug) {
    for (int i = 0; i < d.lessons().size(); ++i)
      if (d.lessons()[i].slug == slug) return i;
    return -1;
  }

 private slots:
  void loadsEveryLesson() {
    LessonDock dock(m_caps, paths());
    QVERIFY2(dock.loadErrors().isEmpty(), qPrintable(dock.loadErrors().join('\n')));
    QCOMPARE(dock.lessons().size(), 13);
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

  void predictionReferenceMeasurement() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    dock.openPage(2);  // measure the speedup: a sweep over 1, 2, 4, 8 ranks
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

  // A dock beside the charts is ~380 px wide. Nothing on any page may hold it wider: retrieval
  // questions wrap in labels (a QGroupBox title does not wrap), experiments wrap as text.
  // Every page is also saved at that width (build/screenshots/lessons/<slug>-<page>.png) to be
  // looked at as a learner would.
  void everyPageFitsANarrowDock() {
    LessonDock dock(m_caps, paths());
    dock.resize(380, 900);
    dock.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dock));
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
        for (QLabel* label : dock.findChildren<QLabel*>())
          if (label->isVisible() && label->wordWrap() && !label->text().isEmpty())
            QVERIFY2(
                label->height() >= label->heightForWidth(label->width()) &&
                    label->parentWidget()->rect().contains(label->geometry()),
                qPrintable(
                    QString(
                        "%1, page %2: '%3' has %4 of the %5 px it needs, or lies outside its box")
                        .arg(dock.lessons()[l].slug)
                        .arg(p)
                        .arg(label->text().left(60))
                        .arg(label->height())
                        .arg(label->heightForWidth(label->width()))));
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
        for (QPushButton* b : buttons)
          if (b->text() == text) return b;
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

 private:
  static int dock_last_page(const LessonDock& d) { return d.pageCount() - 1; }
};

QTEST_MAIN(TestLessonDock)
#include "tst_lessons_dock.moc"
