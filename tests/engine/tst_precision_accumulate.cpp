// Mixed precision with gradient accumulation (--precision bf16|fp16 --accumulate K,
// engine/train/precision.h): each micro-batch's weight gradients rounded to 16 bits apart and
// added into the fp32 sum, serial and data-parallel runs that learn and agree with their own
// serial run, one sync a step, one micro-batch's activations, fp16's overflow check over the step.
// Run: ctest -R tst_precision_accumulate
#include <QtTest>
#include <cmath>

#include "cpu/half.h"
#include "loss_scale_run.h"
#include "loss_trajectory.h"
#include "train/precision.h"

using namespace paralab;

namespace {

// An MLP whose batch divides by 4 micro-batches and then by 2 replicas (48 = 4 x 2 x 6).
RunConfig mlpRun(Dtype d, int accumulate) {
  RunConfig c = test::smallRun(32, 2, 48);
  c.bucketMb = 0.01;  // several buckets even for this small model
  c.precision = d;
  c.accumulate = accumulate;
  return c;
}

RunConfig gptRun(Dtype d, int accumulate) {
  RunConfig c = test::smallGptRun(16);
  c.bucketMb = 0.001;
  c.precision = d;
  c.accumulate = accumulate;
  return c;
}

RunConfig withLayout(RunConfig c, const QString& layout) {
  for (const QString& part : layout.split(' ', Qt::SkipEmptyParts)) {
    if (part == "dp2") c.dp = 2;
    if (part.startsWith("zero-")) c.zero = part.mid(5).toInt();
    if (part == "per-tensor") c.dpVersion = DpVersion::PerTensor;
  }
  c.deriveRanks();
  return c;
}

bool allRepresentable(const std::vector<float>& values, Dtype d) {
  for (float v : values)
    if ((d == Dtype::Bf16 ? kernels::roundToBf16(v) : kernels::roundToFp16(v)) != v) return false;
  return true;
}

// Rank `rank`'s calls and bytes sent of `op` in one step, over every group.
std::pair<int64_t, int64_t> traffic(const StepMetrics& m, const std::string& op, int rank) {
  int64_t calls = 0, bytes = 0;
  for (const OpTraffic& o : m.ranks.at(size_t(rank)).ops)
    if (o.op == op) calls += o.calls, bytes += o.bytesSent;
  return {calls, bytes};
}

// A backward as the layers write one: += into the gradient buffer.
void backwardWrites(ParamSet& ps, const std::vector<float>& g) {
  for (size_t i = 0; i < g.size(); ++i) ps.grad(0)[i] += g[i];
}

}  // namespace

class TstPrecisionAccumulate : public QObject {
  Q_OBJECT
 private slots:
  // The second micro-batch's gradients are rounded alone and added to the first's fp32 sum:
  // S + round(g), not round(S + g), nor round(S) + round(g).
  void eachMicroBatchRoundedApart() {
    ParamSet ps;
    ps.beginUnit("unit");
    ps.add("w", {3});
    ps.allocate(nullptr);
    RunConfig c = mlpRun(Dtype::Bf16, 2);
    MixedPrecision mp(c);
    MixedPrecision::Hooks hooks(mp, ps, nullptr);
    // 1 + 2^-8 is a bf16 tie (rounds to 1); 2^-9 alone is a bf16 value.
    const std::vector<float> first = {1.f, 3.f, 0.25f}, second = {0x1p-8f, 0x1p-9f, 1.f + 0x1p-8f};
    hooks.beforeBackward(0);
    backwardWrites(ps, first);
    hooks.afterBackward(0);
    hooks.beforeBackward(0);
    backwardWrites(ps, second);
    hooks.afterBackward(0);
    const float* sum = ps.grad(0);
    QCOMPARE(sum[0], 1.f + 0x1p-8f);  // fp32 keeps what rounding the sum would lose
    QCOMPARE(sum[1], 3.f + 0x1p-9f);  // below bf16's step at 3
    QCOMPARE(sum[2], 0.25f + 1.f);    // the micro-batch's own value rounded: 1 + 2^-8 -> 1
    QVERIFY(sum[0] != kernels::roundToBf16(sum[0]));
  }

