// Ulysses (--cp-kind ulysses, parallel/context/ulysses_attention.h): an all-to-all turns each
// rank's sequence shard into a head shard before attention and back after. Checked here: the
// trajectory and parameters equal serial's under cp 2 and 4 (with tp, dp, ZeRO, contiguous
// chunks and recomputation); each rank's all-to-all bytes per layer equal their formula,
// beside the ring's bytes and formula on the same run; heads that do not divide by cp refused
// in one line naming the setting. Run: ctest -R tst_context_ulysses
#include <QtTest>

#include "comm/comm_accounting.h"
#include "json_lines.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// The tests' small GPT (T = 16, H = 16) with 4 heads, so that cp 4 splits them.
RunConfig gptRun(int batch) {
  RunConfig c = test::smallGptRun(batch);
  c.heads = 4;
  return c;
}

RunConfig ulysses(RunConfig c, const QString& layout) {
  c = test::withLayout(c, layout);
  c.cpKind = CpKind::Ulysses;
  return c;
}

// Bytes sent over links (the rank's own block of an all-to-all stays) and calls of `op` on the
// cp group in a rank's last step.
int64_t cpBytes(const CommTraffic& t, CommOp op, int64_t* calls) {
  int64_t bytes = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.op == op && o.group == "cp") bytes += o.sent, *calls += o.calls;
  return bytes;
}

}  // namespace

class TestContextUlysses : public QObject {
  Q_OBJECT

 private slots:
  // Parallel equals serial: 30 steps of Adam (1e-5 relative on every step's loss) and the
  // parameters after them (1e-5 of the largest), on the same global batch and seed.
  void matchesSerial_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"cp2", "cp4", "cp2 contiguous", "cp4 contiguous", "cp2 tp2",
                          "dp2 cp2 zero1", "cp2 full", "cp2 selective", "cp2 pp2 1f1b M2"})
      QTest::newRow(l) << QString(l);
  }
  void matchesSerial() {
    QFETCH(QString, layout);
    const RunConfig serial = gptRun(10);
    const RunConfig parallel = ulysses(serial, layout);
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "ulysses vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, ulysses vs serial");
    QVERIFY2(a.losses.back() < 0.8 * a.losses.front(), "the run should learn");
  }

  // Bytes per rank and step on the cp group, n = b s / N the rank's tokens (every micro-batch),
  // h = C / tp. Ulysses, per layer: forward an all-to-all of q | k | v (3 n h floats) and one
  // of the output (n h), each sending N − 1 of its N blocks; backward the same with dout and
  // dq | dk | dv: 8 (N − 1)/N n h floats in 4 all-to-alls (full recomputation: the forward's
  // two again). The ring on the same run: 6 (N − 1) n h floats (ring_attention.h).
  void bytesPerLayerBesideTheRing_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l : {"cp2", "cp4", "cp2 M2", "cp2 tp2", "cp4 contiguous", "cp2 full"})
      QTest::newRow(l) << QString(l);
  }
  void bytesPerLayerBesideTheRing() {
    QFETCH(QString, layout);
    const RunConfig c = ulysses(gptRun(8), layout);
    RunConfig ringRun = c;
    ringRun.cpKind = CpKind::Ring;
    Trainer u(c), ring(ringRun);
    for (Trainer* t : {&u, &ring}) t->step(), t->step();
    const int64_t N = c.cp, L = c.layers, M = c.microbatches, h = c.hidden / c.tp;
    const int64_t n = int64_t(c.globalBatch()) * c.seq / N;
    const int64_t forwards = c.recompute == Recompute::Full ? 2 : 1;
    const int64_t perLayer = (forwards + 1) * 4 * (N - 1) * (n / N) * h * 4;  // bytes
    const int64_t ringPerLayer = (forwards * 2 + 4) * (N - 1) * n * h * 4;
    for (int r = 0; r < u.localRankCount(); ++r) {
      int64_t calls = 0, ringSends = 0;
      QCOMPARE(cpBytes(u.lastTraffic(r), CommOp::AllToAll, &calls), L * perLayer);
      QCOMPARE(calls, L * M * (forwards + 1) * 2);
      QCOMPARE(cpBytes(ring.lastTraffic(r), CommOp::Send, &ringSends), L * ringPerLayer);
      QVERIFY(perLayer < ringPerLayer);
    }
    qInfo("%s: per layer and rank, ulysses %lld bytes, ring %lld bytes", qPrintable(layout),
          (long long)perLayer, (long long)ringPerLayer);
  }

  // Ulysses gives each cp rank whole heads: the heads a tensor-parallel rank computes must
  // divide by cp. Otherwise one line naming the setting, before any rank starts; the ring takes
  // the same layout.
  void headsNotDividingRefused() {
    RunConfig c = ulysses(gptRun(8), "cp4");
    c.heads = 2;
    const auto why = c.validate();
    QVERIFY(why);
    QVERIFY2(QString::fromStdString(*why).startsWith("cp-kind: ulysses splits the 2 heads"),
             why->c_str());
    QVERIFY(why->find('\n') == std::string::npos);
    c.cpKind = CpKind::Ring;
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    RunConfig tp = ulysses(gptRun(8), "cp4 tp2");  // 4 heads, 2 per tp rank, over cp 4
    QVERIFY(tp.validate() && tp.validate()->starts_with("cp-kind:"));

    // From the command line: the same line, exit 2; a word the table does not hold is named.
    const QStringList run = {"--model", "gpt",     "--dataset", "synthetic", "--steps",
                             "1",       "--ranks", "4",         "--cp",      "4",
                             "--heads", "2",       "--seq",     "16"};
    test::ProgramResult r =
        test::runProgram(PARALAB_RUN, run + QStringList{"--cp-kind", "ulysses"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.startsWith("paralab-run: cp-kind: ulysses splits the 2 heads"),
             qPrintable(r.err));
    r = test::runProgram(PARALAB_RUN, run + QStringList{"--cp-kind", "spiral"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("cp-kind") && r.err.contains("ring, ulysses"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestContextUlysses)
#include "tst_context_ulysses.moc"
