// The mixture-of-experts model and expert parallelism (--model moe --ep G): the layer's gradient
// against finite differences (router included), expert-parallel runs against the serial MoE on
// the same global batch and seed, all-to-all bytes against the routed token counts, dropped
// tokens counted alike, the load-balancing loss, and mpirun. What a rank holds, evaluation and
// live reconfiguration are in tst_moe_states.cpp.
// (Shazeer et al. 2017; Lepikhin et al. 2020; Fedus et al. 2021; Rajbhandari et al. 2022.)
// Run: ctest -R tst_moe
#include <QtTest>
#include <nlohmann/json.hpp>
#include <random>

#include "comm/communicator.h"
#include "json_lines.h"
#include "metrics/metrics.h"
#include "model/moe.h"
#include "model_gradcheck.h"
#include "moe_runs.h"
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
        QString(
            "--ranks 4 --model moe --ep 2 --experts 4 --topk 2 --capacity-factor 1.0 "
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
