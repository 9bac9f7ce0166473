// Gradient accumulation (--accumulate K, parallel/data/accumulation.h) as a user relies on it:
// K micro-batches of B / K make the same step as one batch of B (loss and final parameters to
// 1e-5, serial and parallel, MLP and GPT), data parallelism sums the gradients once per
// optimizer step with the bytes of --accumulate 1, the activations are one micro-batch's, and
// a K that does not divide the batch is one line naming the setting.
// Run: ctest -R tst_accumulate
#include <QtTest>

#include "describe.h"
#include "json_lines.h"
#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "schema.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// An MLP whose batch divides by 4 micro-batches and then by 2 replicas (48 = 4 x 12 = 4 x 2 x 6).
RunConfig mlpRun() {
  RunConfig c = test::smallRun(32, 2, 48);
  c.bucketMb = 0.01;  // several buckets even for this small model
  return c;
}

RunConfig gptRun() {
  RunConfig c = test::smallGptRun(16);
  c.bucketMb = 0.001;
  return c;
}

// A layout written as the test rows name it: "dp2" 2 replicas; "zero-N"; "per-tensor"; "tp2",
// "pp2" (2 pipeline micro-batches); the ranks are their product.
RunConfig withLayout(RunConfig c, const QString& layout) {
  for (const QString& part : layout.split(' ', Qt::SkipEmptyParts)) {
    if (part == "dp2") c.dp = 2;
    if (part.startsWith("zero-")) c.zero = part.mid(5).toInt();
    if (part == "per-tensor") c.dpVersion = DpVersion::PerTensor;
    if (part == "tp2") c.tp = 2;
    if (part == "pp2") c.pp = 2, c.microbatches = 2;
  }
  c.deriveRanks();
  return c;
}

// Rank `rank`'s calls and bytes sent of `op` in one step, over every group.
std::pair<int64_t, int64_t> traffic(const StepMetrics& m, const std::string& op, int rank = 0) {
  int64_t calls = 0, bytes = 0;
  for (const OpTraffic& o : m.ranks.at(size_t(rank)).ops)
    if (o.op == op) calls += o.calls, bytes += o.bytesSent;
  return {calls, bytes};
}

int64_t activationPeak(const RunConfig& c) {
  Trainer t(c);
  t.step();
  return t.step().ranks.at(0).mem.peak[size_t(MemCategory::Activations)];
}

}  // namespace

