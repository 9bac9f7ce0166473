// Mixed precision (--precision bf16|fp16, engine/train/precision.h) as a user relies on it: real
// round-to-nearest-even to bf16 and fp16 (range, subnormals, flushes), runs that learn with
// 16-bit parameters over an fp32 master copy, fp16's loss scale keeping the gradients fp16 alone
// flushes (counted in the JSON line), every synchronous layout in bf16 against its own serial
// bf16 run, and one-line refusals where 16 bits do not run yet.
// Run: ctest -R tst_precision
#include <QtTest>
#include <cmath>

#include "cpu/half.h"
#include "describe.h"
#include "json_lines.h"
#include "loss_scale_run.h"
#include "loss_trajectory.h"
#include "model/layers.h"
#include "schema.h"
#include "train/precision.h"

using namespace paralab;
using kernels::roundToBf16;
using kernels::roundToFp16;

namespace {

RunConfig mlpRun(Dtype d) {
  RunConfig c = test::smallRun(32, 2, 48);
  c.bucketMb = 0.01;  // several buckets even for this small model
  c.precision = d;
  return c;
}

RunConfig gptRun(Dtype d) {
  RunConfig c = test::smallGptRun(16);
  c.bucketMb = 0.001;
  c.precision = d;
  return c;
}

RunConfig withLayout(RunConfig c, const QString& layout) {
  for (const QString& part : layout.split(' ', Qt::SkipEmptyParts)) {
    if (part == "dp2") c.dp = 2;
    if (part == "dp3") c.dp = 3;
    if (part.startsWith("zero-")) c.zero = part.mid(5).toInt();
    if (part == "per-tensor") c.dpVersion = DpVersion::PerTensor;
  }
  c.deriveRanks();
  return c;
}

bool allRepresentable(const std::vector<float>& values, Dtype d) {
  for (float v : values)
    if ((d == Dtype::Bf16 ? roundToBf16(v) : roundToFp16(v)) != v) return false;
  return true;
}

}  // namespace

