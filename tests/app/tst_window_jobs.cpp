// Runs whose ranks are processes, offscreen: the window launches `mpirun -np 2|4 paralab-run
// --backend mpi` jobs (oversubscribed), its charts receive every rank's figures, and the same
// lines opened as a recorded run export the same CSVs; pause, step and resume reach the job;
// a live change relaunches it from a checkpoint with the steps continuing; Reset, and closing
// the window, leave no process of the job (checked by its process group, its processes' token
// and their command line); a rank that throws ends the job with its message in the window; the
// scripted form runs a job and exports it. The launcher command is shown and copyable.
// Run: ctest -R tst_window_jobs --output-on-failure
#include <signal.h>
#include <unistd.h>

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "capabilities.h"
#include "charts/chart.h"
#include "charts/chart_hub.h"
#include "charts/holdings_map.h"
#include "charts/timeline_chart.h"
#include "job_command.h"
#include "job_runner.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "settings.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;

namespace {

// A quick run on `np` processes; `steps` 0: longer than any test waits.
RunConfig jobConfig(int np, int steps) {
  RunConfig c = test::quickConfig(steps == 0 ? 1000000 : steps, np);
  c.backend = Backend::Mpi;
  c.evalEvery = steps == 0 ? 0 : 10;
  return c;
}

bool canLaunch() { return mpiBuilt() && !mpirunProgram().isEmpty(); }

// No process of the job is left: its launcher's group is empty and none of its processes
// remains (by the token in their environment, and by the seed on their command line).
bool jobIsGone(qint64 group, const QString& token, uint32_t seed) {
  if (::kill(-pid_t(group), 0) == 0 || errno != ESRCH) return false;
  if (!JobRunner::processesOf(token).isEmpty()) return false;
  QProcess pgrep;
  pgrep.start("pgrep", {"-f", QString("paralab-run.*--seed %1").arg(seed)});
  pgrep.waitForFinished(10000);
  return pgrep.readAllStandardOutput().trimmed().isEmpty();
}

bool runToEnd(MainWindow& w, int timeoutMs = 180000) {
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  if (ended.isEmpty() && !ended.wait(timeoutMs)) return false;
  if (!ended.at(0).at(0).toBool())
    qWarning("run failed: %s", qPrintable(ended.at(0).at(1).toString()));
  return ended.at(0).at(0).toBool();
}

QStringList csvFiles(const QString& dir) {
  return QDir(dir).entryList({"*.csv"}, QDir::Files, QDir::Name);
}

// The timeline and the holdings map of `w` draw every one of `np` ranks: each rank's forward,
// backward and communication bars in each of the last TimelineChart::kSteps steps (up to
// `lastStep`), and its column of holdings.
void checkTimelineAndHoldings(MainWindow& w, int np, int64_t lastStep) {
  auto* timeline = w.chartHub()->find<TimelineChart>();
  auto* holdings = w.chartHub()->find<HoldingsMap>();
  QVERIFY(timeline && holdings);
  std::set<int64_t> steps;
  for (int r = 0; r < np; ++r) {
    std::set<SpanKind> kinds;
    for (const TimelineChart::Bar& b : timeline->bars())
      if (b.rank == r) kinds.insert(b.kind), steps.insert(b.step);
    QVERIFY2(kinds.count(SpanKind::Forward) && kinds.count(SpanKind::Backward) &&
                 kinds.count(SpanKind::Comm),
             qPrintable(QString("the timeline lacks rank %1's forward, backward or comm").arg(r)));
  }
  std::set<int64_t> last;
  for (int64_t s = lastStep - TimelineChart::kSteps + 1; s <= lastStep; ++s) last.insert(s);
  QVERIFY(steps == last);
  std::set<int> ranks, timelineRanks;
  for (const TimelineChart::Bar& b : timeline->bars()) timelineRanks.insert(b.rank);
  QCOMPARE(int(timelineRanks.size()), np);
  for (const HoldingsMap::Cell& c : holdings->cells()) ranks.insert(c.rank);
  QCOMPARE(int(ranks.size()), np);
  QVERIFY(holdings->pointCount() > 0);
}

// The text a chart shows in its empty plot (its placeholder), unwrapped.
QString shownText(QCustomPlot* chart) {
  QString all;
  for (int i = 0; i < chart->itemCount(); ++i)
    if (auto* t = qobject_cast<QCPItemText*>(chart->item(i)); t && t->visible())
      all += t->text().replace('\n', ' ') + ' ';
  return all;
}

}  // namespace

