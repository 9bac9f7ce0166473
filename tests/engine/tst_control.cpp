// paralab-run --control stdin | FILE, driven as the window drives it: commands written to its
// standard input (an mpirun job), or appended to a file (a batch job), while it trains. Pause holds
// every rank after the step in flight, step takes exactly one, resume goes on, save writes a
// checkpoint at the boundary, stop ends after the step in flight with exit code 0 and the summary
// line; the end of the input stops too; a typo is said in one line and ignored. On thread ranks and
// under mpirun -np 2 and 4 (--backend mpi).
// Run: ctest -R tst_control
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "train/checkpoint.h"

namespace {

// A running paralab-run (or mpirun of it) with its standard output read line by line.
struct Job {
  QProcess process;
  std::vector<nlohmann::json> lines;
  QByteArray partial, err;
  QString controlFile;  // "": commands go to standard input; else appended to this file

  // Its standard error so far (kept: a message may be read more than once).
  const char* errors() {
    err += process.readAllStandardError();
    return err.constData();
  }

  void start(const QString& program, const QStringList& args) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    process.setProcessEnvironment(env);
    process.start(program, args);
    process.waitForStarted(10000);
  }
  void read() {
    partial += process.readAllStandardOutput();
    for (int nl; (nl = int(partial.indexOf('\n'))) >= 0; partial.remove(0, nl + 1)) {
      const QByteArray line = partial.left(nl).trimmed();
      if (!line.isEmpty()) lines.push_back(nlohmann::json::parse(line.toStdString()));
    }
  }
  // Reads for `ms` milliseconds (or until the process ends).
  void readFor(int ms) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms && process.state() == QProcess::Running)
      process.waitForReadyRead(std::max<int>(1, ms - int(t.elapsed())));
    read();
  }
  // Reads until at least `n` step lines have come; false after `ms` without them.
  bool waitForSteps(size_t n, int ms = 60000) {
    QElapsedTimer t;
    t.start();
    while (steps() < n && t.elapsed() < ms && process.state() == QProcess::Running) {
      process.waitForReadyRead(200);
      read();
    }
    return steps() >= n;
  }
  size_t steps() const {
    size_t n = 0;
    for (const auto& j : lines) n += !j.value("summary", false);
    return n;
  }
  void send(const char* command) {
    if (!controlFile.isEmpty()) {
      QFile f(controlFile);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Append));
      f.write(QByteArray(command) + '\n');
      return;
    }
    process.write(QByteArray(command) + '\n');
    process.waitForBytesWritten(1000);
  }
  // After the end: exit code 0, step lines 1..n in order, then the summary counting n steps.
  void checkEndedCleanly() {
    QVERIFY2(process.waitForFinished(60000), "the job did not end after stop");
    read();
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0, errors());
    QVERIFY(!lines.empty());
    QVERIFY2(lines.back().value("summary", false), "no summary line after stop");
    const size_t n = steps();
    QCOMPARE(lines.back().value("steps", int64_t(-1)), int64_t(n));
    for (size_t i = 0; i < n; ++i) QCOMPARE(lines[i].value("step", int64_t(-1)), int64_t(i + 1));
  }
  ~Job() {
    if (process.state() != QProcess::NotRunning) {
      process.kill();
      process.waitForFinished(5000);
    }
  }
};

// Long enough never to end by itself during a test; steps of a few milliseconds.
const QStringList kRun = {"--dataset", "synthetic", "--hidden",     "64", "--batch", "128",
                          "--steps",   "1000000",   "--eval-every", "0",  "--json"};

}  // namespace

class TstControl : public QObject {
  Q_OBJECT

  // mpirun -np N paralab-run --backend mpi, or paralab-run --ranks N (np 0: thread ranks).
  static void launch(Job& job, int np, int threadRanks, const QStringList& more = {}) {
    const QStringList extra =
        QStringList{"--control", job.controlFile.isEmpty() ? "stdin" : job.controlFile} + more;
    if (np == 0) {
      job.start(PARALAB_RUN, QStringList{"--ranks", QString::number(threadRanks)} + kRun + extra);
      return;
    }
#ifdef PARALAB_MPIRUN
    job.start(PARALAB_MPIRUN, QStringList{"--oversubscribe", "-np", QString::number(np),
                                          PARALAB_RUN, "--backend", "mpi"} +
                                  kRun + extra);
#endif
  }

