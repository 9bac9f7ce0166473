// bf16 arithmetic in training (model/layers.h: forwardGemmInBf16): a bf16 run on a CPU with AMX
// computes its forward weight GEMMs in kernels' gemm_bf16, only where both operands are bf16
// values; the same run with the bf16 GEMM off agrees to a stated bound, and fp32 and fp16 runs
// are untouched (its split over threads: tst_gemm_bf16). Run: ctest -R tst_precision_bf16_gemm
#include <QtTest>
#include <cmath>

#include "cpu/gemm.h"
#include "loss_trajectory.h"
#include "model/layers.h"

using namespace paralab;

namespace {

RunConfig mlpRun(Dtype d) {
  RunConfig c = test::smallRun(64, 2, 64);
  c.precision = d;
  return c;
}

// Wide enough (C = 64, 4C = 256, 128 rows a GEMM) that each GEMM spans several AMX tiles.
RunConfig gptRun(Dtype d) {
  RunConfig c = test::smallGptRun(8);
  c.hidden = 64;
  c.heads = 4;
  c.precision = d;
  return c;
}

RunConfig runOf(bool gpt, Dtype d) { return gpt ? gptRun(d) : mlpRun(d); }

bool amx() { return QString(kernels::gemm_bf16_isa()) == "amx"; }

const char* const kNoBf16Gemm =
    "the bf16 GEMM is off here (no AMX-BF16 granted, PARALAB_SIMD below avx512, or "
    "PARALAB_BF16_GEMM=off): bf16 runs keep the fp32 GEMM";

// A run with the bf16 GEMM on (AMX allowed) or off (AMX refused: gemm_bf16_for_training() is
// false, every GEMM the rank's fp32 one).
test::RunRecord recordWith(bool bf16Gemm, const RunConfig& c, int steps) {
  kernels::gemm_bf16_allow_amx(bf16Gemm);
  test::RunRecord r = test::recordRun(c, steps);
  kernels::gemm_bf16_allow_amx(true);
  return r;
}

}  // namespace

class TstPrecisionBf16Gemm : public QObject {
  Q_OBJECT
 private slots:
  void cleanup() {
    kernels::gemm_bf16_allow_amx(true);
    auditBf16Gemms(false);
  }

  // Off wherever AMX is not in use, and with PARALAB_BF16_GEMM=off (checked by the suite's
  // second registration, which sets it).
  void offWithoutAmx() {
    kernels::gemm_bf16_allow_amx(false);
    QVERIFY(!kernels::gemm_bf16_for_training());
    kernels::gemm_bf16_allow_amx(true);
    if (qEnvironmentVariable("PARALAB_BF16_GEMM") == "off")
      QVERIFY(!kernels::gemm_bf16_for_training());
    else
      QCOMPARE(kernels::gemm_bf16_for_training(), amx());
  }