class TestWindowJobs : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QFile::remove(Settings::open()->fileName());
  }

  // The command Start runs, shown under the choice and copyable; a bad host list is refused.
  void launcherCommandIsShown() {
    ConfigPanel panel;
    auto* fields = child<QLineEdit>(&panel, "launchCommand");
    QVERIFY(fields);
    panel.setConfig(test::quickConfig(20, 4));
    QVERIFY(!fields->isVisibleTo(&panel));  // threads: no job
    RunConfig c = jobConfig(4, 20);
    panel.setConfig(c);
    panel.setHosts("node1:2,node2:2");
    QVERIFY(fields->isVisibleTo(&panel));
    const QString text = fields->text();
    for (const QString& needle :
         {QString("--oversubscribe -np 4 --host node1:2,node2:2 "), QString(" --backend mpi --json "
                                                                           "--control stdin "),
          QString("--hidden 32"), QString("--dataset synthetic"), QString("--steps 20")})
      QVERIFY2(text.contains(needle), qPrintable(text + "\nlacks: " + needle));
    QCOMPARE(text.contains("--allow-run-as-root"), geteuid() == 0);
    QCOMPARE(text, jobCommand(panel.config(), panel.hosts()).text());
    // As a learner sees it (build/screenshots/job-settings.png).
    QDir().mkpath(QString(PARALAB_BINARY_DIR) + "/screenshots");
    panel.resize(panel.sizeHint().width() + 80, panel.sizeHint().height());
    QVERIFY(panel.grab().save(QString(PARALAB_BINARY_DIR) + "/screenshots/job-settings.png"));
    child<QPushButton>(&panel, "copyLaunchCommand")->click();
    QCOMPARE(QApplication::clipboard()->text(), text);

    QCOMPARE(jobCommand(c, "node 1").error,
             QString("hosts: 'node 1' is neither a hostfile nor a host list (allowed: empty for "
                     "this machine, a hostfile's path, or host[:slots],host[:slots])"));
    MainWindow w;
    w.configPanel()->setConfig(c);
    w.configPanel()->setHosts("node 1");
    w.startAction()->trigger();
    QVERIFY2(w.statusBar()->currentMessage().startsWith("hosts: 'node 1'"),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(w.runState(), RunState::Idle);
  }

  void jobDrawsEveryRank_data() {
    QTest::addColumn<int>("np");
    QTest::newRow("np 2") << 2;
    QTest::newRow("np 4") << 4;
  }
  // Every chart a run draws gets every rank's figures; the job's own lines, opened as a recorded
  // run, export the same CSVs as the live job.
  void jobDrawsEveryRank() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    QFETCH(int, np);
    QTemporaryDir dir;
    const QString transcript = dir.filePath("job.jsonl");
    MainWindow w;
    w.configPanel()->setConfig(jobConfig(np, 24));
    QSignalSpy ended(&w, &MainWindow::runEnded);
    w.startAction()->trigger();
    QVERIFY(w.jobRunner());
    w.jobRunner()->setTranscript(transcript);  // before the event loop reads a line
    QVERIFY2(ended.wait(180000), runStateName(w.runState()));
    QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
    QCOMPARE(w.history().stepsSeen(), int64_t(24));
    QCOMPARE(int(w.chartHub()->lastSnapshot().steps.back().ranks.size()), np);
    for (int r = 0; r < np; ++r)
      QCOMPARE(w.chartHub()->lastSnapshot().steps.back().ranks[size_t(r)].rank, r);
    checkTimelineAndHoldings(w, np, 24);
    const QString live = dir.filePath("live"), opened = dir.filePath("opened");
    QCOMPARE(w.exportAllTo(live), QString());
    // Memory and traffic draw a bar (or more) per rank: every rank is on them.
    for (const char* name : {"memory.csv", "traffic.csv"}) {
      const QStringList rows = test::readLines(live + "/" + name);
      for (int r = 0; r < np; ++r) {
        bool found = false;
        for (const QString& row : rows) found = found || row.startsWith(QString::number(r) + ",");
        QVERIFY2(found, qPrintable(QString("%1 has no row for rank %2").arg(name).arg(r)));
      }
    }
    w.reset();

    MainWindow again;
    QCOMPARE(again.openRunFile(transcript), QString());
    QCOMPARE(again.history().stepsSeen(), int64_t(24));
    checkTimelineAndHoldings(again, np, 24);
    QCOMPARE(again.exportAllTo(opened), QString());
    QVERIFY(csvFiles(live).size() >= 5);
    QCOMPARE(csvFiles(opened), csvFiles(live));
    for (const QString& csv : csvFiles(live))
      QVERIFY2(test::readLines(opened + "/" + csv) == test::readLines(live + "/" + csv),
               qPrintable(csv));
    // The timeline's and holdings' data are among them, and hold every rank.
    for (const char* name : {"timeline.csv", "holdings.csv"}) {
      const QStringList rows = test::readLines(live + "/" + name);
      QVERIFY2(rows.size() > np, qPrintable(QString("%1: %2 rows").arg(name).arg(rows.size())));
    }

    // The same lines as a file from before they carried spans and holdings: it opens, with
    // every step, and the two charts say why they are empty.
    const QString old = dir.filePath("old.jsonl");
    QFile out(old);
    QVERIFY(out.open(QIODevice::WriteOnly));
    for (const QString& line : test::readLines(transcript)) {
      nlohmann::json j = nlohmann::json::parse(line.toStdString());
      j.erase("holdings");
      j.erase("started_ms");
      if (j.contains("ranks"))
        for (auto& r : j["ranks"]) r.erase("spans"), r.erase("spans_dropped");
      out.write(QByteArray::fromStdString(j.dump()) + '\n');
    }
    out.close();
    MainWindow before;
    QCOMPARE(before.openRunFile(old), QString());
    QCOMPARE(before.history().stepsSeen(), int64_t(24));
    auto* timeline = before.chartHub()->find<TimelineChart>();
    auto* holdings = before.chartHub()->find<HoldingsMap>();
    QVERIFY(timeline->bars().empty() && holdings->cells().empty());
    QVERIFY2(shownText(timeline).contains("old.jsonl has no spans"),
             qPrintable(shownText(timeline)));
    QVERIFY2(shownText(holdings).contains("old.jsonl says nothing of what the ranks hold"),
             qPrintable(shownText(holdings)));
  }

  // A job whose lines leave spans out (a pipeline of 256 micro-batches records over
  // kMaxLineSpans a rank a step): the live timeline's legend counts those of the steps it
  // draws, as its lines say, and Export All's run.jsonl says the same rank by rank.
  void jobTimelineSaysWhatItsLinesLeftOut() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    QTemporaryDir dir;
    const QString transcript = dir.filePath("job.jsonl");
    MainWindow w;
    RunConfig c = jobConfig(2, 4);
    c.pp = 2;
    c.batch = 256;
    c.microbatches = 256;
    c.evalEvery = 0;
    w.configPanel()->setConfig(c);
    QSignalSpy ended(&w, &MainWindow::runEnded);
    w.startAction()->trigger();
    QVERIFY(w.jobRunner());
    w.jobRunner()->setTranscript(transcript);
    QVERIFY2(ended.wait(180000), runStateName(w.runState()));
    QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
    // What the job's lines of the steps drawn (2, 3, 4) left out, rank by rank.
    std::map<std::pair<int64_t, int>, int64_t> said;
    int64_t drawn = 0;
    for (const QString& line : test::readLines(transcript)) {
      const nlohmann::json j = nlohmann::json::parse(line.toStdString());
      if (!j.contains("step") || !j.contains("ranks") || !j.at("ranks").is_array()) continue;
      for (const auto& r : j.at("ranks")) {
        const int64_t n = r.value("spans_dropped", int64_t(0));
        said[{j.at("step").get<int64_t>(), r.value("rank", 0)}] = n;
        if (j.at("step").get<int64_t>() >= 2) drawn += n;
      }
    }
    QVERIFY2(drawn > 0, "the job's lines left no span out: the test needs more micro-batches");
    auto* timeline = w.chartHub()->find<TimelineChart>();
    QCOMPARE(timeline->spansDropped(), drawn);
    QVERIFY2(timeline->droppedText().startsWith(QString::number(drawn) + " spans not recorded"),
             qPrintable(timeline->droppedText()));
    QCOMPARE(w.exportAllTo(dir.filePath("live")), QString());
    int withSpans = 0;
    for (const QString& line : test::readLines(dir.filePath("live/run.jsonl"))) {
      const nlohmann::json j = nlohmann::json::parse(line.toStdString());
      if (!j.contains("step") || !j.contains("ranks") || !j.at("ranks").is_array() ||
          !j.at("ranks").at(0).contains("spans"))
        continue;
      ++withSpans;
      for (const auto& r : j.at("ranks"))
        QCOMPARE(r.value("spans_dropped", int64_t(0)),
                 (said[{j.at("step").get<int64_t>(), r.value("rank", 0)}]));
    }
    QVERIFY(withSpans >= TimelineChart::kSteps);
  }

  // Pause holds the job, Step takes one step, Resume goes on; Reset ends every process.
  void pauseStepResumeAndResetLeaveNoProcess() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    MainWindow w;
    RunConfig c = jobConfig(4, 0);
    c.seed = 91731;  // marks this job's command lines
    w.configPanel()->setConfig(c);
    w.startAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 3, 60000);
    const qint64 group = w.jobRunner()->processGroup();
    const QString token = w.jobRunner()->token();
    QVERIFY(group > 0);
    QCOMPARE(::kill(-pid_t(group), 0), 0);
    QVERIFY(JobRunner::processesOf(token).size() >= 4);  // mpirun and its 4 ranks

    w.pauseAction()->trigger();
    QCOMPARE(w.runState(), RunState::Paused);
    // The steps in flight arrive (late on a loaded machine, or under ASan), then none: while
    // it trains, this job's steps come several a second.
    int64_t held = w.history().stepsSeen();
    QElapsedTimer still, waited;
    still.start(), waited.start();
    while (still.elapsed() < 1500 && waited.elapsed() < 30000) {
      QTest::qWait(100);
      if (w.history().stepsSeen() != held) held = w.history().stepsSeen(), still.restart();
    }
    QVERIFY2(still.elapsed() >= 1500, "steps kept coming for 30 s after Pause");
    w.stepAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(w.history().stepsSeen(), held + 1, 20000);
    QTest::qWait(800);
    QCOMPARE(w.history().stepsSeen(), held + 1);
    w.startAction()->trigger();  // Resume
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= held + 4, 20000);

    w.resetAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(jobIsGone(group, token, c.seed), 5000);
  }

  // Closing the window ends the job at once, whatever it was doing.
  void closingTheWindowLeavesNoProcess() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    RunConfig c = jobConfig(2, 0);
    c.seed = 91732;
    qint64 group = 0;
    QString token;
    {
      MainWindow w;
      w.configPanel()->setConfig(c);
      w.startAction()->trigger();
      QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 2, 60000);
      group = w.jobRunner()->processGroup();
      token = w.jobRunner()->token();
    }
    QTRY_VERIFY_WITH_TIMEOUT(jobIsGone(group, token, c.seed), 3000);
  }

  // A rank that throws ends the job; its one line is what the window says.
  void failingRankShowsItsMessage() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    MainWindow w;
    RunConfig c = jobConfig(2, 20);
    c.fail = "1@3";
    w.configPanel()->setConfig(c);
    QVERIFY(!runToEnd(w));
    QCOMPARE(w.runState(), RunState::Failed);
    const QString message =
        "paralab: world rank 1 aborted the job: rank 1 failed at step 3 after its backward: "
        "injected failure (--fail 1@3)";
    QVERIFY2(w.statusBar()->currentMessage().contains(message),
             qPrintable(w.statusBar()->currentMessage()));
    QTRY_VERIFY_WITH_TIMEOUT(JobRunner::processesOf(w.jobRunner()->token()).isEmpty(), 5000);
  }

  // A live change (here the ranks, 2 -> 4 processes) stops the job at a saved step and launches
  // it again from there: the steps go on, numbered on, none lost or repeated.
  void liveChangeRelaunchesFromACheckpoint() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    MainWindow w;
    RunConfig c = jobConfig(2, 0);
    w.configPanel()->setConfig(c);
    w.startAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 3, 60000);
    c.ranks = 4;
    c.lr = c.lr / 2;
    w.configPanel()->setConfig(c);
    w.applyLiveChanges();
    QTRY_COMPARE_WITH_TIMEOUT(w.runConfig().ranks, 4, 60000);
    QCOMPARE(w.liveChanges().size(), 1);
    QVERIFY2(w.liveChanges().front().contains("ranks 2 → 4"), qPrintable(w.liveChanges().front()));
    const int64_t changedAt = w.history().stepsSeen();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= changedAt + 3, 60000);
    QCOMPARE(w.history().lastStep(), w.history().stepsSeen());  // numbered on from the checkpoint
    QCOMPARE(int(w.chartHub()->lastSnapshot().steps.back().ranks.size()), 4);
    QVERIFY(w.runState() == RunState::Running);
    QVERIFY2(!w.statusBar()->currentMessage().contains("not recorded"),
             qPrintable(w.statusBar()->currentMessage()));
    w.reset();
  }

  // paralab --config F --steps N --export DIR with "backend": "mpi" and "ranks" in F.
  void scriptedExportRunsAJob() {
    if (!canLaunch()) QSKIP("no MPI in this build, or no mpirun");
    QTemporaryDir dir;
    RunConfig c = jobConfig(2, 12);
    QFile f(dir.filePath("job.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(c.toJson().dump()));
    f.close();
    const QString out = dir.filePath("out");
    QProcess p;
    p.start(PARALAB_APP_EXE, {"--config", f.fileName(), "--steps", "12", "--export", out});
    QVERIFY(p.waitForFinished(180000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
             p.readAllStandardError().constData());
    const QStringList lines = test::readLines(out + "/run.jsonl");
    QCOMPARE(lines.size(), 13);  // 12 steps, then the summary
    const nlohmann::json last = nlohmann::json::parse(lines[11].toStdString());
    QCOMPARE(int(last["ranks"].size()), 2);
    QCOMPARE(nlohmann::json::parse(lines[12].toStdString())["config"]["backend"], "mpi");
    QVERIFY(QFile::exists(out + "/loss.csv"));
    // The job's lines do not carry the parameter count: the summary says so, not "P = 0".
    const QString summary = test::readLines(out + "/summary.md").join('\n');
    QVERIFY2(summary.contains("P not in the run's lines") && !summary.contains("P = 0 "),
             qPrintable(summary));
  }
};

QTEST_MAIN(TestWindowJobs)
#include "tst_window_jobs.moc"
