// The mixture-of-experts model and expert parallelism (--model moe --ep G): the layer's gradient
// against finite differences (router included), expert-parallel runs against the serial MoE on
// the same global batch and seed, all-to-all bytes against the routed token counts, dropped
// tokens counted alike, the load-balancing loss, the JSON token counts, live reconfiguration
// between ranks and ep degrees, and mpirun.
// (Shazeer et al. 2017; Lepikhin et al. 2020; Fedus et al. 2021; Rajbhandari et al. 2022.)
// Run: ctest -R tst_moe
#include <QtTest>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "comm/communicator.h"
#include "json_lines.h"
#include "loss_trajectory.h"
#include "metrics/metrics.h"
#include "model/moe.h"
#include "model_gradcheck.h"
#include "moe_runs.h"
#include "parallel/holdings.h"
#include "parallel/data/replica.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

using test::moeConfig;
std::vector<StepMetrics> run(const RunConfig& c, int steps) { return test::runSteps(c, steps); }

// Over steps [from, end): max_e / mean_e of the expert loads (summed over blocks and steps),
// and the mean number of dropped token choices per step.
std::pair<double, double> balance(const std::vector<StepMetrics>& ms, size_t from) {
  std::vector<double> per(ms[0].expertTokens[0].size(), 0.0);
  double dropped = 0;
  for (size_t s = from; s < ms.size(); ++s) {
    for (const auto& block : ms[s].expertTokens)
      for (size_t e = 0; e < per.size(); ++e) per[e] += double(block[e]);
    dropped += double(*ms[s].droppedTokens);
  }
  double mx = 0, sum = 0;
  for (double v : per) mx = std::max(mx, v), sum += v;
  return {mx / (sum / double(per.size())), dropped / double(ms.size() - from)};
}

}  // namespace

