// Checkpoints (train/checkpoint.h): a run saved after 10 steps and resumed in a new Trainer takes
// the uninterrupted run's steps — the same losses and final parameters, exactly on the same
// layout, within 1e-5 on another (summation order, as in tst_reconfigure) — for the MLP with
// momentum and the GPT with Adam; a damaged, foreign or mismatched file is refused with one line;
// and `paralab-run --save F` then `--resume F` continues the step numbers.
// Run: ctest -R tst_checkpoint
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <iterator>

#include "json_lines.h"
#include "loss_trajectory.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig runOf(const QString& model) {
  return model == "gpt" ? test::smallGptRun(8) : test::smallRun(32, 2, 16);
}

RunConfig withLayout(RunConfig c, int ranks, int zero) {
  c.ranks = ranks;
  c.zero = zero;
  return c;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void writeAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The one-line message readCheckpoint refuses `path` with ("" when it reads it).
QString refusal(const std::string& path) {
  try {
    readCheckpoint(path);
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TstCheckpoint : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  std::string path(const char* name) const { return m_dir.filePath(name).toStdString(); }

  using Result = test::ProgramResult;
  static Result run(const QStringList& args) { return test::runProgram(PARALAB_RUN, args); }

 private slots:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  // 10 steps, saved to a file under one layout, read back, 10 more under another: the 20-step
  // trajectory and final parameters of the uninterrupted run (which uses the saving layout).
  void resumeContinuesTheRun_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QList<int>>("layouts");  // saving ranks, zero; resuming ranks, zero
    QTest::newRow("mlp momentum, serial") << "mlp" << QList<int>{1, 0, 1, 0};
    QTest::newRow("gpt adam, serial") << "gpt" << QList<int>{1, 0, 1, 0};
    QTest::newRow("mlp momentum, serial -> ZeRO-1 x2") << "mlp" << QList<int>{1, 0, 2, 1};
    QTest::newRow("gpt adam, DP 2 -> serial") << "gpt" << QList<int>{2, 0, 1, 0};
    QTest::newRow("mlp momentum, ZeRO-3 x2 -> DP 4") << "mlp" << QList<int>{2, 3, 4, 0};
  }
  void resumeContinuesTheRun() {
    QFETCH(QString, model);
    QFETCH(QList<int>, layouts);
    const RunConfig saving = withLayout(runOf(model), layouts[0], layouts[1]);
    const RunConfig resuming = withLayout(runOf(model), layouts[2], layouts[3]);
    const int per = 10;
    const test::RunRecord ref = test::recordRun(saving, 2 * per);

    const std::string file = path("resume.ckpt");
    std::vector<double> losses;
    {
      Trainer t(saving);
      for (int s = 0; s < per; ++s) losses.push_back(t.step().loss);
      writeCheckpoint(file, t.saveState(), t.config(), t.parameterCount());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(file + ".tmp")));  // renamed into place
    const Checkpoint k = readCheckpoint(file);
    QCOMPARE(k.state.step, int64_t(per));
    Trainer t(resuming);
    const auto mismatch = checkpointMismatch(k, t.config(), t.parameterCount());
    QVERIFY2(!mismatch, mismatch.value_or("").c_str());
    t.loadState(k.state);
    for (int s = 0; s < per; ++s) losses.push_back(t.step().loss);
    QCOMPARE(t.stepsDone(), int64_t(2 * per));
    const std::vector<float> params = t.saveState().params;
    if (layouts[0] == layouts[2] && layouts[1] == layouts[3]) {
      // Same layout, same arithmetic: bit for bit.
      QVERIFY(losses == ref.losses);
      QVERIFY(params == ref.params);
    }
    VERIFY_TRAJECTORIES_AGREE(losses, ref.losses, 1e-5, "resumed vs uninterrupted");
    VERIFY_PARAMETERS_AGREE(params, ref.params, 1e-5, "final parameters, resumed vs uninterrupted");
  }

  // Each bad file is refused with its own one line; a sound file of another model too.
  void refusesBadFiles() {
    const RunConfig c = test::smallRun(32, 2, 16);
    const std::string good = path("good.ckpt");
    int64_t P = 0;
    {
      Trainer t(c);
      t.step();
      P = t.parameterCount();
      writeCheckpoint(good, t.saveState(), c, P);
    }
    QCOMPARE(refusal(good), QString());
    const std::string bytes = readAll(good);
    const std::string bad = path("bad.ckpt");
    const auto refusedAs = [&](std::string damaged, const QString& expected) {
      writeAll(bad, damaged);
      const QString got = refusal(bad);
      QVERIFY2(got.startsWith(expected), qPrintable(got));
      QVERIFY(!got.contains('\n'));
    };

    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x40;  // a float of the parameters
    refusedAs(flipped, "resume: checksum mismatch (the file is truncated or damaged)");
    refusedAs(bytes.substr(0, bytes.size() - 100),
              "resume: checksum mismatch (the file is truncated or damaged)");
    refusedAs(bytes.substr(0, 10), "resume: checksum mismatch");
    std::string magic = bytes;
    magic[0] = 'X';
    refusedAs(magic, "resume: '" + QString::fromStdString(bad) + "' is not a ParaLab checkpoint");
    refusedAs("{\"hidden\": 64}\n", "resume: '" + QString::fromStdString(bad) +
                                        "' is not a ParaLab checkpoint");
    std::string version = bytes;
    version[8] = 3;  // the uint32 after the 8 bytes of magic
    refusedAs(version, "resume: checkpoint format version 3, this build reads 1");
    QVERIFY(refusal(path("missing.ckpt")).startsWith("resume: cannot read"));
    QVERIFY(refusal(m_dir.path().toStdString()).endsWith("is a directory"));

    // Sound, but not this run's: another hidden size, optimizer, seed, global batch.
    const Checkpoint k = readCheckpoint(good);
    RunConfig wider = c;
    wider.hidden = 64;
    const int64_t widerP = Trainer(wider).parameterCount();
    QCOMPARE(QString::fromStdString(checkpointMismatch(k, wider, widerP).value_or("")),
             QString("resume: the checkpoint's model (mlp, H=32, L=2, synthetic, %1 parameters) "
                     "does not match this run's (mlp, H=64, L=2, synthetic, %2 parameters)")
                 .arg(P)
                 .arg(widerP));
    RunConfig adam = c;
    adam.optimizer = "adam";
    QVERIFY(checkpointMismatch(k, adam, P).value_or("").starts_with(
        "resume: the checkpoint's optimizer is momentum, this run's adam"));
    RunConfig seed = c;
    seed.seed = 7;
    QVERIFY(checkpointMismatch(k, seed, P).value_or("").starts_with(
        "resume: the checkpoint's seed is 1, this run's 7"));
    RunConfig batch = c;
    batch.batch = 32;
    QVERIFY(checkpointMismatch(k, batch, P).value_or("").starts_with(
        "resume: the checkpoint's global batch is 16, this run's 32"));
    // The layout and the learning rate may differ.
    RunConfig other = withLayout(c, 4, 2);
    other.lr = 0.01;
    QVERIFY(!checkpointMismatch(k, other, P));
  }

  // The CLI: --save after 4 steps, --resume to 7 prints steps 5..7 with the losses of the
  // uninterrupted 7-step run; a directory as --save target is one line and exit 2.
  void cliSavesAndResumes() {
    const QString file = m_dir.filePath("cli.ckpt");
    const QStringList run0 = {"--dataset", "synthetic", "--hidden", "16", "--batch", "8"};
    const Result saved = run(run0 + QStringList{"--steps", "4", "--save", file});
    QVERIFY2(saved.code == 0, qPrintable(saved.err));
    QVERIFY2(saved.out.contains("checkpoint: " + file + " (step 4)"), qPrintable(saved.out));

    const Result resumed = run(run0 + QStringList{"--steps", "7", "--resume", file});
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    QVERIFY2(resumed.out.contains("Resumed from " + file + " at step 4"), qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains(QRegularExpression("step +5  loss")), qPrintable(resumed.out));
    QVERIFY2(!resumed.out.contains(QRegularExpression("step +1  loss")), qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains("done: 7 steps (3 after resuming)"), qPrintable(resumed.out));

    // --json on another layout: steps 5, 6, 7, the uninterrupted run's losses (1e-5).
    const auto losses = [](const QString& out) {
      std::map<int, double> byStep;
      for (const QString& line : out.trimmed().split('\n')) {
        const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
        if (o.contains("step") && o.contains("loss")) byStep[o["step"].toInt()] = o["loss"].toDouble();
      }
      return byStep;
    };
    const Result whole = run(run0 + QStringList{"--steps", "7", "--json"});
    const Result two = run(run0 + QStringList{"--steps", "7", "--json", "--resume", file, "--ranks",
                                              "2", "--zero", "1"});
    QVERIFY2(whole.code == 0 && two.code == 0, qPrintable(whole.err + two.err));
    const std::map<int, double> ref = losses(whole.out), got = losses(two.out);
    QCOMPARE(int(got.size()), 3);
    for (const auto& [step, loss] : got) {
      QVERIFY(step >= 5 && step <= 7);
      QVERIFY2(std::abs(loss - ref.at(step)) <= 1e-5 * std::abs(ref.at(step)),
               qPrintable(QString("step %1: %2 vs %3").arg(step).arg(loss).arg(ref.at(step))));
    }

    const QStringList wider = {"--dataset", "synthetic", "--hidden", "32", "--batch", "8"};
    for (const QStringList& bad :
         {run0 + QStringList{"--steps", "2", "--save", m_dir.path()},
          run0 + QStringList{"--steps", "2", "--save", m_dir.filePath("no/such/folder/f.ckpt")},
          run0 + QStringList{"--steps", "4", "--resume", file},
          wider + QStringList{"--steps", "9", "--resume", file},
          run0 + QStringList{"--steps", "9", "--resume", m_dir.filePath("missing.ckpt")}}) {
      const Result r = run(bad);
      QCOMPARE(r.code, 2);
      QCOMPARE(r.err.count('\n'), 1);
      QVERIFY2(r.err.startsWith("paralab-run: save: ") || r.err.startsWith("paralab-run: resume: "),
               qPrintable(r.err));
    }
  }
};

QTEST_GUILESS_MAIN(TstCheckpoint)
#include "tst_checkpoint.moc"
