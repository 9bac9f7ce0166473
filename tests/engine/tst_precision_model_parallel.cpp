// Mixed precision under tensor, sequence, pipeline, context and expert parallelism, with dp and
// ZeRO: each layout in 16 bits against its own serial 16-bit run (fp32's tolerance where the
// rounding points and sums are serial's, a stated bound where not), fp16's skipped steps agreed
// over every rank, model states per rank to the byte. Run: ctest -R tst_precision_model_parallel
#include <QtTest>

#include "layout_spec.h"
#include "loss_scale_run.h"
#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "moe_runs.h"
#include "train/precision.h"

using namespace paralab;

namespace {

// The MLP and the small GPT with 4 blocks (pp 4 holds one each), in `d`, with SGD and
// momentum: Adam moves a weight whose gradient is near zero by a whole step of lr whichever sign
// its rounding gives it (as tst_pipeline_interleaved says of fp32), so its parameters would
// measure the optimizer, not the layout.
RunConfig modelRun(bool gpt, Dtype d) {
  RunConfig c = gpt ? test::smallGptRun(16) : test::smallRun(32, 4, 48);
  c.layers = 4;
  c.optimizer = "momentum";
  c.lr = 0.05;
  c.precision = d;
  return c;
}

// `spec` as layout_spec.h reads it, plus "zb-h1", "interleaved" (2 chunks a stage) and
// "ulysses".
RunConfig laidOut(const RunConfig& serial, QString spec) {
  RunConfig c = serial;
  if (spec.contains("zb-h1")) c.schedule = "zb-h1";
  if (spec.contains("interleaved")) c.schedule = "interleaved", c.virtualStages = 2;
  if (spec.contains("ulysses")) c.cpKind = CpKind::Ulysses;
  spec.remove("zb-h1").remove("interleaved").remove("ulysses");
  return test::withLayout(c, spec.simplified());
}

constexpr int kSteps = 12;

}  // namespace

