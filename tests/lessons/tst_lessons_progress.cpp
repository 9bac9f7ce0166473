// Lesson progress persists: write, re-open (as after a restart), read the same.
// Run: ctest -R tst_lessons_progress.
#include <QTemporaryDir>
#include <QtTest>

#include "progress.h"

using namespace paralab::lessons;

class TestProgress : public QObject {
  Q_OBJECT
 private slots:
  void survivesRestart() {
    QTemporaryDir dir;
    const QString path = dir.filePath("state/progress.json");
    const QDateTime done(QDate(2025, 3, 1), QTime(12, 30), Qt::UTC);
    {
      Progress p(path);
      QCOMPARE(p.lesson("02-amdahl").stepReached, 0);
      QVERIFY(p.reachStep("02-amdahl", 3));
      QVERIFY(p.reachStep("02-amdahl", 1));  // going back keeps the furthest step
      QVERIFY(p.lockPrediction("02-amdahl", 2, 5.9));
      QVERIFY(p.lockPrediction("02-amdahl", 2, 6.4));  // a second attempt keeps the first
      QVERIFY(p.setAnswer("02-amdahl", 0, "The serial part caps it: 1/(1-p)."));
      QVERIFY(p.reachStep("05-data-parallel", 2));
      QVERIFY(p.complete("01-serial-parallel", done));
      QVERIFY(p.complete("01-serial-parallel", done.addDays(1)));  // first completion kept
    }
    const Progress q(path);
    const LessonProgress a = q.lesson("02-amdahl");
    QCOMPARE(a.stepReached, 3);
    QVERIFY(!a.completed);
    QCOMPARE(a.predictions.value(2), QList<double>({5.9, 6.4}));
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
    QCOMPARE(p.lesson("02-amdahl").predictions.value(2), QList<double>({5.9}));
    QVERIFY(p.lockPrediction("02-amdahl", 2, 7));
    QCOMPARE(Progress(path).lesson("02-amdahl").predictions.value(2), QList<double>({5.9, 7.0}));
  }

  void unwritableSaysWhy() {
    Progress p("/proc/no-such-dir/progress.json");
    QVERIFY(!p.reachStep("01-serial-parallel", 1));
    QVERIFY(!p.error().isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestProgress)
#include "tst_lessons_progress.moc"