class TstMoe : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The model
  void shardsHoldTheSerialExperts() {
    MoeShape s;
    s.hidden = 16;
    s.experts = 4;
    Moe serial(s, 9, nullptr);
    QCOMPARE(serial.params().numel(), s.parameterCount());
    const int64_t dense = s.parameterCount() - s.layers * s.experts * s.expertParameterCount();
    for (int shards : {2, 4})
      for (int shard = 0; shard < shards; ++shard) {
        Moe part(s, 9, nullptr, {shards, shard});
        QCOMPARE(part.params().numel(),
                 dense + s.layers * (s.experts / shards) * s.expertParameterCount());
        // Every weight of the shard equals the serial model's weight of the same name.
        for (const ParamRef& r : part.params().refs()) {
          const auto& all = serial.params().refs();
          const auto it = std::find_if(all.begin(), all.end(),
                                       [&](const ParamRef& x) { return x.name == r.name; });
          QVERIFY2(it != all.end(), r.name.c_str());
          QVERIFY2(std::equal(part.params().params().data() + r.offset,
                              part.params().params().data() + r.offset + r.numel(),
                              serial.params().params().data() + it->offset),
                   r.name.c_str());
        }
      }
  }

  void gradientMatchesFiniteDifferences_data() {
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    QTest::addColumn<double>("aux");
    QTest::newRow("k=1 (Switch gate)") << 1 << 4.0 << 0.0;
    QTest::newRow("k=2 (renormalised gates)") << 2 << 4.0 << 0.0;
    QTest::newRow("k=2 drops + aux loss") << 2 << 0.6 << 0.05;
    QTest::newRow("k=1 drops + aux loss") << 1 << 0.6 << 0.05;
  }
  void gradientMatchesFiniteDifferences() {
    QFETCH(int, topk);
    QFETCH(double, capacity);
    QFETCH(double, aux);
    MoeShape s;
    s.input = 10;
    s.hidden = 8;
    s.layers = 2;
    s.classes = 5;
    s.experts = 4;
    s.topk = topk;
    s.capacityFactor = capacity;
    s.auxLoss = aux;
    Moe m(s, 11, nullptr);
    std::mt19937 gen(5);
    std::normal_distribution<float> d(0, 1);
    const int B = 16;
    std::vector<float> x(size_t(B) * s.input);
    for (float& v : x) v = d(gen);
    std::vector<int> labels(B);
    for (int i = 0; i < B; ++i) labels[size_t(i)] = i % s.classes;
    // The objective: mean cross-entropy plus the load-balancing loss.
    auto loss = [&] {
      return m.forwardLoss(x.data(), labels.data(), B, B) / B + m.stats().auxLoss;
    };
    // Routing (choices and drops) is piecewise constant: a finite difference across a switch
    // measures the jump, not the gradient, so such entries are skipped (and counted).
    auto routing = [&] {
      std::vector<int> r;
      for (int l = 0; l < s.layers; ++l) {
        const BlockRouting& b = m.routing(l);
        r.insert(r.end(), b.choice.begin(), b.choice.end());
        r.insert(r.end(), b.kept.begin(), b.kept.end());
      }
      return r;
    };
    loss();
    const std::vector<int> base = routing();
    const int64_t dropped = m.stats().dropped;
    m.params().zeroGrads();
    m.backward();
    std::vector<float> analytic(m.params().grads().data(),
                                m.params().grads().data() + m.params().numel());
    int router = 0;
    const test::GradientCheck c = test::checkModelGradient(
        m.params(), analytic, loss, [&] { return routing() != base; },
        [&](const ParamRef& ref, double numeric) {
          if (ref.name.find("router") != std::string::npos && std::abs(numeric) > 1e-4) ++router;
        });
    if (QTest::currentTestFailed()) return;
    const int checked = int(c.checked), skipped = int(c.skipped);
    qInfo(
        "checked %d parameters, %d skipped (routing switched), %d router gradients non-zero, "
        "%lld token choices dropped",
        checked, skipped, router, (long long)dropped);
    QVERIFY(checked >= 0.9 * double(m.params().numel()));
    QVERIFY(router > 10);  // the router really learns through the gates
    if (capacity < 1)
      QVERIFY(dropped > 0);
    else
      QCOMPARE(dropped, int64_t(0));
  }

  // [SECTION] Expert parallel = serial MoE. The ranks sum the same products in another order,
  // so weights differ at fp32 rounding; routing is discrete, and a token whose top-k margin is
  // below that rounding would flip its expert and part the trajectories for good. At this size
  // none does within 30 steps (worst ~1e-7); a larger model trained longer shows it
  // (H=256, batch 1024: identical drops to step 20, a few tokens apart by step 30).
  void matchesSerial_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("aux");
    for (int k : {1, 2}) {
      QTest::addRow("ep=2 dp=2 k=%d", k) << 2 << 2 << k << 0.0;
      QTest::addRow("ep=4 dp=4 k=%d", k) << 4 << 4 << k << 0.0;
      QTest::addRow("ep=2 dp=4 k=%d", k) << 4 << 2 << k << 0.0;
    }
    QTest::newRow("ep=1 dp=2 k=2") << 2 << 1 << 2 << 0.0;
    QTest::newRow("ep=2 dp=4 k=2 aux") << 4 << 2 << 2 << 0.01;
  }
  void matchesSerial() {
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    QFETCH(double, aux);
    RunConfig serial = moeConfig(1, 1, topk);
    serial.auxLoss = aux;
    RunConfig parallel = serial;
    parallel.ranks = ranks;
    parallel.ep = ep;
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 30;
    const auto a = run(serial, steps), b = run(parallel, steps);
    double worst = 0;
    for (int s = 0; s < steps; ++s) {
      const double rel = std::abs(a[s].loss - b[s].loss) / std::abs(a[s].loss);
      worst = std::max(worst, rel);
      QVERIFY2(rel <= 1e-5, qPrintable(QString("step %1: serial %2, ep %3 (rel %4)")
                                           .arg(s + 1)
                                           .arg(a[s].loss, 0, 'g', 10)
                                           .arg(b[s].loss, 0, 'g', 10)
                                           .arg(rel)));
      QCOMPARE(*b[s].droppedTokens, int64_t(0));
      if (aux > 0) QVERIFY(std::abs(*a[s].auxLoss - *b[s].auxLoss) <= 1e-5 * *a[s].auxLoss);
    }
    QVERIFY2(a.back().loss < 0.8 * a.front().loss, "the run should learn");
    qInfo("worst relative difference over %d steps: %.2e", steps, worst);
  }

  // A small capacity factor: tokens over capacity are dropped, the same ones in both runs.
  void dropsCountedLikeSerial_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::newRow("ep=2 dp=2 k=1") << 2 << 2 << 1;
    QTest::newRow("ep=4 dp=4 k=2") << 4 << 4 << 2;
    QTest::newRow("ep=2 dp=4 k=2") << 4 << 2 << 2;
  }
  void dropsCountedLikeSerial() {
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    RunConfig serial = moeConfig(1, 1, topk);
    serial.capacityFactor = 0.75;
    RunConfig parallel = serial;
    parallel.ranks = ranks;
    parallel.ep = ep;
    const int steps = 10;
    const auto a = run(serial, steps), b = run(parallel, steps);
    int64_t total = 0;
    for (int s = 0; s < steps; ++s) {
      QCOMPARE(*b[s].droppedTokens, *a[s].droppedTokens);
      QVERIFY(b[s].expertTokens == a[s].expertTokens);
      QVERIFY(std::abs(a[s].loss - b[s].loss) <= 1e-5 * a[s].loss);
      // Capacity C = ceil(0.75 T k / E) per expert per block: kept = sum_e min(routed_e, C).
      const int64_t C = int64_t(std::ceil(0.75 * serial.batch * topk / serial.experts));
      int64_t over = 0, processed = 0;
      for (const auto& block : a[s].expertTokens)
        for (int64_t n : block) over += std::max<int64_t>(0, n - C);
      for (const RankMetrics& r : b[s].ranks) processed += *r.tokens;
      QCOMPARE(*a[s].droppedTokens, over);
      QCOMPARE(processed, int64_t(serial.layers) * serial.batch * topk - over);
      total += *a[s].droppedTokens;
    }
    qInfo("%lld token choices dropped over %d steps, identical in serial and ep", (long long)total,
          steps);
    QVERIFY(total > 0);
  }

  // [SECTION] Traffic: all-to-all bytes = routed rows x H x 4, from the serial model's routing.
  void allToAllBytesMatchRouting_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("topk");
    QTest::addColumn<double>("capacity");
    for (int k : {1, 2}) {
      QTest::addRow("ep=2 dp=2 k=%d", k) << 2 << 2 << k << 4.0;
      QTest::addRow("ep=4 dp=4 k=%d", k) << 4 << 4 << k << 4.0;
      QTest::addRow("ep=2 dp=4 k=%d", k) << 4 << 2 << k << 4.0;
    }
    QTest::newRow("ep=4 dp=4 k=2 drops") << 4 << 4 << 2 << 0.75;
  }
  void allToAllBytesMatchRouting() {
    QFETCH(int, ranks);
    QFETCH(int, ep);
    QFETCH(int, topk);
    QFETCH(double, capacity);
    RunConfig c = moeConfig(ranks, ep, topk);
    c.capacityFactor = capacity;
    const auto data = loadDataset(c.dataset, c.dataDir, c.seed);
    std::vector<int> batch;
    BatchSampler(data->numTrain(), c.batch, c.seed).globalBatch(0, batch);
    // The serial model's routing of the global batch (step 1: same weights everywhere).
    MoeShape s;
    s.input = data->inputDim, s.classes = data->classes, s.hidden = c.hidden, s.layers = c.layers;
    s.experts = c.experts, s.topk = topk, s.capacityFactor = capacity;
    Moe serial(s, c.seed, nullptr);
    std::vector<float> x;
    std::vector<int> y;
    for (int i : batch) {
      x.insert(x.end(), &data->trainX[size_t(i) * s.input], &data->trainX[size_t(i + 1) * s.input]);
      y.push_back(data->trainY[size_t(i)]);
    }
    serial.forwardLoss(x.data(), y.data(), c.batch, c.batch);
    // Rank d's rows to other ranks (dispatch) and from them (combine), over blocks.
    const int El = c.experts / ep, B = c.batch;
    std::vector<int64_t> out(size_t(ranks), 0), in(size_t(ranks), 0);
    for (int l = 0; l < c.layers; ++l) {
      const BlockRouting& r = serial.routing(l);
      for (int d = 0; d < ranks; ++d)
        for (int64_t t = shardBegin(d, ranks, B); t < shardBegin(d + 1, ranks, B); ++t)
          for (int j = 0; j < topk; ++j) {
            const size_t slot = size_t(t) * topk + j;
            const int owner = (d / ep) * ep + r.choice[slot] / El;  // rank holding the expert
            if (!r.kept[slot] || owner == d) continue;
            ++out[size_t(d)];
            ++in[size_t(owner)];
          }
    }
    // The expert-parallel step on thread ranks, every rank's traffic by op.
    ThreadWorld world(ranks);
    std::vector<MemoryTracker> memory(static_cast<size_t>(ranks));
    std::vector<CommTraffic> traffic(static_cast<size_t>(ranks));
    world.run([&](Communicator& comm) {
      const int r = comm.rank();
      RankContext ctx{r, ranks, &comm, &memory[size_t(r)], nullptr, &c, data.get()};
      auto strategy = strategyFor(c).make(ctx);
      comm.accounting().take();
      strategy->step(0, batch);
      traffic[size_t(r)] = comm.accounting().take();
    });
    const int64_t H = c.hidden;
    for (int d = 0; d < ranks; ++d) {
      int64_t a2a = 0, gather = 0;
      for (const CommOpTotals& o : traffic[size_t(d)].ops) {
        if (o.op == CommOp::AllToAllV) a2a += o.sent;
        if (o.op == CommOp::AllGather) gather += o.sent;
      }
      // Forward dispatch + combine, and the same rows again in backward: 2 (out + in) H 4.
      const int64_t formula = 2 * (out[size_t(d)] + in[size_t(d)]) * H * 4;
      qInfo(
          "rank %d: %lld rows out, %lld in; all-to-all %lld bytes sent, formula %lld; routing "
          "counts all-gather %lld bytes",
          d, (long long)out[size_t(d)], (long long)in[size_t(d)], (long long)a2a,
          (long long)formula, (long long)gather);
      QCOMPARE(a2a, formula);
      // The routing counts: k x E floats per block to each of the other dp ranks.
      QCOMPARE(gather, int64_t(c.layers) * (ranks - 1) * topk * c.experts * 4);
    }
  }

  // [SECTION] Load balance: the Switch loss evens the experts' loads.
  void auxLossBalancesExperts() {
    RunConfig c = moeConfig(4, 4, 2);
    c.experts = 8;
    c.batch = 128;
    c.capacityFactor = 1.25;
    const int steps = 100;
    const auto plain = run(c, steps);
    c.auxLoss = 0.1;
    const auto balanced = run(c, steps);
    const auto [a, da] = balance(plain, steps - 20);
    const auto [b, db] = balance(balanced, steps - 20);
    qInfo(
        "last 20 steps, E=8 top-2, capacity factor 1.25: max/mean expert load %.2f and %.1f of "
        "%d token choices dropped per step without the aux loss; %.2f and %.1f with alpha = 0.1 "
        "(aux loss %.4f -> %.4f; 0.2 = perfectly even over 2 blocks)",
        a, da, c.layers * c.batch * c.topk, b, db, *balanced.front().auxLoss,
        *balanced.back().auxLoss);
    QVERIFY2(b < a, qPrintable(QString("%1 vs %2").arg(b).arg(a)));
    QVERIFY2(db < da, qPrintable(QString("%1 vs %2").arg(db).arg(da)));
    QVERIFY(*balanced.back().auxLoss < *balanced.front().auxLoss);
  }

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

  // Model states per rank: the dense weights whole, E/ep experts per block (momentum: 12 bytes
  // per parameter held, params + grads + optimizer).
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

  // [SECTION] Under MpiComm: mpirun -np 4 paralab-run --backend mpi --model moe --ep 2 prints the
  // thread run's losses and token counts (CTest tst_moe_mpi), with the experts' gradients
  // all-reduced over expert-dp or (ZeRO-3) sharded there.
  void mpiRunMatchesThreads_data() {
    QTest::addColumn<QStringList>("sync");
    QTest::newRow("all-reduce") << QStringList{};
    QTest::newRow("zero-3") << QStringList{"--zero", "3"};
  }
  void mpiRunMatchesThreads() {
#if defined(PARALAB_MPIEXEC) && defined(PARALAB_RUN)
    if (qEnvironmentVariableIsEmpty("PARALAB_MOE_MPI")) QSKIP("runs as the CTest tst_moe_mpi");
    QFETCH(QStringList, sync);
    const QStringList args =
        QString("--ranks 4 --model moe --ep 2 --experts 4 --topk 2 --capacity-factor 1.0 "
                "--aux-loss 0.01 --dataset synthetic --hidden 32 --batch 48 --steps 5 "
                "--eval-every 5 --eval-samples 300 --json")
            .split(' ');
    const auto mpi = test::runJsonLines(
        PARALAB_MPIEXEC,
        QStringList{"--oversubscribe", "-np", "4", PARALAB_RUN, "--backend", "mpi"} + args + sync,
        6);
    const auto thr = test::runJsonLines(PARALAB_RUN, args + sync, 6);
    QCOMPARE(int(mpi.size()), 6);  // 5 steps and the summary
    QCOMPARE(int(thr.size()), 6);
    for (int s = 0; s < 5; ++s) {
      const auto &a = mpi[size_t(s)], &b = thr[size_t(s)];
      const double la = a["loss"], lb = b["loss"];
      QVERIFY2(std::abs(la - lb) <= 1e-5 * std::abs(lb),
               qPrintable(QString("%1 vs %2").arg(la).arg(lb)));
      QCOMPARE(a["expert_tokens"], b["expert_tokens"]);
      QCOMPARE(a["dropped_tokens"], b["dropped_tokens"]);
      QCOMPARE(int(a["ranks"].size()), 4);
      for (int r = 0; r < 4; ++r) {
        QCOMPARE(a["ranks"][size_t(r)]["tokens"], b["ranks"][size_t(r)]["tokens"]);
        // MPI's bytes are modelled (ring all-reduce, per-peer all-to-all counts); the all-reduce
        // of a buffer the group size does not divide splits its chunks a few floats apart.
        const double sa = a["ranks"][size_t(r)]["bytes_sent"].get<double>(),
                     sb = b["ranks"][size_t(r)]["bytes_sent"].get<double>();
        QVERIFY2(std::abs(sa - sb) <= 1e-4 * sb, qPrintable(QString("%1 vs %2").arg(sa).arg(sb)));
      }
    }
    QVERIFY(std::abs(mpi[4]["test_accuracy"].get<double>() -
                     thr[4]["test_accuracy"].get<double>()) <= 2.0 / 300);
#else
    QSKIP("built without MPI");
#endif
  }
};

QTEST_GUILESS_MAIN(TstMoe)
#include "tst_moe.moc"
