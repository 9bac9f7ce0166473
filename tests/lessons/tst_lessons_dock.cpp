// The lessons panel's steps, offscreen: every lesson loads, a step's experiment reaches the run
// controls as a RunConfig only once a prediction is locked in (and a locked one stays locked),
// "43%" reads as 0.43, a locked-in prediction or choice shows beside its reference and the
// measurement, lessons the engine cannot run are "coming", and sweeps sized to the machine say
// what they stand on. The panel's layout is in tst_lessons_dock_layout, its cards, progress and
// glossary in tst_lessons_dock_cards. Run: ctest -R tst_lessons_dock
#include <QApplication>
#include <QJsonArray>
#include <QRadioButton>
#include <QSignalSpy>

#include "describe.h"
#include "engine_bridge.h"
#include "lesson_dock_test.h"
#include "progress.h"
#include "train/sweep.h"

using namespace paralab;

class TestLessonDock : public test::LessonDockTest {
  Q_OBJECT

 private slots:
  void loadsEveryLesson() {
    LessonDock dock(m_caps, paths());
    QVERIFY2(dock.loadErrors().isEmpty(), qPrintable(dock.loadErrors().join('\n')));
    QCOMPARE(dock.lessons().size(), 17);
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

  // The step's experiment line names each setting as the run's description does (the words
  // of the summary and the charts' subtitles), not by its flag.
  void experimentLineUsesTheRunsWords() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "01-serial-parallel"));
    dock.openPage(1);
    const lessons::Step* s = dock.currentStep();
    QVERIFY(s && s->experiment);
    const std::optional<RunConfig> c = lessons::configFromExperiment(*s->experiment);
    QVERIFY(c);
    QString shown;
    for (QLabel* l : dock.findChildren<QLabel*>())
      if (l->text().contains(QString::fromStdString(settingWords(*c, "hidden").label)))
        shown = l->text();
    for (const QString& key : s->experiment->keys()) {
      const SettingWords w = settingWords(*c, key.toStdString());
      QVERIFY2(shown.contains(QString::fromStdString(w.label + ": " + w.words)), qPrintable(shown));
    }
  }

  // A prediction with choices: picked with a radio button, locked before the run; after the run
  // the step shows the pick, the reference answer and the measured one with each choice's value,
  // all kept for the score. Saved at the dock's narrow width before the lock, after it and after
  // the run (build/screenshots/lessons/choice-*.png), with nothing cut.
  void choicePickedRunAndShown() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    showNarrow(dock);
    const QString shots = shotsDir();
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
    // Try again: the reference and the measurement hide until the new guess is locked in.
    dock.findChild<QPushButton*>("lessonLock")->click();
    QVERIFY(!dock.predictionLocked());
    QVERIFY2(dock.comparisonText().contains("Your earlier answers: 6.5") &&
                 !dock.comparisonText().contains("5.926") && !dock.comparisonText().contains("4.25"),
             qPrintable(dock.comparisonText()));
    dock.findChild<QLineEdit*>("lessonPrediction")->setText("5");
    dock.findChild<QPushButton*>("lessonLock")->click();
    QVERIFY(dock.predictionLocked());
    QVERIFY2(dock.comparisonText().contains("5.926") && dock.comparisonText().contains("before: 6.5"),
             qPrintable(dock.comparisonText()));
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

  // A worked problem (a prediction in a step with nothing to run): locking the answer shows the
  // reference and, under "Worked solution", the reasoning; there is no experiment to run. Saved
  // once locked (build/screenshots/lessons/worked.png), with nothing cut.
  void workedProblemShowsItsSolution() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    const int page = openFirstStep(
        dock, [](const lessons::Step& s) { return s.prediction && s.prediction->worked; });
    QVERIFY(page > 0);
    QVERIFY(!dock.currentStep()->experiment && !dock.currentStep()->sweep);
    QVERIFY(!dock.findChild<QPushButton*>("lessonRun")->isVisible());
    QVERIFY2(dock.comparisonText().contains("then the worked solution shows") &&
                 !dock.comparisonText().contains("Worked solution:"),
             qPrintable(dock.comparisonText()));
    lock(dock, "1.8");
    QVERIFY(dock.predictionLocked());
    const QString text = dock.comparisonText();
    const lessons::Prediction& p = *dock.currentStep()->prediction;
    QVERIFY2(text.contains("<b>Worked solution:</b>") &&
                 !text.contains("Where the reference comes from") && text.contains("1.8") &&
                 text.contains(QString::number(*p.expect)),
             qPrintable(text));
    QApplication::processEvents();
    const QString cut = cutLabel(dock);
    QVERIFY2(cut.isEmpty(), qPrintable(cut));
    QVERIFY(dock.grab().save(shotsDir() + "/worked.png"));
  }

  void comingLessonsCannotRun() {
    LessonDock dock(m_caps, paths());
    dock.openLesson(slugIndex(dock, "07-zero-fsdp"));
    dock.openPage(1);
    auto* run = dock.findChild<QPushButton*>("lessonRun");
    QVERIFY(!run->isEnabled());
    QVERIFY2(run->toolTip().contains("zero-1"), qPrintable(run->toolTip()));
  }

  // A fitted p of −1.135 is no fraction of anything: the comparison says the fit does not
  // describe the run, in words, and shows no number for it.
  void fitOutsideItsRangeIsWords() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    const int page = openFirstStep(
        dock, [](const lessons::Step& s) { return s.compare && s.compare->metric == "amdahl_p"; });
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
      dock.openPage(2);                                // a sweep, with a prediction
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
    const int page = openFirstStep(
        dock, [](const lessons::Step& s) { return s.prediction && s.prediction->expect == 0.43; });
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

  // Amdahl's timing sweeps are sized to this machine's cores, and the step that goes past them
  // says so; a fitted p says what it stands on. Each page is saved with its comparison
  // (build/screenshots/lessons/sized-<page>.png) to be looked at as a learner would.
  void machineSizedStepsSayWhatTheyStandOn() {
    QTemporaryDir dir;
    LessonDock dock(m_caps, pathsIn(dir));
    showNarrow(dock);
    dock.openLesson(slugIndex(dock, "02-amdahl"));
    const QString shots = shotsDir();
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
};

QTEST_MAIN(TestLessonDock)
#include "tst_lessons_dock.moc"
