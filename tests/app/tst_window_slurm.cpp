// Slurm jobs from the window against a real single-node Slurm (slurm_cluster.sh): a 2-task job
// submitted with sbatch fills the charts from its output file, obeys Pause, Step and Resume, is
// relaunched by a live change, fails with its rank's line, waits in the queue with Slurm's
// reason, runs headless, and Reset cancels it leaving no process. Where the daemons cannot
// start, the suite says why and is skipped.
// Run: ctest -R tst_window_slurm --output-on-failure
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>
#include <set>

#include "batch_script.h"
#include "capabilities.h"  // mpiBuilt
#include "charts/chart_hub.h"
#include "charts/holdings_map.h"
#include "charts/timeline_chart.h"
#include "job_runner.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "schema.h"
#include "settings.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;

namespace {

// A quick 2-rank Slurm job; `steps` 0: longer than any test waits.
RunConfig slurmConfig(int steps) {
  RunConfig c = test::quickConfig(steps == 0 ? 1000000 : steps, 2);
  c.backend = Backend::Slurm;
  c.evalEvery = steps == 0 ? 0 : 10;
  findSetting("partition")->set(c, std::string("test"));
  findSetting("time-limit")->set(c, std::string("10:00"));
  return c;
}

// The cluster's script: "start" or "stop" of the cluster in `dir`; its exit code, its stderr.
int cluster(const char* what, const QString& dir, QString* said = nullptr) {
  QProcess p;
  p.start("bash", {PARALAB_SLURM_CLUSTER, what, dir});
  if (!p.waitForFinished(90000)) {
    p.kill();
    p.waitForFinished(5000);
    if (said) *said = "slurm_cluster.sh did not answer in 90 s";
    return -1;
  }
  if (said) *said = QString::fromLocal8Bit(p.readAllStandardError()).trimmed();
  return p.exitCode();
}

// Slurm's word on `job` (squeue keeps ended jobs for MinJobAge): "RUNNING", "CANCELLED" ...
QString squeueState(const QString& job) {
  QProcess p;
  p.start("squeue", {"--noheader", "--states=all", "--jobs", job, "--format=%T"});
  p.waitForFinished(10000);
  return QString::fromLocal8Bit(p.readAllStandardOutput()).trimmed();
}

// The job's id, out of the runner's "Slurm job 12 running".
QString jobIdOf(const JobRunner* job) {
  return job ? job->jobState().section(' ', 2, 2) : QString();
}

// scontrol update PartitionName=test State=`state`.
void setPartition(const char* state) {
  QProcess p;
  p.start("scontrol", {"update", "PartitionName=test", QString("State=") + state});
  p.waitForFinished(10000);
}

bool noRunOfSeed(uint32_t seed) {
  QProcess pgrep;
  pgrep.start("pgrep", {"-f", QString("paralab-run.*--seed %1").arg(seed)});
  pgrep.waitForFinished(10000);
  return pgrep.readAllStandardOutput().trimmed().isEmpty();
}

// `paralab --config` of `config` with `more` flags; exit code and stderr.
int runParalab(const RunConfig& config, const QStringList& more, QString* err,
               const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QTemporaryDir dir;
  QFile f(dir.filePath("job.json"));
  if (!f.open(QIODevice::WriteOnly)) return -1;
  f.write(QByteArray::fromStdString(config.toJson().dump()));
  f.close();
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(PARALAB_APP_EXE, QStringList{"--config", f.fileName()} + more);
  if (!p.waitForFinished(180000)) return -1;
  // The program's own lines ("paralab: ..."), without the platform's notes.
  const QStringList lines = QString::fromLocal8Bit(p.readAllStandardError()).split('\n');
  *err = lines.filter(QRegularExpression("^paralab: ")).join('\n') + '\n';
  return p.exitCode();
}

}  // namespace