class TstAccumulate : public QObject {
  Q_OBJECT
 private slots:
  // Serial --accumulate 1 against K micro-batches, serial and in every synchronous layout.
  void equalsSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<int>("accumulate");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "mlp";
      QTest::addRow("%s serial K=4", model) << gpt << "" << 4;
      QTest::addRow("%s dp2 bucket K=4", model) << gpt << "dp2" << 4;
      QTest::addRow("%s dp2 per-tensor K=4", model) << gpt << "dp2 per-tensor" << 4;
      for (const char* zero : {"zero-1", "zero-2", "zero-3"})
        QTest::addRow("%s dp2 %s K=4", model, zero) << gpt << QString("dp2 ") + zero << 4;
      QTest::addRow("%s pp2 x 2 micro K=2", model) << gpt << "pp2" << 2;
      QTest::addRow("%s dp2 pp2 zero-1 K=2", model) << gpt << "dp2 pp2 zero-1" << 2;
      QTest::addRow("%s tp2 K=4", model) << gpt << "tp2" << 4;
    }
  }
  void equalsSerial() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    QFETCH(int, accumulate);
    const RunConfig serial = gpt ? gptRun() : mlpRun();
    RunConfig run = withLayout(serial, layout);
    run.accumulate = accumulate;
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const int steps = gpt ? 15 : 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(run, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "accumulated vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, accumulated vs serial");
    QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
  }

  // Data parallelism sums the gradients once per optimizer step: the same collectives, calls
  // and bytes as --accumulate 1 at the same global batch. ZeRO-2 and -3 reduce-scatter every
  // micro-batch into the owned shard, as DeepSpeed does: K times the calls.
  void oneSyncPerStep_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("perMicroBatch");  // 1: once per step; K: once per micro-batch
    QTest::newRow("bucket") << "dp2"
                            << "allreduce" << 1;
    QTest::newRow("per-tensor") << "dp2 per-tensor"
                                << "allreduce" << 1;
    QTest::newRow("zero-1") << "dp2 zero-1"
                            << "reducescatter" << 1;
    QTest::newRow("zero-2") << "dp2 zero-2"
                            << "reducescatter" << 4;
    QTest::newRow("pp2 bucket") << "dp2 pp2"
                                << "allreduce" << 1;
  }
  void oneSyncPerStep() {
    QFETCH(QString, layout);
    QFETCH(QString, op);
    QFETCH(int, perMicroBatch);
    RunConfig once = withLayout(mlpRun(), layout);
    if (once.pp > 1) once.batch = 64;  // 4 micro-batches x 2 replicas x 2 pipeline pieces
    RunConfig four = once;
    four.accumulate = 4;
    QVERIFY2(!four.validate(), four.validate().value_or("").c_str());
    Trainer a(once), b(four);
    for (int s = 0; s < 2; ++s) {
      const StepMetrics ma = a.step(), mb = b.step();
      for (int r = 0; r < once.ranks; ++r) {
        const auto [callsA, bytesA] = traffic(ma, op.toStdString(), r);
        const auto [callsB, bytesB] = traffic(mb, op.toStdString(), r);
        QVERIFY2(callsA > 0, "the layout sums gradients");
        QCOMPARE(callsB, callsA * perMicroBatch);
        QCOMPARE(bytesB, bytesA * perMicroBatch);
      }
      QCOMPARE(mb.accumulate, std::optional<int>(4));  // the step's JSON line says it
      QVERIFY(!ma.accumulate);
    }
  }

  // The activations alive at once are one micro-batch's: those of a batch of B / K.
  void activationsOfOneMicroBatch_data() {
    QTest::addColumn<bool>("gpt");
    QTest::newRow("mlp") << false;
    QTest::newRow("gpt") << true;
  }
  void activationsOfOneMicroBatch() {
    QFETCH(bool, gpt);
    RunConfig whole = gpt ? gptRun() : mlpRun();
    RunConfig accumulated = whole, small = whole;
    accumulated.accumulate = 4;
    small.batch = whole.batch / 4;
    const int64_t a = activationPeak(accumulated), s = activationPeak(small),
                  w = activationPeak(whole);
    QCOMPARE(a, s);
    QVERIFY2(a < w, "accumulation keeps fewer activations than the whole batch");
    // The estimate that refuses a run too big for this machine counts the same.
    QCOMPARE(estimateMemory(accumulated).activations, estimateMemory(small).activations);
  }

  // K must divide the global batch; the refusal names the setting. Only sync's layouts
  // accumulate.
  void refusals() {
    RunConfig c = mlpRun();
    c.accumulate = 5;  // 48 is not a multiple of 5
    QVERIFY(c.validate());
    QVERIFY2(c.validate()->rfind("accumulate: 5 does not divide the global batch (48", 0) == 0,
             c.validate()->c_str());
    c.accumulate = 48;
    c.ranks = 2;  // micro-batches of 1 sample cannot feed 2 ranks
    QVERIFY(c.validate() && c.validate()->rfind("accumulate:", 0) == 0);
    c.accumulate = 4;
    c.strategy = "local-sgd";
    QVERIFY(c.validate() && c.validate()->rfind("accumulate:", 0) == 0);
  }

  // The command line: one line naming the setting, exit code 2.
  void refusedOnTheCommandLine() {
    const test::ProgramResult r = test::runProgram(
        PARALAB_RUN, {"--dataset", "synthetic", "--batch", "50", "--accumulate", "4"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("accumulate: 4 does not divide the global batch (50"),
             qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
  }

  // --help and the run's description say what --batch counts and the accumulation.
  void saysWhatBatchCounts() {
    const Setting* s = findSetting("accumulate");
    QVERIFY(s);
    QVERIFY(QString::fromStdString(s->help).contains("--batch is the global batch"));
    QVERIFY2(s->inWindow && s->live, "a control of the window's settings, changed live");
    RunConfig c = mlpRun();
    c.accumulate = 4;
    const RunDescription d = describeRun(c);
    QVERIFY2(d.find("accumulate"), "the summary lists the setting");
    QVERIFY2(d.training.find("accumulate 4 × 12") != std::string::npos, d.training.c_str());
  }
};

QTEST_GUILESS_MAIN(TstAccumulate)
#include "tst_accumulate.moc"