class TstPrecision : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The rounding: nearest, ties to even, fp16's range

  void rounding_data() {
    QTest::addColumn<bool>("fp16");
    QTest::addColumn<float>("in");
    QTest::addColumn<float>("out");
    const float inf = INFINITY;
    QTest::newRow("bf16 exact") << false << 1.5f << 1.5f;
    QTest::newRow("bf16 tie to even down") << false << 1.f + 0x1p-8f << 1.f;
    QTest::newRow("bf16 tie to even up") << false << 1.f + 3 * 0x1p-8f << 1.f + 0x1p-6f;
    QTest::newRow("bf16 above the tie") << false << 1.f + 0x1p-8f + 0x1p-20f << 1.f + 0x1p-7f;
    QTest::newRow("bf16 negative") << false << -(1.f + 0x1p-8f + 0x1p-20f) << -(1.f + 0x1p-7f);
    QTest::newRow("bf16 keeps fp32's range") << false << 1e-30f << roundToBf16(1e-30f);
    QTest::newRow("bf16 past its largest") << false << 3.4028235e38f << inf;
    QTest::newRow("fp16 exact") << true << 0.375f << 0.375f;
    QTest::newRow("fp16 tie to even down") << true << 1.f + 0x1p-11f << 1.f;
    QTest::newRow("fp16 tie to even up") << true << 1.f + 3 * 0x1p-11f << 1.f + 0x1p-9f;
    QTest::newRow("fp16 largest") << true << 65504.f << 65504.f;
    QTest::newRow("fp16 below the overflow tie") << true << 65519.f << 65504.f;
    QTest::newRow("fp16 overflow") << true << 65520.f << inf;
    QTest::newRow("fp16 negative overflow") << true << -1e6f << -inf;
    QTest::newRow("fp16 smallest normal") << true << 0x1p-14f << 0x1p-14f;
    QTest::newRow("fp16 subnormal") << true << 3 * 0x1p-24f << 3 * 0x1p-24f;
    QTest::newRow("fp16 subnormal rounds") << true << 1.4f * 0x1p-24f << 0x1p-24f;
    QTest::newRow("fp16 subnormal tie to even") << true << 1.5f * 0x1p-24f << 2 * 0x1p-24f;
    QTest::newRow("fp16 least subnormal") << true << 0x1p-24f << 0x1p-24f;
    QTest::newRow("fp16 half of it flushes") << true << 0x1p-25f << 0.f;
    QTest::newRow("fp16 just above half") << true << 0x1.0002p-25f << 0x1p-24f;
    QTest::newRow("fp16 flush") << true << 1e-9f << 0.f;
  }
  void rounding() {
    QFETCH(bool, fp16);
    QFETCH(float, in);
    QFETCH(float, out);
    const float got = fp16 ? roundToFp16(in) : roundToBf16(in);
    QCOMPARE(got, out);
    QVERIFY(std::signbit(got) == std::signbit(in));
  }

  void roundingCountsFlushes() {
    std::vector<float> v = {1e-9f, -1e-9f, 0.f, 1.f, 3e-8f, 65504.f};
    QCOMPARE(roundStored(Dtype::Fp16, v.data(), int64_t(v.size())), int64_t(2));
    QCOMPARE(v[4], 0x1p-24f);  // 3e-8 is above half the least subnormal: kept
    QVERIFY(std::isnan(roundToBf16(NAN)) && std::isnan(roundToFp16(NAN)));
    std::vector<float> w = {1e-9f};
    QCOMPARE(roundStored(Dtype::Bf16, w.data(), 1), int64_t(0));  // bf16 has fp32's range
    QCOMPARE(roundStored(Dtype::Fp32, w.data(), 1), int64_t(0));
  }

  // [SECTION] The loss scale

  void lossScale() {
    RunConfig c = mlpRun(Dtype::Fp16);
    c.lossScaleWindow = 3;
    LossScaler s(c);
    QCOMPARE(s.scale(), 65536.f);
    s.update(true);  // an overflow: skipped, halved
    QCOMPARE(s.scale(), 32768.f);
    QCOMPARE(s.skipped(), int64_t(1));
    s.update(false), s.update(false);
    QCOMPARE(s.scale(), 32768.f);
    s.update(false);  // the third clean step in a row doubles it
    QCOMPARE(s.scale(), 65536.f);
    c.lossScale = "128";
    LossScaler fixed(c);
    fixed.update(true);
    QCOMPARE(fixed.scale(), 128.f);  // a fixed scale stays; the step is still skipped
    QCOMPARE(fixed.skipped(), int64_t(1));
    QCOMPARE(LossScaler(mlpRun(Dtype::Bf16)).scale(), 1.f);  // bf16 needs none
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseLossScale("0.5"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseLossScale("big"));
  }

  // [SECTION] Runs

  // Each model learns in 16 bits; its parameters are 16-bit values throughout, and the
  // figures of the step are in its metrics.
  void trains_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    for (const bool gpt : {false, true})
      for (const Dtype d : {Dtype::Bf16, Dtype::Fp16})
        QTest::addRow("%s %s", gpt ? "gpt" : "mlp", nameOf(d).c_str()) << gpt << int(d);
  }
  void trains() {
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    const Dtype d = Dtype(dtype);
    const RunConfig c = gpt ? gptRun(d) : mlpRun(d);
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    Trainer t(c);
    std::vector<double> losses;
    StepMetrics last;
    for (int s = 0; s < 30; ++s) losses.push_back((last = t.step()).loss);
    QVERIFY2(losses.back() < 0.9 * losses.front(), "the run should learn");
    QVERIFY2(allRepresentable(t.saveState().params, d), "parameters are 16-bit values");
    QVERIFY(last.lossScale && last.skippedSteps && last.flushedGrads);
    if (d == Dtype::Bf16) QCOMPARE(*last.lossScale, 1.0);
    // The same run in fp32 is another trajectory: the rounding is real.
    RunConfig fp32 = c;
    fp32.precision = Dtype::Fp32;
    const std::vector<double> ref = test::lossTrajectory(fp32, 30);
    QVERIFY(ref.back() != losses.back());
    QVERIFY(!Trainer(fp32).step().lossScale);  // an fp32 line carries no loss scale
  }

  // Every synchronous layout in bf16 against its own serial bf16 run. Each rank rounds its own
  // partial gradient to bf16 before the fp32 sum, where the serial run rounds the whole
  // batch's: the runs agree to bf16's rounding, not to fp32's.
  void layoutsAgreeWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "mlp";
      QTest::addRow("%s dp2 bucket", model) << gpt << "dp2";
      QTest::addRow("%s dp2 per-tensor", model) << gpt << "dp2 per-tensor";
      for (const char* zero : {"zero-1", "zero-2", "zero-3"})
        QTest::addRow("%s dp2 %s", model, zero) << gpt << QString("dp2 ") + zero;
    }
  }
  void layoutsAgreeWithSerial() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    const RunConfig serial = gpt ? gptRun(Dtype::Bf16) : mlpRun(Dtype::Bf16);
    const RunConfig run = withLayout(serial, layout);
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const int steps = gpt ? 15 : 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(run, steps);
    qInfo("loss %.3g params %.3g", test::worstRelativeDifference(b.losses, a.losses, 1),
          test::worstParameterDifference(b.params, a.params));
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 layout vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters");
    // Where the rounding points are the same (each of 2 ranks rounds its own gradient), the
    // order of the sums decides, as in fp32: every dp2 layout agrees with dp2 per-tensor.
    const test::RunRecord ref = test::recordRun(withLayout(serial, "dp2 per-tensor"), steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, ref.losses, 1e-5, "bf16 layout vs dp2 per-tensor bf16");
    VERIFY_PARAMETERS_AGREE(b.params, ref.params, 1e-5, "final parameters, vs dp2 per-tensor");
  }

  // fp16 without a loss scale flushes small gradients to zero; the dynamic scale keeps them.
  // The counts, the scale and the skipped steps are in every step's JSON line.
  void scalingKeepsWhatFp16Flushes() {
    struct Figures {
      int64_t flushed = 0, skipped = 0, lines = 0;
      double lastScale = 0;
    };
    const auto run = [](const QString& scale) {
      Figures f;
      for (const nlohmann::json& j :
           test::runJsonLines(PARALAB_RUN,
                              {"--dataset", "synthetic", "--steps", "30", "--precision", "fp16",
                               "--loss-scale", scale, "--json"},
                              31))
        if (j.contains("step")) {
          ++f.lines;
          f.flushed += j.at("flushed_grads").get<int64_t>();
          f.skipped += j.at("skipped_steps").get<int64_t>();
          f.lastScale = j.at("loss_scale").get<double>();
        }
      return f;
    };
    const Figures none = run("1"), dynamic = run("dynamic");
    const int64_t lost = none.flushed, kept = dynamic.flushed;
    qInfo("gradient entries flushed in 30 steps: %lld without scaling, %lld with", (long long)lost,
          (long long)kept);
    QCOMPARE(none.lines, int64_t(30));
    QCOMPARE(dynamic.lines, int64_t(30));
    QCOMPARE(none.skipped + dynamic.skipped, int64_t(0));
    const double unscaled = none.lastScale, scaled = dynamic.lastScale;
    QCOMPARE(unscaled, 1.0);
    QCOMPARE(scaled, 65536.0);
    QVERIFY2(lost > 0, "fp16 alone flushes small gradients");
    QVERIFY2(kept < lost / 10, "the loss scale keeps them");
  }

  // An overflow skips its step on every rank and halves the scale; clean steps double it.
  void overflowSkipsTheStep() {
    RunConfig c = withLayout(mlpRun(Dtype::Fp16), "dp2 zero-2");
    test::verifyScaleFollowsOverflows(c, 30);
    if (QTest::currentTestFailed()) return;
    // A step skipped keeps the parameters as they were.
    c.lossScale = "1e30";
    Trainer never(c);
    const std::vector<float> before = never.saveState().params;
    never.step();
    QCOMPARE(never.saveState().params, before);
  }

  // bf16 against fp32 on the fortunes, the same seed and steps: the held-out loss within
  // 0.05 nats a character (README gives a longer run's numbers).
  void fortunesHeldOutGap() {
    RunConfig c;
    c.model = ModelKind::Gpt;
    c.dataset = "fortunes";
    c.hidden = 32, c.layers = 2, c.heads = 4, c.seq = 32, c.batch = 16;
    c.optimizer = "adam";
    c.lr = 0.003;
    c.steps = 150;
    c.evalEvery = 150;  // the last step evaluates
    c.evalSamples = 500;
    if (auto err = c.validate()) QSKIP(err->c_str());  // Debian's fortunes package absent
    const auto heldOut = [&](Dtype d) {
      RunConfig run = c;
      run.precision = d;
      Trainer t(run);
      StepMetrics last;
      for (int s = 0; s < run.steps; ++s) last = t.step();
      return last.testLoss.value_or(INFINITY);
    };
    const double fp32 = heldOut(Dtype::Fp32), bf16 = heldOut(Dtype::Bf16);
    qInfo("fortunes, held-out loss after %d steps: fp32 %.4f, bf16 %.4f nats/char", c.steps, fp32,
          bf16);
    QVERIFY2(std::abs(bf16 - fp32) < 0.05, "bf16 trains as fp32 does, within bf16's rounding");
  }

  // [SECTION] Refusals: one line naming the setting

  void refusals_data() {
    QTest::addColumn<QString>("change");
    QTest::addColumn<QString>("line");
    QTest::newRow("local sgd") << "local-sgd"
                               << "precision: bf16 trains serially and with";
    QTest::newRow("cuda") << "cuda"
                          << "precision: bf16 trains on the CPU";
    QTest::newRow("tf32") << "tf32"
                          << "precision: tf32 is for --project";
    QTest::newRow("loss scale of bf16") << "loss-scale"
                                        << "loss-scale: a loss scale is fp16's";
  }
  void refusals() {
    QFETCH(QString, change);
    QFETCH(QString, line);
    RunConfig c = mlpRun(Dtype::Bf16);
    if (change == "local-sgd") c.strategy = "local-sgd", c.ranks = 2;
    if (change == "cuda") c.device = Device::Cuda;
    if (change == "tf32") c.precision = Dtype::Tf32;
    if (change == "loss-scale") c.lossScale = "128";
    const std::string err = c.validate().value_or("");
    QVERIFY2(err.rfind(line.toStdString(), 0) == 0, err.c_str());
    c.precision = Dtype::Fp32;  // the same layout trains in fp32
    c.lossScale = "dynamic";
    if (change != "cuda") QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
  }

  void refusedOnTheCommandLine() {
    const test::ProgramResult r =
        test::runProgram(PARALAB_RUN, {"--dataset", "synthetic", "--precision", "fp16", "--ranks",
                                       "2", "--strategy", "local-sgd"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("precision: fp16 trains serially"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    const test::ProgramResult s = test::runProgram(
        PARALAB_RUN, {"--dataset", "synthetic", "--precision", "fp16", "--loss-scale", "0.5"});
    QCOMPARE(s.code, 2);
    QVERIFY2(s.err.contains("loss-scale: '0.5' is not dynamic or a number"), qPrintable(s.err));
  }

  // --help and the run's description say what the setting does and that the speed is fp32's,
  // but for the forward's weight GEMMs where a CPU with AMX runs them in bf16 (model/layers.h).
  void saysWhatItIs() {
    const Setting* s = findSetting("precision");
    QVERIFY(s);
    QVERIFY(QString::fromStdString(s->help).contains("fp32|bf16|fp16"));
    RunConfig c = mlpRun(Dtype::Bf16);
    const RunDescription d = describeRun(c);
    QVERIFY2(d.find("precision"), "the summary lists the setting");
    const std::string said =
        forwardGemmInBf16(c.precision, false, c.kernel)
            ? "bf16 mixed (16-bit memory and numerics, forward GEMMs in bf16 on AMX)"
            : "bf16 mixed (16-bit memory and numerics, fp32 speed)";
    QVERIFY2(d.training.find(said) != std::string::npos, d.training.c_str());
    c.precision = Dtype::Fp16;  // no fp16 GEMM of fp32 sums on a CPU: fp32 speed everywhere
    QVERIFY2(describeRun(c).training.find("fp16 mixed (16-bit memory and numerics, fp32 speed)") !=
                 std::string::npos,
             describeRun(c).training.c_str());
  }
};

QTEST_GUILESS_MAIN(TstPrecision)
#include "tst_precision.moc"
