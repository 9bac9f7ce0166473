// The mixture-of-experts run as the window and a saved run see it (--model moe --ep G): the JSON
// line's token counts, evaluation before the first step and outside the steps' spans, model
// states per rank against the formula, the holdings map's expert shards, the saved state in the
// serial layout, live reconfiguration between ranks and ep degrees, and the config's refusals.
// Run: ctest -R tst_moe_states
#include <QtTest>
#include <map>
#include <nlohmann/json.hpp>

#include "loss_trajectory.h"
#include "metrics/metrics.h"
#include "model/moe.h"
#include "moe_runs.h"
#include "parallel/holdings.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

using test::moeConfig;
std::vector<StepMetrics> run(const RunConfig& c, int steps) { return test::runSteps(c, steps); }

}  // namespace

class TstMoeStates : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The JSON line carries the token counts; evaluation matches serial.
  void jsonCarriesTokenCounts() {
    RunConfig c = moeConfig(4, 2, 2);
    c.capacityFactor = 1.0;
    c.evalEvery = 20;
    c.evalSamples = 500;
    c.steps = 20;
    RunConfig sc = c;
    sc.ranks = 1, sc.ep = 1;
    const auto ms = run(c, 20), ss = run(sc, 20);
    const nlohmann::json j = toJson(ms.back());
    QVERIFY(j.contains("expert_tokens") && j.contains("dropped_tokens") && j.contains("aux_loss"));
    QCOMPARE(int(j["expert_tokens"].size()), c.layers);
    int64_t routed = 0, processed = 0;
    for (const auto& block : j["expert_tokens"]) {
      QCOMPARE(int(block.size()), c.experts);
      int64_t perBlock = 0;
      for (const auto& n : block) perBlock += n.get<int64_t>();
      QCOMPARE(perBlock, int64_t(c.batch) * c.topk);  // every token makes k choices
      routed += perBlock;
    }
    for (const auto& r : j["ranks"]) processed += r["tokens"].get<int64_t>();
    QCOMPARE(processed, routed - j["dropped_tokens"].get<int64_t>());
    QVERIFY(ms.back().testAccuracy && ss.back().testAccuracy);
    qInfo("%s", j["expert_tokens"].dump().c_str());
    qInfo("test accuracy: serial %.4f, ep %.4f", *ss.back().testAccuracy, *ms.back().testAccuracy);
    QVERIFY(*ss.back().testAccuracy > 0.3);  // it learned something to compare
    QVERIFY(std::abs(*ss.back().testAccuracy - *ms.back().testAccuracy) <= 2.0 / 500);
    RunConfig dense;  // the dense model's line stays as it was
    dense.dataset = "synthetic", dense.hidden = 16, dense.evalEvery = 0;
    Trainer mlp(dense);
    const nlohmann::json d = toJson(mlp.step());
    QVERIFY(!d.contains("expert_tokens") && !d["ranks"][0].contains("tokens"));
  }

  // Evaluation before any step: rank 0 classifies while the other ranks take part with no
  // rows of their own (they build their buffers for zero rows); the same fresh model, so the
  // same accuracy as the serial MoE's.
  void evaluationBeforeTheFirstStep() {
    Trainer serial(moeConfig(1, 1, 2)), spread(moeConfig(4, 2, 2));
    const double a = serial.evaluate(200), b = spread.evaluate(200);
    qInfo("accuracy of the untrained model: serial %.3f, ep 2 x dp 2 %.3f", a, b);
    QCOMPARE(b, a);
  }

  // Evaluation's collectives (every EP rank runs its experts on rank 0's rows) belong to no
  // step: a step's timeline and spans are the same with or without an evaluation after it.
  void evaluationStaysOutOfTheStepsSpans() {
    RunConfig quiet = moeConfig(2, 2, 2);
    quiet.evalEvery = 0;
    RunConfig evaluating = quiet;
    evaluating.evalEvery = 1;
    evaluating.evalSamples = 64;
    auto commSpans = [](const RunConfig& c, bool* stepsOnly) {
      Trainer t(c);
      t.step();
      t.step();
      int n = 0;
      for (const Span& s : t.spans(0).since(1))
        if (s.kind == SpanKind::Comm) {
          *stepsOnly = *stepsOnly && (s.step == 1 || s.step == 2);
          ++n;
        }
      return n;
    };
    bool stepsOnly = true;
    const int a = commSpans(quiet, &stepsOnly), b = commSpans(evaluating, &stepsOnly);
    QVERIFY2(stepsOnly, "every span since step 1 is a step's");
    QVERIFY(a > 0);
    QCOMPARE(b, a);
  }

  // Model states per rank: the dense weights whole, E/ep experts per block (momentum: 12 bytes
  // per parameter held, params + grads + optimizer).
  void modelStatesMatchFormula_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::newRow("serial") << 1 << 1;
    QTest::newRow("ep=2 dp=2") << 2 << 2;
    QTest::newRow("ep=4 dp=4") << 4 << 4;
    QTest::newRow("ep=2 dp=4") << 4 << 2;
  }
  void modelStatesMatchFormula() {
    QFETCH(int, ranks);
    QFETCH(int, ep);
    const RunConfig c = moeConfig(ranks, ep, 2);
    Trainer t(c);
    const StepMetrics m = t.step();
    const auto [expert, dense, held] = test::moeHeld(c, ep);
    for (const RankMetrics& r : m.ranks) {
      QCOMPARE(r.mem[MemCategory::Params], 4 * held);
      QCOMPARE(r.mem[MemCategory::Grads], 4 * held);
      QCOMPARE(r.mem[MemCategory::Optimizer], 4 * held);
    }
    qInfo("%d ranks, ep %d: %lld parameters per rank (dense %lld + %d x %d experts x %lld)", ranks,
          ep, (long long)held, (long long)dense, c.layers, c.experts / ep, (long long)expert);
  }

  // The window's map: each rank of an EP group holds its E/ep experts, the group holds them all.
  void holdingsShowTheExpertShards() {
    RunConfig c = moeConfig(4, 2, 1);
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> held = t.holdings();
    QCOMPARE(int(held.size()), 4);
    for (int group = 0; group < 2; ++group) {
      std::map<std::string, int> experts;  // "block0.expert3.fc1.weight" -> holders in the group
      for (const RankHoldings& h : held) {
        if (h.coords.epGroup != group) continue;
        int mine = 0;
        for (const HeldSlice& s : h.items)
          if (s.kind == HoldingKind::Params && s.tensor.find(".expert") != std::string::npos)
            ++experts[s.tensor], ++mine;
        QCOMPARE(mine, c.layers * (c.experts / c.ep) * 4);  // fc1, fc2: weight and bias
        QCOMPARE(int(h.groups.size()), 3);                  // dp, ep, expert-dp
      }
      QCOMPARE(int(experts.size()), c.layers * c.experts * 4);
      for (const auto& [name, holders] : experts) QVERIFY2(holders == 1, name.c_str());
    }
  }

  // [SECTION] Live reconfiguration: the state travels through the serial layout (every expert
  // of a block at its serial place), so a run may change ranks and ep between steps and go on.
  // Before any step, every layout's saved state is the serial model's, bit for bit (the shards
  // build the serial weights, and saving only copies and adds zeros).
  void savedStateIsTheSerialLayout() {
    const TrainingState serial = Trainer(moeConfig(1, 1, 2)).saveState();
    for (auto [ranks, ep] : {std::pair{2, 2}, {4, 2}, {4, 4}, {2, 1}}) {
      RunConfig c = moeConfig(ranks, ep, 2);
      c.optimizer = "adam";
      const TrainingState s = Trainer(c).saveState();
      QVERIFY2(s.params == serial.params, qPrintable(QString("ranks %1 ep %2").arg(ranks).arg(ep)));
      QCOMPARE(s.optM.size(), s.params.size());  // Adam: both moments, zero so far
      QCOMPARE(s.optV.size(), s.params.size());
    }
  }

  // Reconfigured mid-run, the loss goes on along the uninterrupted serial trajectory. Tolerance
  // 1e-5 relative, as matchesSerial: the state moves exactly (a reload saves back the same bits),
  // so what differs is only the order in which the dp ranks sum the gradients — fp32 rounding,
  // ~1e-7 here — and at this size no token's top-k margin is that small within 30 steps.
  void reconfigureContinuesTheTrajectory_data() {
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<int>("topk");
    QTest::addColumn<QStringList>("layouts");  // "ranks:ep" applied in turn, from serial
    QTest::newRow("momentum k=2: ep1 -> ep2 x2 -> ep2 x4 -> ep4 x4 -> serial")
        << "momentum" << 2 << QStringList{"2:2", "4:2", "4:4", "1:1"};
    QTest::newRow("adam k=1: ep1 x2 -> ep2 x4 -> ep1 x2")
        << "adam" << 1 << QStringList{"2:1", "4:2", "2:1"};
  }
  void reconfigureContinuesTheTrajectory() {
    QFETCH(QString, optimizer);
    QFETCH(int, topk);
    QFETCH(QStringList, layouts);
    auto layout = [&](int ranks, int ep) {
      RunConfig c = moeConfig(ranks, ep, topk);
      c.optimizer = optimizer.toStdString();
      if (optimizer == "adam") c.lr = 0.002;
      return c;
    };
    const int per = 6;
    std::vector<double> ref;
    for (const StepMetrics& m : run(layout(1, 1), per * int(layouts.size() + 1)))
      ref.push_back(m.loss);
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(layout(1, 1));
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (const QString& to : layouts) {
      const TrainingState state = trainer->saveState();
      QCOMPARE(state.step, int64_t(got.size()));
      trainer = std::make_unique<Trainer>(
          layout(to.section(':', 0, 0).toInt(), to.section(':', 1, 1).toInt()));
      trainer->loadState(state);
      const TrainingState back = trainer->saveState();  // loading took every float, in place
      QVERIFY2(back.params == state.params && back.optM == state.optM && back.optV == state.optV,
               qPrintable("the state changed on its way into " + to));
      QCOMPARE(back.optimizerSteps, state.optimizerSteps);
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "against the uninterrupted run");
    QVERIFY2(ref.back() < 0.8 * ref.front(), "the run should learn");
  }

  void configErrors_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");
    QTest::newRow("tp") << "tp"
                        << "model: --model moe composes with data and expert parallelism only "
                           "(allowed: tp = pp = cp = 1)";
    QTest::newRow("strategy")
        << "strategy"
        << "model: --model moe trains with --strategy sync (dp and ep are its axes)";
    QTest::newRow("ep experts") << "ep"
                                << "ep: 3 must divide the number of experts (4)";
    QTest::newRow("ep dp")
        << "dp"
        << "ep: 4 must divide dp (2): expert groups are carved out of the data-parallel ranks";
  }
  void configErrors() {
    QFETCH(QString, field);
    QFETCH(QString, message);
    RunConfig c = moeConfig(4, 2, 1);
    if (field == "tp") c.tp = 2;
    if (field == "strategy") c.strategy = "ps-sync";
    if (field == "ep") c.ranks = 3, c.ep = 3;
    if (field == "dp") c.ranks = 2, c.ep = 4;
    QCOMPARE(QString::fromStdString(c.validate().value_or("")), message);
  }
};

QTEST_GUILESS_MAIN(TstMoeStates)
#include "tst_moe_states.moc"
