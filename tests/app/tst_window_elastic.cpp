// An --elastic mpirun job whose replica fails (train/elastic.h, app/job_runner.cpp): 4 processes
// with --fail 3@10 --checkpoint-every 5 end for a relaunch, the window's launcher starts the job
// again on 3 processes from its checkpoint at step 5, and it completes its steps; from the resume
// on its losses equal those of a 3-process job resumed from the same step's checkpoint (1e-5),
// and no process of either launch is left. Run: ctest -R tst_window_elastic --output-on-failure
#include <signal.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

#include "capabilities.h"
#include "describe.h"
#include "job_command.h"
#include "job_runner.h"
#include "train/elastic.h"
#include "window_test.h"

using namespace paralab;

namespace {

constexpr uint32_t kSeed = 91751;  // marks this suite's command lines

bool canLaunch() { return mpiBuilt() && !mpirunProgram().isEmpty(); }

RunConfig plainJob(int np, int steps) {
  RunConfig c = test::quickConfig(steps, np);
  c.backend = Backend::Mpi;
  c.batch = 48;
  c.evalEvery = 0;
  c.seed = kSeed;
  return c;
}

// `mpirun -np N paralab-run --backend mpi --json` of `c` with `extra` flags: each step line's
// (step, loss), or none when the job failed.
std::vector<std::pair<int64_t, double>> runJob(const RunConfig& c, const QStringList& extra) {
  QStringList args = rootFlag();
  args << "--oversubscribe"
       << "-np" << QString::number(c.ranks) << paralabRunProgram() << "--backend"
       << "mpi"
       << "--json";
  for (const std::string& f : runFlags(c, {"backend", "ranks"})) args << QString::fromStdString(f);
  args << extra;
  QProcess p;
  p.start(mpirunProgram(), args);
  if (!p.waitForFinished(180000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    qWarning("the job failed: %s", p.readAllStandardError().constData());
    return {};
  }
  std::vector<std::pair<int64_t, double>> out;
  for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line.toStdString());
    if (j.contains("step")) out.emplace_back(j["step"].get<int64_t>(), j["loss"].get<double>());
  }
  return out;
}

// No process of the launches with these tokens is left, nor any with this suite's seed.
bool jobsAreGone(const QStringList& tokens) {
  for (const QString& t : tokens)
    if (!JobRunner::processesOf(t).isEmpty()) return false;
  QProcess pgrep;
  pgrep.start("pgrep", {"-f", QString("paralab-run.*--seed %1").arg(kSeed)});
  pgrep.waitForFinished(10000);
  return pgrep.readAllStandardOutput().trimmed().isEmpty();
}

}  // namespace

class TestWindowElastic : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::startAsANewLearner(); }

  // Under mpirun --elastic needs the checkpoints it relaunches from.
  void refusedWithoutCheckpoints() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    RunConfig c = plainJob(2, 4);
    c.elastic = true;
    QProcess p;
    p.start(paralabRunProgram(), {"--backend", "mpi", "--elastic", "--steps", "4"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QCOMPARE(QString::fromUtf8(p.readAllStandardError()).trimmed(),
             QString("paralab-run: elastic: under mpirun the job relaunches on its survivors "
                     "from its last checkpoint (allowed: with --checkpoint-every K and --save "
                     "FILE)"));
  }

  void relaunchedOnTheSurvivors() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    RunConfig c = plainJob(4, 15);
    c.fail = "3@10";
    c.elastic = true;
    c.checkpointEvery = 5;
    JobRunner runner;
    QCOMPARE(runner.start(c), std::string());
    const QString first = runner.token();
    QTRY_VERIFY_WITH_TIMEOUT(runner.snapshot().state == RunState::Finished ||
                                 runner.snapshot().state == RunState::Failed,
                             240000);
    const Snapshot s = runner.snapshot();
    QVERIFY2(s.state == RunState::Finished, s.error.c_str());
    // The first launch ended with the failed rank's line; the second is the survivors'.
    const QString notice = QString::fromStdString(s.notice);
    QVERIFY2(
        notice.contains("rank 3 failed at step 10") && notice.contains("relaunched on 3 processes"),
        qPrintable(notice));
    QVERIFY(runner.token() != first);
    QVERIFY2(runner.commandText().contains(" -np 3 ") && runner.commandText().contains("--resume"),
             qPrintable(runner.commandText()));
    QVERIFY(!runner.commandText().contains("--fail"));
    QCOMPARE(s.config.ranks, 3);
    QTRY_VERIFY_WITH_TIMEOUT(jobsAreGone({first, runner.token()}), 10000);

    // Steps 1 to 9 on 4 processes, then from the checkpoint at step 5: 6 to 15 on 3.
    std::vector<int64_t> steps, want;
    std::vector<double> resumed;
    for (int64_t i = 1; i <= 9; ++i) want.push_back(i);
    for (int64_t i = 6; i <= 15; ++i) want.push_back(i);
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const StepMetrics& m = s.steps[i];
      steps.push_back(m.step);
      const int world = i < 9 ? 4 : 3;
      QCOMPARE(int(m.ranks.size()), world);
      QCOMPARE(m.world.value_or(0), world);
      if (i >= 9) resumed.push_back(m.loss);
    }
    QCOMPARE(steps, want);

    // The reference: 4 processes to step 5 (the checkpoint's state), then 3 resumed from it.
    QTemporaryDir dir;
    const QString ckpt = dir.filePath("step5.ckpt");
    QCOMPARE(runJob(plainJob(4, 5), {"--save", ckpt}).size(), size_t(5));
    const auto reference = runJob(plainJob(3, 15), {"--resume", ckpt});
    QCOMPARE(reference.size(), resumed.size());
    for (size_t i = 0; i < resumed.size(); ++i) {
      QCOMPARE(reference[i].first, int64_t(6 + i));
      QVERIFY2(std::abs(reference[i].second - resumed[i]) <= 1e-5,
               qPrintable(QString("step %1: relaunched %2, reference %3")
                              .arg(6 + i)
                              .arg(resumed[i], 0, 'g', 10)
                              .arg(reference[i].second, 0, 'g', 10)));
    }
    QTRY_VERIFY_WITH_TIMEOUT(jobsAreGone({}), 10000);
  }
};

QTEST_MAIN(TestWindowElastic)
#include "tst_window_elastic.moc"
