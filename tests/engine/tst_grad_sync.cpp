// One gradient synchronisation (engine/parallel/data/grad_sync.h) wherever there is a data-parallel
// dimension: ZeRO-1/2/3 and the all-reduce (per tensor, bucketed with overlap) inside tensor x
// pipeline layouts and with the mixture of experts, each against the serial run on the same
// global batch and seed (loss trajectory 1e-5 relative, and the final parameters); model states
// per rank against the ZeRO formulas (and exactly, from the shard layout); ZeRO's dp traffic in
// a pipeline; what every rank holds; evaluation and live reconfiguration through them.
// Run: ctest -R tst_grad_sync
#include <QtTest>
#include <map>

#include "layout_spec.h"
#include "loss_trajectory.h"
#include "model/moe.h"
#include "moe_runs.h"
#include "parallel/data/replica.h"  // shardBegin
#include "parallel/data/zero.h"
#include "parallel/data/zero_policy.h"
#include "parallel/process_grid.h"
#include "tiles.h"
#include "train/trainer.h"
#include "zero_formula.h"

using namespace paralab;

namespace {

// tst_model_parallel's run.
RunConfig baseConfig() { return test::smallRun(32, 4, 48); }
RunConfig parse(const QString& spec) { return test::withLayout(baseConfig(), spec); }

// tst_moe's run (moe_runs.h) with a ZeRO stage or a --dp-version.
RunConfig moeRun(int ranks, int ep, const QString& sync, bool adam = false) {
  RunConfig c = test::moeConfig(ranks, ep, 2);
  if (sync.startsWith("zero"))
    c.zero = sync.mid(4).toInt();
  else if (!sync.isEmpty())
    c.dpVersion = *fromName<DpVersion>(sync.toStdString());
  c.bucketMb = 0.02;  // several buckets per group
  if (adam) c.optimizer = "adam", c.lr = 0.002;
  return c;
}

// The ZeRO layout GradSync makes on world rank `rank` of a model-parallel run: its stage's units
// and tensor-parallel slice (as model_parallel.cpp cuts them) over the dp group.
ZeroLayout modelParallelLayout(const RunConfig& c, int rank) {
  const GridShape grid{c.dpDegree(), c.tp, c.pp};
  const GridCoords at = ProcessGrid::coordsOf(grid, rank);
  const int L = c.layers, P = c.pp, s = at.pp;
  MlpShape shape;
  shape.hidden = c.hidden, shape.layers = L;
  const Mlp shard(shape, c.seed, nullptr,
                  {at.tp, c.tp, s == 0 ? 0 : int(shardBegin(s, P, L)) + 1,
                   s == P - 1 ? L + 1 : int(shardBegin(s + 1, P, L))},
                  false);
  return ZeroLayout(shard.params(), grid.dp);
}

// The same for an MoE run: dense weights over dp, this rank's experts over expert-dp.
ZeroLayout moeLayout(const RunConfig& c, int rank) {
  const int dp = c.ranks, ep = c.ep;
  MoeShape s;
  s.hidden = c.hidden, s.layers = c.layers, s.experts = c.experts, s.topk = c.topk;
  Moe shard(s, c.seed, nullptr, {ep, ProcessGrid::coordsOf({dp, 1, 1, ep}, rank).ep});
  std::vector<SyncRange> ranges;
  for (auto [b, e] : shard.denseRanges()) ranges.push_back({b, e, 0, ""});
  for (auto [b, e] : shard.expertRanges()) ranges.push_back({b, e, 1, ".experts"});
  return ZeroLayout(shard.params(), ranges, {dp, dp / ep});
}

// Bytes of one rank's model states, exactly, from its layout (Adam: 2 moments); and floats of
// each group's share (group 0 dense or the whole shard, group 1 the experts).
int64_t exactModelStates(int stage, const ZeroLayout& l) {
  const int64_t full = 4 * l.paddedNumel, shard = 4 * l.shardNumel;
  return (stage < 3 ? full : shard) + (stage < 2 ? full : shard) + 2 * shard;
}
double formulaModelStates(int stage, const ZeroLayout& l, const std::vector<int>& groupSizes) {
  std::vector<double> floats(groupSizes.size(), 0.0);
  for (const ZeroLayout::Unit& u : l.units) floats[size_t(u.group)] += double(u.len);
  double bytes = 0;
  for (size_t g = 0; g < floats.size(); ++g)
    bytes += test::zeroFormulaBytes(stage, groupSizes[g], floats[g]);
  return bytes;
}

// The same from the policy GradSync follows (zero_policy.h), Adam's K = 8.
double policyModelStates(int stage, const ZeroLayout& l, const std::vector<int>& groupSizes) {
  std::vector<double> floats(groupSizes.size(), 0.0);
  for (const ZeroLayout::Unit& u : l.units) floats[size_t(u.group)] += double(u.len);
  double bytes = 0;
  for (size_t g = 0; g < floats.size(); ++g)
    bytes += zeroPolicy(ZeroStage(stage)).bytesPerRank(floats[g], groupSizes[g], 8).total();
  return bytes;
}

// Bytes a rank sent in the last step on the group named `group`.
int64_t sentOn(const CommTraffic& t, const std::string& group) {
  int64_t sent = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.group == group) sent += o.sent;
  return sent;
}