 private slots:
  void pauseStepResumeSaveStop_data() {
    QTest::addColumn<int>("np");
    QTest::addColumn<bool>("file");  // --control FILE, as a batch job is driven
    QTest::newRow("threads 2") << 0 << false;
    QTest::newRow("mpi np 2") << 2 << false;
    QTest::newRow("mpi np 4") << 4 << false;
    QTest::newRow("threads 2, file") << 0 << true;
    QTest::newRow("mpi np 2, file") << 2 << true;
  }
  void pauseStepResumeSaveStop() {
    QFETCH(int, np);
    QFETCH(bool, file);
#ifndef PARALAB_MPIRUN
    if (np > 0) QSKIP("built without MPI (or no mpirun)");
#endif
    Job job;
    QTemporaryDir control;
    if (file) {
      job.controlFile = control.filePath("control");
      QFile f(job.controlFile);
      QVERIFY(f.open(QIODevice::WriteOnly));
    }
    launch(job, np, 2);
    QVERIFY2(job.waitForSteps(3), job.errors());
    job.send("pause");
    job.readFor(800);  // the step in flight when it arrived
    const size_t paused = job.steps();
    job.readFor(800);
    QCOMPARE(job.steps(), paused);  // every rank holds
    job.send("step");
    QVERIFY(job.waitForSteps(paused + 1, 20000));
    job.readFor(800);
    QCOMPARE(job.steps(), paused + 1);  // exactly one
    // Every rank's figures still reach rank 0.
    QCOMPARE(int(job.lines.back()["ranks"].size()), np == 0 ? 2 : np);

    // save at the boundary where the job is paused: the checkpoint is at the last step printed.
    QTemporaryDir dir;
    const QString ckpt = dir.filePath("job.ckpt");
    job.send(qPrintable("save " + ckpt));
    QElapsedTimer t;
    t.start();
    while (!QFile::exists(ckpt) && t.elapsed() < 20000) job.readFor(100);
    QVERIFY2(QFile::exists(ckpt), job.errors());
    QCOMPARE(paralab::readCheckpoint(ckpt.toStdString()).state.step, int64_t(paused + 1));

    job.send("resume");
    QVERIFY(job.waitForSteps(paused + 4));
    job.send("stop");
    job.checkEndedCleanly();
  }

  // Whoever drove the run is gone: the run ends as if told to stop.
  void endOfInputStops() {
    Job job;
    launch(job, 0, 1);
    QVERIFY(job.waitForSteps(2));
    job.process.closeWriteChannel();
    job.checkEndedCleanly();
  }

  // A control file: what it holds before the run starts is obeyed before the first step.
  void fileWrittenBeforeTheStartIsObeyed() {
    QTemporaryDir dir;
    Job job;
    job.controlFile = dir.filePath("control");
    job.send("pause");
    launch(job, 0, 1);
    job.readFor(1500);
    QCOMPARE(job.steps(), size_t(0));  // paused before the first step
    job.send("step");
    QVERIFY2(job.waitForSteps(1, 20000), job.errors());
    job.readFor(800);
    QCOMPARE(job.steps(), size_t(1));
    job.send("stop");
    job.checkEndedCleanly();
  }

  void unknownCommandIsSaidAndIgnored() {
    Job job;
    launch(job, 0, 1);
    QVERIFY(job.waitForSteps(1));
    job.send("jump");
    job.send("pause");
    job.readFor(800);
    const size_t paused = job.steps();
    job.send("resume");
    QVERIFY(job.waitForSteps(paused + 2));  // still running after the typo
    job.send("stop");
    job.checkEndedCleanly();
    QCOMPARE(QString::fromUtf8(job.errors()),
             QString("paralab-run: control: 'jump' is not a command (allowed: pause, resume, "
                     "step, stop, save FILE)\n"));
  }

  void badChannel() {
    QProcess p;
    p.start(PARALAB_RUN, {"--steps", "3", "--control", "tcp"});
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 2);
    QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
             QString("paralab-run: control: 'tcp' is not a channel (allowed: stdin, or the path "
                     "of an existing file)\n"));
  }
};

QTEST_MAIN(TstControl)
#include "tst_control.moc"