class TstPrecisionModelParallel : public QObject {
  Q_OBJECT
 private slots:
  // One micro-batch a step: every stage rounds what it keeps where the serial model rounds it,
  // the values crossing a stage boundary are those kept activations (already 16-bit) and the
  // fp32 activation gradients the serial backward carries, and each weight gradient is rounded
  // once, as the serial run's. The runs agree to fp32's tolerance.
  void pipelineRoundsWhereSerialDoes_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    for (const bool gpt : {false, true})
      for (const char* layout : {"pp2 M1", "pp4 M1", "pp2 M1 gpipe", "pp4 M1 zb-h1"})
        QTest::addRow("%s %s", gpt ? "gpt" : "mlp", layout) << gpt << layout;
  }
  void pipelineRoundsWhereSerialDoes() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    const RunConfig serial = modelRun(gpt, Dtype::Bf16), run = laidOut(serial, layout);
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(serial, kSteps), b = test::recordRun(run, kSteps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "bf16 pipeline vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters");
  }

  // Every schedule over the same micro-batches rounds at the same points (each micro-batch's
  // weight gradients on their own, summed in fp32 in micro-batch order): they agree with GPipe
  // to fp32's tolerance. Against the serial run, which rounds the whole batch's gradient once,
  // they agree to bf16's rounding, as dp2 does (tst_precision).
  void schedulesAgree_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("gpipe");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "mlp";
      QTest::addRow("%s pp2 1f1b", model) << gpt << "pp2 M4"
                                          << "pp2 M4 gpipe";
      QTest::addRow("%s pp4 1f1b", model) << gpt << "pp4 M4"
                                          << "pp4 M4 gpipe";
      QTest::addRow("%s pp2 zb-h1", model) << gpt << "pp2 M4 zb-h1"
                                           << "pp2 M4 gpipe";
      QTest::addRow("%s pp4 zb-h1", model) << gpt << "pp4 M4 zb-h1"
                                           << "pp4 M4 gpipe";
      QTest::addRow("%s pp2 interleaved", model) << gpt << "pp2 M4 interleaved"
                                                 << "pp2 M4 gpipe";
    }
  }
  void schedulesAgree() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    QFETCH(QString, gpipe);
    const RunConfig serial = modelRun(gpt, Dtype::Bf16), run = laidOut(serial, layout);
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(serial, kSteps), b = test::recordRun(run, kSteps),
                          g = test::recordRun(laidOut(serial, gpipe), kSteps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 pipeline vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters");
    VERIFY_TRAJECTORIES_AGREE(b.losses, g.losses, 1e-5, "bf16 schedule vs bf16 GPipe");
    VERIFY_PARAMETERS_AGREE(b.params, g.params, 1e-5, "final parameters, vs GPipe");
  }

  // Tensor, sequence and context parallelism sum partial results in another order than the
  // serial GEMM (over tp ranks, over the ring's key blocks), in fp32, and round the sum once
  // where it is kept; the ring's backward recomputes the probabilities in fp32 where the serial
  // run reads them rounded. Each agrees with its serial 16-bit run to the bound dp2 has.
  void layoutsAgreeWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "mlp";
      for (const char* layout : {"tp2", "tp2 sp", "tp2 sp tp-overlap", "tp2 pp2 dp2 M2",
                                 "tp2 pp2 dp2 M2 zero1", "tp2 pp2 dp2 M2 zero3"})
        QTest::addRow("%s %s", model, layout) << gpt << layout;
    }
    QTest::addRow("gpt cp2 ring") << true << "cp2";
    QTest::addRow("gpt cp2 ulysses") << true << "cp2 ulysses";
    QTest::addRow("gpt cp2 dp2 zero2") << true << "cp2 dp2 zero2";
  }
  void layoutsAgreeWithSerial() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    const RunConfig serial = modelRun(gpt, Dtype::Bf16), run = laidOut(serial, layout);
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(serial, kSteps), b = test::recordRun(run, kSteps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 layout vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters");
    // The rounding is real: the same layout in fp32 is another trajectory.
    RunConfig fp32 = run;
    fp32.precision = Dtype::Fp32;
    QVERIFY(test::recordRun(fp32, kSteps).params != b.params);
    QVERIFY2(allRepresentable(b.params), "parameters are 16-bit values");
  }

  // fp16 trains under a pipeline with the dynamic loss scale; an overflow anywhere skips the
  // step on every rank (one all-reduce of the finding over the world), leaving every rank's
  // parameters as they were, and every rank reports the same skipped steps and scale.
  void fp16PipelineSkipsTogether() {
    test::verifyScaleFollowsOverflows(laidOut(modelRun(false, Dtype::Fp16), "pp2 M4 dp2"), 40);
  }

  // A fixed scale large enough that gradients overflow: each step is skipped on every rank and
  // the parameters stay as they were. At 2^20 the second step's gradients overflow on the last
  // stage only (its classifier's are the largest), so the first stage skips it because the
  // world agreed, not because it overflowed itself; 1e30 overflows everywhere, over dp too.
  void fp16ForcedOverflow_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("scale");
    QTest::newRow("tp2 pp2, 2^20") << "tp2 pp2 M2"
                                   << "1048576";
    QTest::newRow("tp2 pp2 dp2 zero1, 1e30") << "tp2 pp2 dp2 M2 zero1"
                                             << "1e30";
  }
  void fp16ForcedOverflow() {
    QFETCH(QString, layout);
    QFETCH(QString, scale);
    test::verifyForcedOverflowSkips(laidOut(modelRun(false, Dtype::Fp16), layout),
                                    scale.toStdString());
  }

  // The model states each rank holds, to the byte, against Megatron-LM's accounting over the
  // rank's own parameters P_r (its stage's and tp slice's, measured by the same layout in
  // fp32): 2 + 4 + 4 + 8 = 18 bytes a parameter with Adam, and with ZeRO over the N replicas
  // (dp, or dp x cp) 6 + 12/N, 2 + 16/N, 18/N.
  void modelStatesPerRank_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<int>("zero");
    QTest::addColumn<int>("replicas");
    QTest::newRow("mlp tp2 pp2: 18") << false << "tp2 pp2 M2" << 0 << 1;
    for (int zero = 0; zero <= 3; ++zero)
      QTest::addRow("mlp tp2 pp2 dp2 zero-%d", zero) << false << "tp2 pp2 dp2 M2" << zero << 2;
    QTest::newRow("gpt pp2 cp2: 18") << true << "pp2 cp2 M2" << 0 << 2;
    QTest::newRow("moe ep2: 18") << false << "moe ep2" << 0 << 2;
  }
  void modelStatesPerRank() {
    QFETCH(bool, gpt);
    QFETCH(QString, layout);
    QFETCH(int, zero);
    QFETCH(int, replicas);
    RunConfig c = layout == "moe ep2" ? test::moeConfig(2, 2, 2)
                                      : laidOut(modelRun(gpt, Dtype::Bf16), layout);
    c.precision = Dtype::Bf16;
    c.optimizer = "adam";
    c.lr = 0.002;
    c.zero = zero;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    RunConfig whole = c;  // every rank's own parameters, unsharded, at 4 bytes
    whole.precision = Dtype::Fp32;
    whole.zero = 0;
    Trainer half(c), full(whole);
    half.step(), full.step();
    const StepMetrics h = half.step(), f = full.step();
    QCOMPARE(h.ranks.size(), f.ranks.size());
    for (size_t i = 0; i < h.ranks.size(); ++i) {
      const MemorySnapshot& m = h.ranks[i].mem;
      const int64_t P = f.ranks[i].mem[MemCategory::Params] / 4;
      const ModelStateBytes want =
          paralab::modelStatesPerRank(P, zero, 8, replicas, stateWidths(Dtype::Bf16));
      qInfo("rank %zu: P_r %lld, params %lld grads %lld master %lld optimizer %lld", i,
            (long long)P, (long long)m[MemCategory::Params], (long long)m[MemCategory::Grads],
            (long long)m[MemCategory::Master], (long long)m[MemCategory::Optimizer]);
      QCOMPARE(m[MemCategory::Params], int64_t(want.params));
      QCOMPARE(m[MemCategory::Grads], int64_t(want.grads));
      QCOMPARE(m[MemCategory::Master], int64_t(want.master));
      QCOMPARE(m[MemCategory::Optimizer], int64_t(want.optimizer));
      if (zero == 0) QCOMPARE(int64_t(want.total()), 18 * P);
    }
  }

  // 16-bit activations: every rank keeps fewer bytes than the same layout in fp32, and more
  // than half of them (the statistics, the logits and the kept gradients stay fp32).
  void activationsNarrower() {
    const RunConfig c = laidOut(modelRun(true, Dtype::Bf16), "tp2 pp2 M2 sp zb-h1");
    RunConfig fp32 = c;
    fp32.precision = Dtype::Fp32;
    Trainer half(c), full(fp32);
    const StepMetrics h = half.step(), f = full.step();
    for (size_t i = 0; i < h.ranks.size(); ++i) {
      const int64_t a16 = h.ranks[i].mem.peak[int(MemCategory::Activations)],
                    a32 = f.ranks[i].mem.peak[int(MemCategory::Activations)];
      QVERIFY2(a16 < a32 && 2 * a16 > a32,
               qPrintable(QString("rank %1: %2 of %3 bytes").arg(i).arg(a16).arg(a32)));
    }
  }

  // Expert parallelism: each rank rounds its experts' rows where the serial MoE layer does;
  // the tokens' rows travel as the 16-bit values they are, and the router's softmax stays
  // fp32. Its gradient sums over dp and expert-dp run in another order than the serial run's
  // (the bound dp2 has); a layer whose experts are all local is the serial layer.
  void expertsAgreeWithSerial_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("zero");
    for (const bool gpt : {false, true}) {
      const char* model = gpt ? "gpt" : "moe";
      QTest::addRow("%s ep2", model) << gpt << 2 << 2 << 0;
      QTest::addRow("%s dp4 ep2 zero-2", model) << gpt << 4 << 2 << 2;
    }
  }
  void expertsAgreeWithSerial() {
    QFETCH(bool, gpt);
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, zero);
    RunConfig serial = test::moeConfig(1, 1, 2);
    if (gpt) {
      const RunConfig g = modelRun(true, Dtype::Bf16);
      serial.model = ModelKind::Gpt, serial.ffn = Ffn::Moe;
      serial.hidden = g.hidden, serial.heads = g.heads, serial.seq = g.seq, serial.batch = g.batch;
    }
    serial.precision = Dtype::Bf16;
    RunConfig run = serial;
    run.ranks = ranks, run.ep = ep, run.zero = zero;
    QVERIFY2(!serial.validate(), serial.validate().value_or("").c_str());
    QVERIFY2(!run.validate(), run.validate().value_or("").c_str());
    const test::RunRecord a = test::recordRun(serial, kSteps), b = test::recordRun(run, kSteps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-2, "bf16 experts vs serial bf16");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 2e-2, "final parameters");
    QVERIFY2(allRepresentable(b.params), "parameters are 16-bit values");
    RunConfig fp32 = serial;
    fp32.precision = Dtype::Fp32;
    QVERIFY(test::recordRun(fp32, kSteps).params != a.params);
  }

  // What stays fp32 is refused in one line naming what trains in 16 bits; fp32 trains it.
  void refusals_data() {
    QTest::addColumn<QString>("change");
    QTest::newRow("local sgd") << "local-sgd";
    QTest::newRow("hogwild") << "hogwild";
  }
  void refusals() {
    QFETCH(QString, change);
    RunConfig c = modelRun(false, Dtype::Bf16);
    c.strategy = change.toStdString();
    c.ranks = 3;
    const std::string err = c.validate().value_or("");
    QVERIFY2(err.rfind("precision: bf16 trains serially and with --strategy sync (data, tensor, "
                       "sequence, pipeline, context and expert parallelism, ZeRO)",
                       0) == 0,
             err.c_str());
    QCOMPARE(std::count(err.begin(), err.end(), '\n'), 0);
    c.precision = Dtype::Fp32;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
  }

 private:
  static bool allRepresentable(const std::vector<float>& values) {
    std::vector<float> v = values;
    roundStored(Dtype::Bf16, v.data(), int64_t(v.size()));
    return v == values;
  }
};

QTEST_GUILESS_MAIN(TstPrecisionModelParallel)
#include "tst_precision_model_parallel.moc"