// The ZeRO stage a spec names ("... zero2 ...").
int stageOf(const QString& spec) { return spec.section("zero", 1).left(1).toInt(); }

using test::tiles;

}  // namespace

class TstGradSync : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] Equal to serial: 30 steps, loss within 1e-5 relative at every step, and the final
  // parameters (gathered through saveState) within 1e-5 of the largest. The model-parallel
  // layouts with each sync are rows of tst_model_parallel's modelParallelMatchesSerial.
  // The MoE: ep 2 (dense weights over 2 replicas, each expert once) and dp 2 x ep 2 (each
  // expert twice: ZeRO shards it over expert-dp). No token dropped (capacity factor 4).
  void moeMatchesSerial_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("sync");
    for (int ranks : {2, 4})
      for (const char* sync : {"zero1", "zero2", "zero3", "per-tensor", "bucket"})
        QTest::addRow("ep2 x%d %s", ranks, sync) << ranks << QString(sync);
  }
  void moeMatchesSerial() {
    QFETCH(int, ranks);
    QFETCH(QString, sync);
    const RunConfig parallel = moeRun(ranks, 2, sync), serial = moeRun(1, 1, "");
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "moe " + sync + " vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "moe " + sync + " vs serial");
    QVERIFY2(a.losses.back() < 0.8 * a.losses.front(), "the run should learn");
  }

  // [SECTION] Model states per rank, Adam, from the tracking allocator: the shard layout's
  // figures exactly, and the lesson's formula over each group within 5% (padding: at most N-1
  // floats per unit). The full-size gradient staging and stage 3's gathered unit are Comm, gone
  // by the end of the step.
  void modelStatesMatchFormula_data() {
    QTest::addColumn<QString>("spec");  // a model-parallel layout, or "moe xR"
    for (const char* zero : {"zero1", "zero2", "zero3"}) {
      for (const char* layout : {"dp2 tp2", "dp2 pp2 M2", "dp2 tp2 pp2 M2", "dp4 pp2 M2"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(layout, zero)))
            << QString("%1 %2 adam").arg(layout, zero);
      for (const char* moe : {"moe x2", "moe x4"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(moe, zero)))
            << QString("%1 %2").arg(moe, zero);
    }
  }
  void modelStatesMatchFormula() {
    QFETCH(QString, spec);
    const bool moe = spec.startsWith("moe");
    const int stage = stageOf(spec);
    const RunConfig c =
        moe ? moeRun(spec.section(' ', 1, 1).mid(1).toInt(), 2, spec.section(' ', 2, 2), true)
            : parse(spec);
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    for (const RankMetrics& r : m.ranks) {
      const ZeroLayout l = moe ? moeLayout(c, r.rank) : modelParallelLayout(c, r.rank);
      const std::vector<int> groups =
          moe ? std::vector<int>{c.ranks, c.ranks / c.ep} : std::vector<int>{c.dpDegree()};
      const int64_t got = test::modelStates(r.mem);
      const double formula = formulaModelStates(stage, l, groups);
      qInfo(
          "rank %d: params %lld + grads %lld + optimizer %lld = %lld bytes; formula %.0f; "
          "comm peak %lld",
          r.rank, (long long)r.mem[MemCategory::Params], (long long)r.mem[MemCategory::Grads],
          (long long)r.mem[MemCategory::Optimizer], (long long)got, formula,
          (long long)r.mem.peak[int(MemCategory::Comm)]);
      QCOMPARE(got, exactModelStates(stage, l));
      QVERIFY(std::abs(policyModelStates(stage, l, groups) - formula) <= 1e-9 * formula);
      QCOMPARE(r.mem[MemCategory::Optimizer], 8 * l.shardNumel);
      QVERIFY2(
          std::abs(double(got) - formula) <= 0.05 * formula,
          qPrintable(QString("rank %1: %2 bytes, formula %3").arg(r.rank).arg(got).arg(formula)));
      if (stage >= 2) QCOMPARE(r.mem[MemCategory::Comm], int64_t(0));
    }
  }

  // [SECTION] ZeRO's bytes on the dp group per rank per step, from the communicator: per unit
  // (N-1)/N x its padded bytes per reduce-scatter or all-gather. A step of M micro-batches
  // reduce-scatters once (stage 1) or once per micro-batch (stages 2-3), all-gathers the updated
  // parameters once (stages 1-2) or each unit before every forward and backward (3: 2M).
  void pipelineTrafficMatchesFormula_data() {
    QTest::addColumn<QString>("spec");
    for (const char* zero : {"zero1", "zero2", "zero3"})
      for (const char* layout : {"dp2 tp2", "dp2 pp2 M3", "dp4 pp2 M2"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(layout, zero)))
            << QString("%1 %2").arg(layout, zero);
  }
  void pipelineTrafficMatchesFormula() {
    QFETCH(QString, spec);
    const RunConfig c = parse(spec);
    Trainer t(c);
    t.step();
    t.step();
    const int64_t M = c.microbatches, N = c.dpDegree();
    const int64_t collectives = c.zero == 1 ? 2 : c.zero == 2 ? M + 1 : 3 * M;
    // The policy the synchronisation follows says the same (its row is what a lesson reads).
    QCOMPARE(int64_t(zeroPolicy(ZeroStage(c.zero)).ringHalves(int(M))), collectives);
    for (int r = 0; r < t.localRankCount(); ++r) {
      const ZeroLayout l = modelParallelLayout(c, t.rankOfLocal(r));
      const int64_t got = sentOn(t.lastTraffic(r), "dp");
      const int64_t formula = collectives * (N - 1) * 4 * l.shardNumel;
      if (r == 0)
        qInfo("%s: %lld bytes sent on dp per rank per step = %lld collectives x (N-1) x 4 x %lld",
              qPrintable(spec), (long long)got, (long long)collectives, (long long)l.shardNumel);
      QCOMPARE(got, formula);
    }
  }

  // [SECTION] What every rank holds: ZeRO-3 keeps no weight whole; the chunks of each unit's
  // parameters, gradients and optimizer state tile it over the group that sums it (dp, or for
  // the MoE's experts expert-dp).
  void shardsTileEachUnit_data() {
    QTest::addColumn<QString>("spec");
    QTest::newRow("dp2 tp2 pp2 zero3") << "dp2 tp2 pp2 M2 zero3 adam";
    QTest::newRow("dp2 pp2 zero2") << "dp2 pp2 M2 zero2 adam";
    QTest::newRow("moe x4 zero3") << "moe x4 zero3";
    QTest::newRow("moe x4 zero2") << "moe x4 zero2";
  }
  void shardsTileEachUnit() {
    QFETCH(QString, spec);
    const bool moe = spec.startsWith("moe");
    const int stage = stageOf(spec);
    const RunConfig c = moe ? moeRun(4, 2, "zero" + QString::number(stage), true) : parse(spec);
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    int checked = 0;
    for (const RankHoldings& h : held) {
      for (const HeldSlice& s : h.items) {
        const bool flat = s.tensor.ends_with(" (flat)");
        if (s.kind == HoldingKind::Params) QCOMPARE(flat, stage == 3);
        if (s.kind == HoldingKind::Grads) QCOMPARE(flat, stage >= 2);
        if (!flat) continue;
        // The group that sums this unit, and what its members hold of it.
        const std::string name =
            s.tensor.find(".experts") != std::string::npos ? "expert-dp" : "dp";
        const auto g = std::find_if(h.groups.begin(), h.groups.end(),
                                    [&](const HeldGroup& x) { return x.name == name; });
        QVERIFY(g != h.groups.end());
        std::vector<std::pair<int64_t, int64_t>> parts;
        for (int member : g->worldRanks)
          for (const HeldSlice& x : held[size_t(member)].items)
            if (x.tensor == s.tensor && x.kind == s.kind) parts.push_back({x.begin, x.end});
        QCOMPARE(int(parts.size()), int(g->worldRanks.size()));
        QVERIFY2(tiles(parts, s.total), s.tensor.c_str());
        QCOMPARE(s.bytes, s.rows * s.cols * 4);
        ++checked;
      }
    }
    QVERIFY(checked > 0);
  }

  // [SECTION] Evaluation gathers ZeRO-3's shards (a collective) and frees them: the serial
  // run's accuracy on the same weights.
  void evaluationMatchesSerial_data() {
    QTest::addColumn<QString>("spec");
    QTest::newRow("dp2 tp2 pp2 zero3") << "dp2 tp2 pp2 M2 zero3";
    QTest::newRow("moe x4 zero3") << "moe x4 zero3";
  }
  void evaluationMatchesSerial() {
    QFETCH(QString, spec);
    const bool moe = spec.startsWith("moe");
    Trainer serial(moe ? moeRun(1, 1, "") : baseConfig()),
        sharded(moe ? moeRun(4, 2, "zero3") : parse(spec));
    for (int s = 0; s < 15; ++s) serial.step(), sharded.step();
    const MemorySnapshot before = sharded.memory(0).snapshot();
    const double a = serial.evaluate(500), b = sharded.evaluate(500);
    qInfo("test accuracy: serial %.4f, %s %.4f", a, qPrintable(spec), b);
    QVERIFY(a > 0.3);
    QVERIFY(std::abs(a - b) <= 2.0 / 500);
    QCOMPARE(sharded.memory(0).snapshot()[MemCategory::Comm], before[MemCategory::Comm]);
    const double ls = serial.step().loss, lz = sharded.step().loss;  // training goes on
    QVERIFY2(std::abs(ls - lz) <= 1e-5 * ls, qPrintable(QString("%1 vs %2").arg(ls).arg(lz)));
  }

  // [SECTION] Live reconfiguration through the new layouts: the state leaves one layout's shards
  // and enters the next's, and the loss goes on along the uninterrupted serial run's.
  void reconfigureContinuesTheTrajectory_data() {
    QTest::addColumn<QStringList>("layouts");
    QTest::newRow("serial -> dp2 tp2 pp2 zero3 -> dp2 pp2 zero2 -> tp2 -> serial")
        << QStringList{"dp2 tp2 pp2 M2 zero3 adam", "dp2 pp2 M2 zero2 adam", "tp2 adam", "adam"};
    QTest::newRow("moe: serial -> ep2 x4 zero3 -> ep2 x2 zero2 -> ep2 x4 per-tensor -> serial")
        << QStringList{"moe 4 zero3", "moe 2 zero2", "moe 4 per-tensor", "moe 1 -"};
  }
  void reconfigureContinuesTheTrajectory() {
    QFETCH(QStringList, layouts);
    auto configOf = [](const QString& spec) {
      if (!spec.startsWith("moe")) return parse(spec);
      const int ranks = spec.section(' ', 1, 1).toInt();
      const QString sync = spec.section(' ', 2, 2);  // "-": the defaults
      return moeRun(ranks, ranks > 1 ? 2 : 1, sync == "-" ? QString() : sync, true);
    };
    const RunConfig first = configOf(layouts.back());
    const int per = 6;
    const test::RunRecord ref = test::recordRun(first, per * int(layouts.size() + 1));
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(first);
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (const QString& layout : layouts) {
      const TrainingState state = trainer->saveState();
      trainer = std::make_unique<Trainer>(configOf(layout));
      trainer->loadState(state);
      const TrainingState back = trainer->saveState();  // loading took every float, in place
      QVERIFY2(back.params == state.params && back.optM == state.optM && back.optV == state.optV,
               qPrintable("the state changed on its way into " + layout));
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref.losses, 1e-5, "against the uninterrupted run");
    VERIFY_PARAMETERS_AGREE(trainer->saveState().params, ref.params, 1e-5,
                            "final parameters against the uninterrupted run");
  }
};

QTEST_GUILESS_MAIN(TstGradSync)
#include "tst_grad_sync.moc"