  // Serial bf16 and fp16 with --accumulate 4 learn; the parameters stay 16-bit values.
  void trains_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    for (const bool gpt : {false, true})
      for (const Dtype d : {Dtype::Bf16, Dtype::Fp16})
        QTest::addRow("%s %s K=4", gpt ? "gpt" : "mlp", nameOf(d).c_str()) << gpt << int(d);
  }
  void trains() {
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    const Dtype d = Dtype(dtype);
    const RunConfig c = gpt ? gptRun(d, 4) : mlpRun(d, 4);
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    Trainer t(c);
    std::vector<double> losses;
    StepMetrics last;
    for (int s = 0; s < 30; ++s) losses.push_back((last = t.step()).loss);
    QVERIFY2(losses.back() < 0.9 * losses.front(), "the run should learn");
    QVERIFY2(allRepresentable(t.saveState().params, d), "parameters are 16-bit values");
    QCOMPARE(last.accumulate, std::optional<int>(4));
    QVERIFY(last.lossScale && last.skippedSteps && last.flushedGrads);
    if (d == Dtype::Bf16) QCOMPARE(*last.lossScale, 1.0);
  }

  // bf16 --accumulate 4 on 2 data-parallel ranks against its own serial bf16 --accumulate 4
  // run, within the bound of the dp2 bf16 runs (tst_precision: each rank rounds its own part
  // of a micro-batch's gradient, the serial run the whole micro-batch's).
  void layoutsAgreeWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "mlp";
      QTest::addRow("%s dp2 bucket K=4", model) << gpt << "dp2";
      QTest::addRow("%s dp2 per-tensor K=4", model) << gpt << "dp2 per-tensor";
      for (const char* zero : {"zero-1", "zero-2", "zero-3"})
        QTest::addRow("%s dp2 %s K=4", model, zero) << gpt << QString("dp2 ") + zero;
    }
  }
  void layoutsAgreeWithSerial() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    const RunConfig serial = gpt ? gptRun(Dtype::Bf16, 4) : mlpRun(Dtype::Bf16, 4);
    const RunConfig run = withLayout(serial, layout);
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const int steps = gpt ? 15 : 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(run, steps);
    qInfo("loss %.3g params %.3g", test::worstRelativeDifference(b.losses, a.losses, 1),
          test::worstParameterDifference(b.params, a.params));
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 K=4 layout vs serial bf16 K=4");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters");
    QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
    // The same rounding points (each of 2 ranks rounds its own part of each micro-batch): the
    // order of the sums decides, as in fp32, so every dp2 layout agrees with dp2 per-tensor.
    const test::RunRecord ref = test::recordRun(withLayout(serial, "dp2 per-tensor"), steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, ref.losses, 1e-5, "bf16 K=4 layout vs dp2 per-tensor");
    VERIFY_PARAMETERS_AGREE(b.params, ref.params, 1e-5, "final parameters, vs dp2 per-tensor");
  }

  // One sync a step in bf16 too: the calls and bytes of --accumulate 1 (ZeRO-2 and -3
  // reduce-scatter every micro-batch into the owned shard, as in fp32: K times).
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
    QTest::newRow("zero-3") << "dp2 zero-3"
                            << "reducescatter" << 4;
  }
  void oneSyncPerStep() {
    QFETCH(QString, layout);
    QFETCH(QString, op);
    QFETCH(int, perMicroBatch);
    const RunConfig once = withLayout(mlpRun(Dtype::Bf16, 1), layout);
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
    }
  }

  // The activations alive at once are one micro-batch's, in 16 bits.
  void activationsOfOneMicroBatch_data() {
    QTest::addColumn<bool>("gpt");
    QTest::newRow("mlp") << false;
    QTest::newRow("gpt") << true;
  }
  void activationsOfOneMicroBatch() {
    QFETCH(bool, gpt);
    const RunConfig accumulated = gpt ? gptRun(Dtype::Bf16, 4) : mlpRun(Dtype::Bf16, 4);
    RunConfig small = accumulated, whole = accumulated;
    small.accumulate = 1;
    small.batch = accumulated.batch / 4;
    whole.accumulate = 1;
    const auto peak = [](const RunConfig& c) {
      Trainer t(c);
      t.step();
      return t.step().ranks.at(0).mem.peak[size_t(MemCategory::Activations)];
    };
    const int64_t a = peak(accumulated), s = peak(small), w = peak(whole);
    QCOMPARE(a, s);
    QVERIFY2(a < w, "accumulation keeps fewer activations than the whole batch");
  }

  // fp16: the scale multiplies every micro-batch's loss; an overflow in any of them skips the
  // step on every rank and halves the scale, clean steps double it.
  void fp16OverflowCoversTheStep() {
    RunConfig c = withLayout(mlpRun(Dtype::Fp16, 4), "dp2 zero-1");
    test::verifyScaleFollowsOverflows(c, 30);
    if (QTest::currentTestFailed()) return;
    c.lossScale = "1e30";  // every micro-batch overflows: the step is skipped, nothing moves
    Trainer never(c);
    const std::vector<float> before = never.saveState().params;
    never.step();
    QCOMPARE(never.saveState().params, before);
  }
};

QTEST_GUILESS_MAIN(TstPrecisionAccumulate)
#include "tst_precision_accumulate.moc"
