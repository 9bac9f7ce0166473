// Lesson progress persists: write, re-open (as after a restart), read the same.
// Run: ctest -R tst_lessons_progress.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "lesson.h"
#include "lesson_score.h"
#include "progress.h"

using namespace paralab::lessons;

namespace {

// A lesson of choice steps with these titles, each asking which rank idles most
// (reference answer: `expect`).
Lesson choiceLesson(const QString& slug, const QStringList& titles, const QString& expect) {
  Lesson l;
  l.slug = slug;
  for (const QString& t : titles) {
    Step s;
    s.title = t;
    Prediction p;
    p.choices = {{"rank 0", "ranks[0].idle_ms"}, {"rank 1", "ranks[1].idle_ms"}};
    p.pick = "max";
    p.expectChoice = expect;
    s.prediction = p;
    l.steps << s;
  }
  return l;
}

}  // namespace

class TestProgress : public QObject {
  Q_OBJECT
 private slots:
  // The score counts each prediction's first attempt: within 10 % of the reference or not, and
  // its miss against the measurement kept for the step. Steps the machine cannot run are left
  // out. The measurements survive a restart.
  void scoreCountsFirstAttempts() {
    const ParseResult parsed = loadLesson(lessonsRoot() + "/02-amdahl");
    QVERIFY2(parsed.lesson, qPrintable(parsed.errors.join('\n')));
    const Lesson& l = *parsed.lesson;
    QList<int> steps;  // indices of the prediction steps
    for (int i = 0; i < l.steps.size(); ++i)
      if (l.steps[i].prediction) steps << i;
    QVERIFY(steps.size() >= 4);
    QString error;
    const auto title = [&](int i) { return l.steps[i].title; };  // what progress is kept under
    const auto referenceOf = [&](int i) {
      const Step& s = l.steps[i];
      return *referenceValue(*s.prediction, s.experiment.value_or(QJsonObject()), &error);
    };
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      Progress p(path);
      const double ref0 = referenceOf(steps[0]), ref1 = referenceOf(steps[1]);
      QVERIFY(p.lockPrediction(l.slug, title(steps[0]), ref0 * 1.05));  // near
      QVERIFY(p.lockPrediction(l.slug, title(steps[0]), ref0 * 3));  // a second try: not counted
      QVERIFY(p.lockPrediction(l.slug, title(steps[1]), ref1 * 2));  // far
      QVERIFY(p.lockPrediction(l.slug, title(steps[2]), referenceOf(steps[2])));  // exact
      QVERIFY(p.setMeasured(l.slug, title(steps[0]), ref0 * 1.05 / 1.5));  // guess 50 % above
      QVERIFY(p.setMeasured(l.slug, title(steps[1]), ref1 * 2 / 1.1));     // 10 % above
    }
    const Progress q(path);  // as after a restart
    const LessonProgress lp = q.lesson(l.slug);
    QCOMPARE(lp.measured.size(), 2);
    const LessonScore all = scoreLesson(l, lp, [](const Step&) { return true; });
    QCOMPARE(all.predictions, int(steps.size()));
    QCOMPARE(all.locked, 3);
    QCOMPARE(all.nearReference, 2);
    QCOMPARE(all.measured, 2);
    QVERIFY2(std::abs(all.medianMissPercent - 30) < 1e-6, qPrintable(QString::number(all.medianMissPercent)));
    const QString text = all.text();
    QVERIFY2(text.contains(QString("2 of %1 predictions within 10 % of the reference").arg(steps.size())) &&
                 text.contains(QString("(%1 not locked in yet)").arg(steps.size() - 3)) &&
                 text.contains("median miss of 30 % (2 measured)"),
             qPrintable(text));
    // A step this machine cannot run is not held against the learner.
    const Step* first = &l.steps[steps[0]];
    const LessonScore without = scoreLesson(l, lp, [&](const Step& s) { return &s != first; });
    QCOMPARE(without.predictions, int(steps.size()) - 1);
    QCOMPARE(without.nearReference, 1);
    QCOMPARE(without.measured, 1);
  }

  // Choices: a first pick is right when it is the reference answer and matched when it is the
  // measured one; both kept in the file with each choice's value.
  void scoreCountsChoices() {
    const Lesson l = choiceLesson("09-who", {"step 1", "step 2", "step 3", "step 4"}, "rank 0");
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      Progress p(path);
      QVERIFY(p.lockChoice(l.slug, "step 1", "rank 0"));  // right; measured rank 0: matched
      QVERIFY(p.lockChoice(l.slug, "step 1", "rank 1"));  // a second try: not counted
      QVERIFY(p.lockChoice(l.slug, "step 2", "rank 0"));  // right; measured rank 1: not matched
      QVERIFY(p.lockChoice(l.slug, "step 3", "rank 1"));  // wrong; measured rank 1: matched
      QVERIFY(p.setMeasuredChoice(l.slug, "step 1", {"rank 0", {12.5, 3.0}}));
      QVERIFY(p.setMeasuredChoice(l.slug, "step 2", {"rank 1", {2.0, 4.0}}));
      QVERIFY(p.setMeasuredChoice(l.slug, "step 3", {"rank 1", {1.0, std::nan("")}}));
    }
    const Progress q(path);  // as after a restart
    const LessonProgress lp = q.lesson(l.slug);
    QCOMPARE(lp.choices.value("step 1"), QStringList({"rank 0", "rank 1"}));
    QCOMPARE(lp.measuredChoices.value("step 2").answer, QString("rank 1"));
    QCOMPARE(lp.measuredChoices.value("step 1").values, QList<double>({12.5, 3.0}));
    QVERIFY(std::isnan(lp.measuredChoices.value("step 3").values.value(1)));  // no value: kept as none
    const LessonScore score = scoreLesson(l, lp, [](const Step&) { return true; });
    QCOMPARE(score.predictions, 0);  // no numbers asked
    QCOMPARE(score.choices, 4);
    QCOMPARE(score.choicesLocked, 3);
    QCOMPARE(score.choicesRight, 2);
    QCOMPARE(score.choicesMeasured, 3);
    QCOMPARE(score.choicesMatched, 2);
    QCOMPARE(score.text(), QString("Your score: 2 of 4 first picks were the reference answer (1 not "
                                   "picked yet); 2 of 3 matched your measurement."));
    // Beside numbers, the choices' part follows theirs.
    LessonScore both = score;
    both.predictions = 2;
    both.locked = 2;
    QVERIFY2(both.text().contains("measured yet. Choices: 2 of 4 first picks"), qPrintable(both.text()));
  }

  void survivesRestart() {
    QTemporaryDir dir;
    const QString path = dir.filePath("state/progress.json");
    const QDateTime done(QDate(2025, 3, 1), QTime(12, 30), Qt::UTC);
    {
      Progress p(path);
      QCOMPARE(p.lesson("02-amdahl").stepReached, 0);
      QVERIFY(p.reachStep("02-amdahl", 3));
      QVERIFY(p.reachStep("02-amdahl", 1));  // going back keeps the furthest step
      QVERIFY(p.lockPrediction("02-amdahl", "Predict the ceiling", 5.9));
      QVERIFY(p.lockPrediction("02-amdahl", "Predict the ceiling", 6.4));  // the first is kept
      QVERIFY(p.setAnswer("02-amdahl", 0, "The serial part caps it: 1/(1-p)."));
      QVERIFY(p.reachStep("05-data-parallel", 2));
      QVERIFY(p.complete("01-serial-parallel", done));
      QVERIFY(p.complete("01-serial-parallel", done.addDays(1)));  // first completion kept
    }
    const Progress q(path);
    const LessonProgress a = q.lesson("02-amdahl");
    QCOMPARE(a.stepReached, 3);
    QVERIFY(!a.completed);
    QCOMPARE(a.predictions.value("Predict the ceiling"), QList<double>({5.9, 6.4}));
    QCOMPARE(a.answers.value(0), QString("The serial part caps it: 1/(1-p)."));
    QCOMPARE(q.lesson("05-data-parallel").stepReached, 2);
    const LessonProgress s = q.lesson("01-serial-parallel");
    QVERIFY(s.completed);
    QCOMPARE(s.completedAt, done);
    QVERIFY(q.error().isEmpty());
  }

  void resetForgets() {
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      Progress p(path);
      p.reachStep("03-gustafson", 4);
      p.resetLesson("03-gustafson");
    }
    QCOMPARE(Progress(path).lesson("03-gustafson").stepReached, 0);
  }

  void defaultPathIsPerUserAppData() {
    QCoreApplication::setApplicationName("ParaLabTest");
    const QString path = Progress::defaultPath();
    QVERIFY2(path.endsWith("/progress.json") && path.contains("ParaLabTest"), qPrintable(path));
  }

  // A progress file that is not JSON (a crash elsewhere, a hand edit) is said and kept aside:
  // the next write must not destroy what the learner had.
  void unreadableFileIsKept() {
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("{\"lessons\": {\"02-amdahl\": {\"step_reached\": 3");  // cut off
    }
    Progress p(path);
    QVERIFY2(p.error().contains("not JSON") && p.error().contains(".unreadable"),
             qPrintable(p.error()));
    QCOMPARE(p.lesson("02-amdahl").stepReached, 0);
    QVERIFY(p.reachStep("01-serial-parallel", 1));
    QVERIFY(p.error().isEmpty());
    QFile kept(path + ".unreadable");
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QVERIFY(kept.readAll().contains("\"step_reached\": 3"));
    QCOMPARE(Progress(path).lesson("01-serial-parallel").stepReached, 1);
  }

  // A file from before predictions had attempts ("2": 5.9) reads as one attempt.
  void singlePredictionIsOneAttempt() {
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"version": 1, "lessons": {"02-amdahl": {"predictions": {"2": 5.9}}}})");
    }
    Progress p(path);
    QVERIFY(p.adoptPageKeys("02-amdahl", {"First", "Second"}));
    QCOMPARE(p.lesson("02-amdahl").predictions.value("Second"), QList<double>({5.9}));
    QVERIFY(p.lockPrediction("02-amdahl", "Second", 7));
    QCOMPARE(Progress(path).lesson("02-amdahl").predictions.value("Second"),
             QList<double>({5.9, 7.0}));
  }

  // Progress belongs to a step, not to a position: a step added to the lesson before it (as
  // lessons grow) leaves the learner's guesses, picks and measurements on the step they were
  // made on, after a restart too, and the score still counts them.
  void aNewStepMovesNothing() {
    const Lesson before = choiceLesson("06-who", {"Warm up", "Who waits"}, "rank 1");
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      Progress p(path);
      QVERIFY(p.lockChoice(before.slug, "Who waits", "rank 1"));
      QVERIFY(p.setMeasuredChoice(before.slug, "Who waits", {"rank 1", {1.0, 9.0}}));
    }
    Lesson after = before;  // a step inserted between the two
    Step inserted = before.steps[0];
    inserted.title = "A new experiment";
    after.steps.insert(1, inserted);
    const Progress q(path);
    QVERIFY(q.lesson(after.slug).choices.value("A new experiment").isEmpty());
    QCOMPARE(q.lesson(after.slug).choices.value("Who waits"), QStringList({"rank 1"}));
    const LessonScore score = scoreLesson(after, q.lesson(after.slug), [](const Step&) { return true; });
    QCOMPARE(score.choices, 3);
    QCOMPARE(score.choicesLocked, 1);
    QCOMPARE(score.choicesRight, 1);
    QCOMPARE(score.choicesMatched, 1);
  }

  // A file keyed by page (before titles were the key) is read with the lesson's titles once,
  // written back keyed by title, and a page past the last step is kept, not dropped.
  void pageKeysAreAdoptedOnce() {
    QTemporaryDir dir;
    const QString path = dir.filePath("progress.json");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"version": 1, "lessons": {"06-who": {"choices": {"1": ["rank 0"], "9": ["rank 2"]},
              "measured": {"2": 4.5}}}})");
    }
    {
      Progress p(path);
      QVERIFY(p.adoptPageKeys("06-who", {"Warm up", "Who waits"}));
      QCOMPARE(p.lesson("06-who").choices.value("Warm up"), QStringList({"rank 0"}));
      QCOMPARE(p.lesson("06-who").measured.value("Who waits"), 4.5);
      QCOMPARE(p.lesson("06-who").choices.value("page 9"), QStringList({"rank 2"}));
    }
    Progress again(path);  // keyed by title now: a second adoption renames nothing
    QVERIFY(again.adoptPageKeys("06-who", {"Other", "Titles"}));
    QCOMPARE(again.lesson("06-who").choices.value("Warm up"), QStringList({"rank 0"}));
    QCOMPARE(again.lesson("06-who").measured.value("Who waits"), 4.5);
  }

  void unwritableSaysWhy() {
    Progress p("/proc/no-such-dir/progress.json");
    QVERIFY(!p.reachStep("01-serial-parallel", 1));
    QVERIFY(!p.error().isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestProgress)
#include "tst_lessons_progress.moc"