  // Every GEMM routed to bf16 has two bf16 operands (rounding them is the identity), in every
  // forward of the run (recomputation's and evaluation's included); fp32 and fp16 route none.
  void routesOnlyBf16Operands_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    for (const bool gpt : {false, true})
      for (const Dtype d : {Dtype::Bf16, Dtype::Fp16, Dtype::Fp32})
        QTest::addRow("%s %s", gpt ? "gpt" : "mlp", nameOf(d).c_str()) << gpt << int(d) << "";
    QTest::addRow("gpt bf16 dp2 zero-3") << true << int(Dtype::Bf16) << "dp2 zero-3";
    QTest::addRow("gpt bf16 tp2") << true << int(Dtype::Bf16) << "tp2";
    QTest::addRow("gpt bf16 pp2 recompute") << true << int(Dtype::Bf16) << "pp2 recompute";
    QTest::addRow("moe bf16 ep2") << false << int(Dtype::Bf16) << "moe ep2";
  }
  void routesOnlyBf16Operands() {
    if (!kernels::gemm_bf16_for_training())
      QSKIP(kNoBf16Gemm);
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    RunConfig c = runOf(gpt, Dtype(dtype));
    if (layout == "dp2 zero-3") {
      c.dp = 2;
      c.zero = 3;
      c.deriveRanks();
    } else if (layout == "tp2") {
      c.tp = 2;
      c.deriveRanks();
    } else if (layout == "pp2 recompute") {
      c.pp = 2;
      c.microbatches = 2;
      c.recompute = Recompute::Full;
      c.deriveRanks();
    } else if (layout == "moe ep2") {
      c.model = ModelKind::Moe;
      c.experts = 4;
      c.topk = 2;
      c.capacityFactor = 4.0;
      c.ranks = 2;
      c.ep = 2;  // as moe_runs.h's moeConfig
    }
    c.evalEvery = 3;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    auditBf16Gemms(true);
    test::recordRun(c, 4);
    const Bf16GemmAudit a = bf16GemmAudit();
    auditBf16Gemms(false);
    qInfo("routed %lld, inexact %lld", (long long)a.routed, (long long)a.inexact);
    QCOMPARE(a.inexact, int64_t(0));
    if (Dtype(dtype) == Dtype::Bf16)
      QVERIFY2(a.routed > 0, "a bf16 run's forward GEMMs run in bf16");
    else
      QCOMPARE(a.routed, int64_t(0));
  }

  // The bf16 GEMM on against off. Each product of two bf16 values is exact in fp32 (8 + 8
  // significant bits), so a GEMM's two results differ only by the order of its fp32 sums:
  // |d| <= 2 gamma_K sum |x w|, gamma_K ~ K 2^-24 (tst_gemm_bf16's bound), about 1e-5 of the
  // sums at K = 256. Where a result is then stored in bf16, that difference moves some values
  // across a rounding boundary, one bf16 step (2^-8 relative) apart: from then on the runs
  // differ as two bf16 runs whose rounding points fall differently do, as a data-parallel bf16
  // run and its serial run (tst_precision: 1e-2 in loss, 2e-2 in parameters). The first step's
  // loss, before any update, differs by those flips alone, well below 1e-3.
  void onAgreesWithOff_data() {
    QTest::addColumn<bool>("gpt");
    QTest::newRow("mlp") << false;
    QTest::newRow("gpt") << true;
  }
  void onAgreesWithOff() {
    if (!kernels::gemm_bf16_for_training())
      QSKIP(kNoBf16Gemm);
    QFETCH(bool, gpt);
    const RunConfig c = runOf(gpt, Dtype::Bf16);
    const int steps = gpt ? 15 : 30;
    const test::RunRecord on = recordWith(true, c, steps), off = recordWith(false, c, steps);
    qInfo("first step %.3g, loss %.3g, params %.3g",
          std::abs(on.losses[0] - off.losses[0]) / off.losses[0],
          test::worstRelativeDifference(on.losses, off.losses, 1),
          test::worstParameterDifference(on.params, off.params));
    QVERIFY(std::abs(on.losses[0] - off.losses[0]) <= 1e-3 * off.losses[0]);
    VERIFY_TRAJECTORIES_AGREE(on.losses, off.losses, 1e-2, "bf16 GEMM on vs off");
    VERIFY_PARAMETERS_AGREE(on.params, off.params, 2e-2, "final parameters");
  }

  // fp32 and fp16 runs never use it: with AMX allowed or not, the same bits.
  void otherPrecisionsUnchanged_data() {
    QTest::addColumn<bool>("gpt");
    QTest::addColumn<int>("dtype");
    for (const bool gpt : {false, true})
      for (const Dtype d : {Dtype::Fp32, Dtype::Fp16})
        QTest::addRow("%s %s", gpt ? "gpt" : "mlp", nameOf(d).c_str()) << gpt << int(d);
  }
  void otherPrecisionsUnchanged() {
    QFETCH(bool, gpt);
    QFETCH(int, dtype);
    const RunConfig c = runOf(gpt, Dtype(dtype));
    const test::RunRecord on = recordWith(true, c, 8), off = recordWith(false, c, 8);
    QCOMPARE(on.losses, off.losses);
    QVERIFY(on.params == off.params);
  }
};

QTEST_GUILESS_MAIN(TstPrecisionBf16Gemm)
#include "tst_precision_bf16_gemm.moc"
