// Overlapped tensor parallelism (--tp-overlap, parallel/tensor/tp_overlap.cpp): the MLP and the
// GPT with each tp exchange cut into ring steps beside its GEMM follow the serial run, it is
// refused where there is nothing to cut, and over an emulated link the overlap meter sees less
// of the tp communication exposed than without it. Run: ctest -R tst_tp_overlap
#include <QtTest>

#include "layout_spec.h"
#include "loss_trajectory.h"
#include "overlap_run.h"
#include "metrics/overlap.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig mlpRun() { return test::smallRun(32, 2, 16); }

RunConfig gptRun() {
  RunConfig c = test::smallGptRun(8);
  c.heads = 4;  // tp 4 splits the heads
  return c;
}

RunConfig overlapped(RunConfig c, const QString& layout) {
  c = test::withLayout(c, layout);
  c.tpOverlap = true;
  return c;
}

}  // namespace

class TestTpOverlap : public QObject {
  Q_OBJECT

 private slots:
  // The same sums in another order: 30 steps within 1e-5 of the serial run's losses, and the
  // final parameters within 1e-5 of the largest.
  void equalsSerial_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("layout");
    for (const char* l : {"tp2 sp", "tp4 sp", "tp2 sp M2", "tp2 pp2 sp 1f1b M2"})
      QTest::addRow("mlp %s", l) << "mlp" << l;
    for (const char* l : {"tp2 sp", "tp4 sp", "tp2 sp full", "dp2 tp2 sp zero1"})
      QTest::addRow("gpt %s", l) << "gpt" << l;
  }
  void equalsSerial() {
    QFETCH(QString, model);
    QFETCH(QString, layout);
    const RunConfig serial = model == "gpt" ? gptRun() : mlpRun();
    const RunConfig parallel = overlapped(serial, layout);
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "tp overlap vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, tp overlap vs serial");
  }

  // Nothing to cut without sequence parallelism's all-gathers and reduce-scatters, or without a
  // tp group: one line naming the setting.
  void refusedWithoutSequenceParallelism_data() {
    QTest::addColumn<QString>("layout");
    QTest::newRow("tp 2 without sp") << "tp2";
    QTest::newRow("tp 1") << "dp2";
  }
  void refusedWithoutSequenceParallelism() {
    QFETCH(QString, layout);
    const auto why = overlapped(mlpRun(), layout).validate();
    QVERIFY(why);
    QVERIFY2(why->starts_with("tp-overlap: ") && why->find("--sp") != std::string::npos &&
                 why->find('\n') == std::string::npos,
             why->c_str());
  }

  // The ring's messages replace the pair's collectives with the same bytes: per block and
  // micro-batch four exchanges each way (forward: all-gather before qkv and fc1, reduce-scatter
  // after proj and fc2; backward the mirror), each T - 1 messages of the rank's B s / T rows of
  // C floats; no reduce-scatter is left on the tp group.
  void ringCarriesTheExchanges_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"tp2 sp", "tp4 sp", "tp2 sp M2"}) QTest::newRow(l) << QString(l);
  }
  void ringCarriesTheExchanges() {
    QFETCH(QString, layout);
    const RunConfig c = overlapped(gptRun(), layout);
    Trainer t(c);
    t.step();
    t.step();
    const int64_t L = c.layers, M = c.microbatches, C = c.hidden, T = c.tp;
    const int64_t rowBytes = int64_t(c.globalBatch()) * c.seq * C * 4;  // every token x C, fp32
    for (int r = 0; r < t.localRankCount(); ++r) {
      int64_t sends = 0, sendBytes = 0, scatters = 0;
      for (const CommOpTotals& o : t.lastTraffic(r).ops) {
        if (o.group != "tp") continue;
        if (o.op == CommOp::Send) sends += o.calls, sendBytes += o.bytes;
        if (o.op == CommOp::ReduceScatter) scatters += o.calls;
      }
      QCOMPARE(sends, 8 * L * M * (T - 1));
      QCOMPARE(sendBytes, 8 * L * (T - 1) * rowBytes / T);
      QCOMPARE(scatters, int64_t(0));
    }
  }

  // Over an emulated 10 GbE link. Whole, each tp collective runs on the rank's own thread
  // between its GEMMs, so none of it is under compute: all of the communication is exposed.
  // Cut into ring steps, a block is on its way while the next one computes: the meter finds a
  // part of the communication hidden, so a smaller fraction of it exposed (tp is the only group
  // here, so all of it is tp communication). Fractions, not times: the waits for the other rank
  // vary with the machine's load.
  void hidesTensorParallelCommunication() {
    RunConfig plain = test::withLayout(test::smallRun(256, 2, 64), "tp2 sp");
    plain.link = "ethernet";
    RunConfig cut = plain;
    cut.tpOverlap = true;
    const OverlapMeter a = test::meterOverSteps(plain, 3), b = test::meterOverSteps(cut, 3);
    QVERIFY(a.commMs > 0 && b.commMs > 0);
    const auto exposedFraction = [](const OverlapMeter& m) { return m.exposedMs / m.commMs; };
    qInfo("exposed fraction of the tp communication: %.3f without, %.3f with --tp-overlap",
          exposedFraction(a), exposedFraction(b));
    QCOMPARE(a.hiddenMs, 0.0);
    QVERIFY(b.hiddenMs > 0);
    QVERIFY(exposedFraction(b) < exposedFraction(a));
  }
};

QTEST_GUILESS_MAIN(TestTpOverlap)
#include "tst_tp_overlap.moc"
