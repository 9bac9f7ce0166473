// Mixed precision in checkpoints (train/checkpoint.h, version 2): a bf16 or fp16 run saved at
// step k and resumed continues bit for bit as the uninterrupted run (the fp32 master copy and
// fp16's loss scale are in the file), on the command line too; a run without that state writes
// version 1, and a version-1 file of a 16-bit run still resumes (the master from the parameters).
// Run: ctest -R tst_precision_checkpoint
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "json_lines.h"
#include "loss_trajectory.h"
#include "train/checkpoint.h"

using namespace paralab;

namespace {

RunConfig runOf(const QString& model, Dtype d, const QString& layout) {
  RunConfig c = model == "gpt" ? test::smallGptRun(16) : test::smallRun(32, 2, 48);
  c.precision = d;
  if (d == Dtype::Fp16) c.lossScaleWindow = 3;  // its scale grows within the run: state matters
  for (const QString& part : layout.split(' ', Qt::SkipEmptyParts)) {
    if (part == "dp2") c.dp = 2;
    if (part.startsWith("zero-")) c.zero = part.mid(5).toInt();
    if (part == "k4") c.accumulate = 4;
  }
  c.deriveRanks();
  return c;
}

uint32_t versionOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  uint32_t v = 0;
  if (bytes.size() >= 12) std::memcpy(&v, bytes.data() + 8, sizeof v);
  return v;
}

// A run's step lines: the loss and the loss scale of each step, as printed.
struct Steps {
  std::map<int, double> loss, scale;
};
Steps stepsOf(const QString& out) {
  Steps s;
  for (const QString& line : out.trimmed().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
    if (!o.contains("step") || !o.contains("loss")) continue;
    s.loss[o["step"].toInt()] = o["loss"].toDouble();
    s.scale[o["step"].toInt()] = o["loss_scale"].toDouble();
  }
  return s;
}

}  // namespace