class TestWindowSlurm : public QObject {
  Q_OBJECT
  QString m_dir = PARALAB_SLURM_DIR;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QFile::remove(Settings::open()->fileName());
    if (!mpiBuilt())  // a job's ranks are paralab-run --backend mpi under mpirun
      QSKIP("this build has no MPI: a Slurm job's ranks run paralab-run under mpirun");
    QString said;
    // Without a cluster the whole suite is skipped (CTest reads this line as a skip): no row
    // passes where Slurm was not there to try it.
    if (const int code = cluster("start", m_dir, &said); code != 0)
      QSKIP(qPrintable("no Slurm cluster: " +
                       (said.isEmpty() ? QString("exit code %1").arg(code) : said)));
    qputenv("SLURM_CONF", QString(m_dir + "/slurm.conf").toLocal8Bit());
    qputenv("PARALAB_JOBS_DIR", QString(m_dir + "/jobs").toLocal8Bit());
  }
  // Whatever happened, no daemon and no job of the cluster stays.
  void cleanupTestCase() { cluster("stop", m_dir); }

  // The batch script Start submits, shown under the choice in place of the hosts, copyable.
  void batchScriptIsShown() {
    ConfigPanel panel;
    panel.setConfig(slurmConfig(20));
    auto* script = child<QPlainTextEdit>(&panel, "batchScript");
    QVERIFY(script && script->isVisibleTo(&panel));
    QVERIFY(!child<QLineEdit>(&panel, "hosts")->isVisibleTo(&panel));
    const QString text = script->toPlainText();
    for (const QString& needle :
         {QString("#!/bin/bash\n"), QString("#SBATCH --partition=test\n"),
          QString("#SBATCH --nodes=1\n"), QString("#SBATCH --ntasks=2\n"),
          QString("#SBATCH --time=10:00\n"), QString("#SBATCH --output=paralab-%j.out\n"),
          QString("mpirun "), QString(" -np 2 "),
          QString(" --backend mpi --json --control control "), QString("--steps 20")})
      QVERIFY2(text.contains(needle), qPrintable(text + "\nlacks: " + needle));
    QVERIFY2(!text.contains("--nodes 1") && !text.contains("--time-limit"), qPrintable(text));
    QCOMPARE(text, batchJobCommand(panel.config()).script);
    child<QPushButton>(&panel, "copyBatchScript")->click();
    QCOMPARE(QApplication::clipboard()->text(), text);
    QDir().mkpath(QString(PARALAB_BINARY_DIR) + "/screenshots");
    panel.resize(panel.sizeHint().width() + 80, panel.sizeHint().height());
    QVERIFY(panel.grab().save(QString(PARALAB_BINARY_DIR) + "/screenshots/slurm-settings.png"));
  }

  // Nodes 0, a time Slurm does not read, ranks that do not fit, no sbatch: one line naming
  // the field, exit 2 on the command line.
  void badSettingsAreOneLine() {
    QTemporaryDir bad;
    const QString badDir = bad.filePath("out");
    RunConfig c = slurmConfig(5);
    findSetting("nodes")->set(c, int64_t(0));
    QString err;
    QCOMPARE(runParalab(c, {"--export", badDir}, &err), 2);
    QVERIFY2(err.startsWith("paralab: nodes: 0 is out of range") && err.count('\n') == 1,
             qPrintable(err));
    c = slurmConfig(5);
    findSetting("time-limit")->set(c, std::string("soon"));
    QCOMPARE(runParalab(c, {"--export", badDir}, &err), 2);
    QVERIFY2(
        err.startsWith("paralab: time-limit: 'soon' is not a Slurm time") && err.count('\n') == 1,
        qPrintable(err));
    c = slurmConfig(5);
    findSetting("tasks-per-node")->set(c, int64_t(1));
    QCOMPARE(batchJobCommand(c).error,
             QString("tasks-per-node: 1 on 1 node(s) hold fewer than the 2 ranks (allowed: 0, "
                     "or at least 2)"));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PATH", "/nonexistent");
    QCOMPARE(runParalab(slurmConfig(5), {"--export", badDir}, &err, env), 2);
    QVERIFY2(err.contains("backend: sbatch was not found on PATH") && err.count('\n') == 1,
             qPrintable(err));
  }

  // A 2-task job: its lines fill the charts (both ranks, timeline and holdings), Pause holds
  // it, Step takes one step, Resume goes on, a live change relaunches it from a checkpoint as
  // a new job, Export All saves its script, Reset cancels it and leaves no process.
  void jobDrawsPausesRelaunchesAndCancels() {
    MainWindow w;
    RunConfig c = slurmConfig(0);
    c.seed = 91741;  // marks this job's command lines
    w.configPanel()->setConfig(c);
    w.startAction()->trigger();
    JobRunner* job = w.jobRunner();
    QVERIFY2(job, qPrintable(w.statusBar()->currentMessage()));
    const QString id = jobIdOf(job);
    QVERIFY2(!id.isEmpty(), qPrintable(job->jobState()));
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 3, 90000);
    QCOMPARE(squeueState(id), QString("RUNNING"));
    QCOMPARE(int(w.chartHub()->lastSnapshot().steps.back().ranks.size()), 2);
    std::set<int> timelineRanks, holdingRanks;
    for (const TimelineChart::Bar& b : w.chartHub()->find<TimelineChart>()->bars())
      timelineRanks.insert(b.rank);
    for (const HoldingsMap::Cell& cell : w.chartHub()->find<HoldingsMap>()->cells())
      holdingRanks.insert(cell.rank);
    QVERIFY(timelineRanks == (std::set<int>{0, 1}));
    QVERIFY(holdingRanks == (std::set<int>{0, 1}));

    w.pauseAction()->trigger();
    QCOMPARE(w.runState(), RunState::Paused);
    int64_t held = w.history().stepsSeen();
    QElapsedTimer still, waited;
    still.start(), waited.start();
    while (still.elapsed() < 2000 && waited.elapsed() < 30000) {
      QTest::qWait(100);
      if (w.history().stepsSeen() != held) held = w.history().stepsSeen(), still.restart();
    }
    QVERIFY2(still.elapsed() >= 2000, "steps kept coming for 30 s after Pause");
    w.stepAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(w.history().stepsSeen(), held + 1, 20000);
    QTest::qWait(1000);
    QCOMPARE(w.history().stepsSeen(), held + 1);
    w.startAction()->trigger();  // Resume
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= held + 4, 20000);

    c.lr = c.lr / 2;
    w.configPanel()->setConfig(c);
    w.applyLiveChanges();
    QTRY_COMPARE_WITH_TIMEOUT(w.liveChanges().size(), 1, 90000);
    const QString relaunched = jobIdOf(w.jobRunner());
    QVERIFY2(relaunched != id, qPrintable(w.jobRunner()->jobState()));
    const int64_t changedAt = w.history().stepsSeen();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= changedAt + 3, 90000);
    QCOMPARE(w.history().lastStep(), w.history().stepsSeen());  // numbered on, none lost
    QCOMPARE(squeueState(id), QString("COMPLETED"));            // the first job saved and stopped

    QTemporaryDir out;
    QCOMPARE(w.exportAllTo(out.path()), QString());
    QCOMPARE(test::readLines(out.filePath("job.sbatch")).join('\n') + '\n',
             w.jobRunner()->batchScript());
    QVERIFY(w.jobRunner()->batchScript().contains("--resume "));

    const QString token = w.jobRunner()->token();
    w.resetAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(squeueState(relaunched), QString("CANCELLED"), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(JobRunner::processesOf(token).isEmpty() && noRunOfSeed(c.seed), 30000);
  }

  // A job that waits in the queue says so with Slurm's reason, then runs once it may.
  void pendingJobShowsSlurmsReason() {
    setPartition("DOWN");
    struct Up {
      ~Up() { setPartition("UP"); }  // whatever the test's outcome
    } up;
    MainWindow w;
    RunConfig c = slurmConfig(0);
    c.seed = 91742;
    w.configPanel()->setConfig(c);
    w.startAction()->trigger();
    auto* state = w.findChild<QLabel*>("stateLabel");
    QVERIFY(state && w.jobRunner());
    const QString id = jobIdOf(w.jobRunner());
    QTRY_COMPARE_WITH_TIMEOUT(
        state->text(), "State: loading — Slurm job " + id + " pending (PartitionDown)", 20000);
    QCOMPARE(w.history().stepsSeen(), int64_t(0));
    setPartition("UP");
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 1, 60000);
    QCOMPARE(w.runState(), RunState::Running);
    w.resetAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(squeueState(id), QString("CANCELLED"), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(noRunOfSeed(c.seed), 30000);
  }

  // A rank that throws fails the job: the window says Slurm's word and the rank's one line.
  void failingRankShowsSlurmsStateAndItsMessage() {
    MainWindow w;
    RunConfig c = slurmConfig(20);
    c.fail = "1@3";
    w.configPanel()->setConfig(c);
    QSignalSpy ended(&w, &MainWindow::runEnded);
    w.startAction()->trigger();
    QVERIFY(ended.wait(120000));
    QCOMPARE(ended.at(0).at(0).toBool(), false);
    QCOMPARE(w.runState(), RunState::Failed);
    const QString id = jobIdOf(w.jobRunner());
    const QString message = "Slurm job " + id +
                            " failed: paralab: world rank 1 aborted the job: rank 1 failed at "
                            "step 3 after its backward: injected failure (--fail 1@3)";
    QVERIFY2(w.statusBar()->currentMessage().contains(message),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(squeueState(id), QString("FAILED"));
  }

  // paralab --config job.json --export DIR with "backend": "slurm": submitted, drawn and
  // exported headless, its batch script beside the charts.
  void scriptedExportRunsASlurmJob() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    QString err;
    QCOMPARE(runParalab(slurmConfig(8), {"--export", out}, &err), 0);
    const QStringList lines = test::readLines(out + "/run.jsonl");
    QCOMPARE(lines.size(), 9);  // 8 steps, then the summary
    QCOMPARE(int(nlohmann::json::parse(lines[7].toStdString())["ranks"].size()), 2);
    QCOMPARE(nlohmann::json::parse(lines[8].toStdString())["config"]["backend"], "slurm");
    QVERIFY(QFile::exists(out + "/loss.csv"));
    QVERIFY(test::readLines(out + "/job.sbatch").contains("#SBATCH --ntasks=2"));
  }
};

QTEST_MAIN(TestWindowSlurm)
#include "tst_window_slurm.moc"
