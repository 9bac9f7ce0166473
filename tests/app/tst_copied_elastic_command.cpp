// The settings panel's launcher command for an --elastic mpirun job, as the Copy button puts it
// on the clipboard, runs as pasted: it carries the --save FILE paralab-run requires of such a
// job (kElasticCheckpoint in the folder it runs from), and run by a shell there it trains and
// leaves that checkpoint. Run: ctest -R tst_copied_elastic_command --output-on-failure
#include <QApplication>
#include <QClipboard>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>

#include "capabilities.h"
#include "job_command.h"
#include "panels/config_panel.h"
#include "train/checkpoint.h"
#include "window_test.h"

using namespace paralab;

namespace {

RunConfig elasticJob() {
  RunConfig c = test::quickConfig(4, 2);
  c.backend = Backend::Mpi;
  c.batch = 48;
  c.evalEvery = 0;
  c.elastic = true;
  c.checkpointEvery = 2;
  return c;
}

}  // namespace

class TstCopiedElasticCommand : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::startAsANewLearner(); }

  // --save once, after paralab-run's words; the launcher's own file when it gives one; none
  // for a job that is not elastic.
  void carriesItsCheckpoint() {
    const RunConfig c = elasticJob();
    const QString shown = jobCommand(c, "").text();
    QVERIFY2(shown.endsWith(QString(" --save ") + kElasticCheckpoint), qPrintable(shown));
    QCOMPARE(shown.count("--save"), 1);
    QVERIFY2(jobCommand(c, "", {}, "/tmp/x/e.ckpt").text().endsWith(" --save /tmp/x/e.ckpt"),
             qPrintable(jobCommand(c, "", {}, "/tmp/x/e.ckpt").text()));
    RunConfig plain = c;
    plain.elastic = false;
    QVERIFY(!jobCommand(plain, "").text().contains("--save"));
  }

  // Copied from the panel and run by a shell in an empty folder: exit 0, every step's line,
  // and the checkpoint of its last multiple of --checkpoint-every.
  void runsAsPasted() {
    if (!mpiBuilt() || mpirunProgram().isEmpty()) QSKIP("no MPI in this build, or no mpirun");
    ConfigPanel panel;
    panel.setConfig(elasticJob());
    test::child<QPushButton>(&panel, "copyLaunchCommand")->click();
    const QString pasted = QApplication::clipboard()->text();
    QCOMPARE(pasted, test::child<QLineEdit>(&panel, "launchCommand")->text());
    QTemporaryDir dir;
    QProcess shell;
    shell.setWorkingDirectory(dir.path());
    shell.start("/bin/sh", {"-c", pasted});  // its standard input stays open, as a terminal's
    QVERIFY(shell.waitForFinished(180000));
    const QString err = QString::fromUtf8(shell.readAllStandardError());
    QVERIFY2(shell.exitStatus() == QProcess::NormalExit && shell.exitCode() == 0, qPrintable(err));
    int steps = 0;
    for (const QByteArray& line : shell.readAllStandardOutput().split('\n'))
      if (line.startsWith("{\"step\"") || line.contains("\"step\":")) ++steps;
    QVERIFY2(steps >= 4, qPrintable(err));
    QVERIFY2(QFile::exists(dir.filePath(kElasticCheckpoint)), qPrintable(err));
    const Checkpoint k = readCheckpoint(dir.filePath(kElasticCheckpoint).toStdString());
    QCOMPARE(k.state.step, int64_t(4));
  }
};

QTEST_MAIN(TstCopiedElasticCommand)
#include "tst_copied_elastic_command.moc"