class TstPrecisionCheckpoint : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  std::string path(const char* name) const { return m_dir.filePath(name).toStdString(); }

 private slots:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  // Saved after 10 steps to a file, read back into a new Trainer of the same layout, 10 more:
  // the losses, loss scales and final parameters of the uninterrupted 20-step run, bit for bit.
  void resumesBitForBit_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    QTest::newRow("mlp bf16 serial") << "mlp" << int(Dtype::Bf16) << "";
    QTest::newRow("gpt bf16 serial") << "gpt" << int(Dtype::Bf16) << "";
    QTest::newRow("mlp fp16 serial") << "mlp" << int(Dtype::Fp16) << "";
    QTest::newRow("gpt fp16 dp2") << "gpt" << int(Dtype::Fp16) << "dp2";
    QTest::newRow("mlp bf16 dp2 zero-1") << "mlp" << int(Dtype::Bf16) << "dp2 zero-1";
    QTest::newRow("mlp fp16 dp2 zero-3") << "mlp" << int(Dtype::Fp16) << "dp2 zero-3";
    QTest::newRow("mlp bf16 dp2 zero-2 k4") << "mlp" << int(Dtype::Bf16) << "dp2 zero-2 k4";
  }
  void resumesBitForBit() {
    QFETCH(QString, model);
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    const RunConfig c = runOf(model, Dtype(dtype), layout);
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    const int per = 10;
    std::vector<StepMetrics> straight;
    std::vector<float> straightParams;
    {
      Trainer t(c);
      for (int s = 0; s < 2 * per; ++s) straight.push_back(t.step());
      straightParams = t.saveState().params;
    }
    const std::string file = path("mixed.ckpt");
    std::vector<StepMetrics> resumed;
    {
      Trainer t(c);
      for (int s = 0; s < per; ++s) resumed.push_back(t.step());
      writeCheckpoint(file, t.saveState(), t.config(), t.parameterCount());
    }
    QCOMPARE(versionOf(file), kCheckpointVersion);
    const Checkpoint k = readCheckpoint(file);
    QCOMPARE(k.state.master.size(), k.state.params.size());
    QVERIFY2(k.state.master != k.state.params, "the master holds what 16 bits round away");
    if (Dtype(dtype) == Dtype::Fp16) {  // the scale the next step runs at, and the skips
      QCOMPARE(k.state.lossScale.scale, *straight[per].lossScale);
      QCOMPARE(k.state.lossScale.skipped, *straight[per - 1].skippedSteps);
    }
    Trainer t(c);
    t.loadState(k.state);
    for (int s = 0; s < per; ++s) resumed.push_back(t.step());
    for (int s = 0; s < 2 * per; ++s) {
      QCOMPARE(resumed[size_t(s)].loss, straight[size_t(s)].loss);
      QCOMPARE(resumed[size_t(s)].lossScale, straight[size_t(s)].lossScale);
      QCOMPARE(resumed[size_t(s)].skippedSteps, straight[size_t(s)].skippedSteps);
    }
    QVERIFY(t.saveState().params == straightParams);
    // Without the master (and the scale) the resumed run parts from the uninterrupted one.
    TrainingState bare = k.state;
    bare.master.clear();
    bare.lossScale = {};
    Trainer u(c);
    u.loadState(bare);
    for (int s = 0; s < per; ++s) u.step();
    QVERIFY(u.saveState().params != straightParams);
  }

  // fp32 writes version 1; a 16-bit run's file without its master (as version 1 held it) still
  // reads and resumes, the master taken from the saved 16-bit parameters.
  void versionOneStillReads() {
    const std::string fp32 = path("fp32.ckpt"), old = path("old-bf16.ckpt");
    RunConfig c = runOf("mlp", Dtype::Fp32, "");
    {
      Trainer t(c);
      t.step();
      writeCheckpoint(fp32, t.saveState(), c, t.parameterCount());
    }
    QCOMPARE(versionOf(fp32), uint32_t(1));
    QVERIFY(readCheckpoint(fp32).state.master.empty());
    c.precision = Dtype::Bf16;
    {
      Trainer t(c);
      for (int s = 0; s < 3; ++s) t.step();
      TrainingState state = t.saveState();
      state.master.clear();  // what a version-1 writer kept of a bf16 run
      writeCheckpoint(old, state, c, t.parameterCount());
    }
    QCOMPARE(versionOf(old), uint32_t(1));
    const Checkpoint k = readCheckpoint(old);
    QVERIFY(k.state.master.empty());
    Trainer t(c);
    t.loadState(k.state);
    std::vector<double> losses;
    for (int s = 0; s < 20; ++s) losses.push_back(t.step().loss);
    QCOMPARE(t.stepsDone(), int64_t(23));
    QVERIFY2(losses.back() < losses.front(), "it trains on");
    // The bf16 file read by an fp32 run trains on from the master, not its rounding.
    const std::string mixed = path("bf16.ckpt");
    {
      Trainer b(c);
      for (int s = 0; s < 3; ++s) b.step();
      writeCheckpoint(mixed, b.saveState(), c, b.parameterCount());
    }
    const Checkpoint m = readCheckpoint(mixed);
    RunConfig asFp32 = c;
    asFp32.precision = Dtype::Fp32;
    Trainer f(asFp32);
    f.loadState(m.state);
    QVERIFY(f.saveState().params == m.state.master);
  }

  // paralab-run: fp16 --save after 4 steps, --resume to 8: steps 5..8 print the uninterrupted
  // run's losses and loss scales exactly.
  void cliResumesFp16() {
    const QString file = m_dir.filePath("cli-fp16.ckpt");
    const QStringList run0 = {
        "--dataset", "synthetic",           "--hidden", "16",    "--batch", "8", "--precision",
        "fp16",      "--loss-scale-window", "2",        "--json"};
    const auto run = [](const QStringList& args) {
      return test::runProgram(PARALAB_RUN, args, 120000);
    };
    const test::ProgramResult whole = run(run0 + QStringList{"--steps", "8"});
    const test::ProgramResult saved = run(run0 + QStringList{"--steps", "4", "--save", file});
    const test::ProgramResult resumed = run(run0 + QStringList{"--steps", "8", "--resume", file});
    QVERIFY2(whole.code == 0 && saved.code == 0 && resumed.code == 0,
             qPrintable(whole.err + saved.err + resumed.err));
    const Steps ref = stepsOf(whole.out), got = stepsOf(resumed.out);
    QCOMPARE(int(got.loss.size()), 4);
    QVERIFY2(ref.scale.at(5) != ref.scale.at(1), "the scale moved before the checkpoint");
    for (const auto& [step, loss] : got.loss) {
      QVERIFY(step >= 5 && step <= 8);
      QCOMPARE(loss, ref.loss.at(step));
      QCOMPARE(got.scale.at(step), ref.scale.at(step));
    }
  }
};

QTEST_GUILESS_MAIN(TstPrecisionCheckpoint)
#include "tst_precision_checkpoint.moc"
