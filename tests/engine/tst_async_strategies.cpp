// The asynchronous and decentralised data-parallel strategies: ps-async, Hogwild, local SGD and
// gossip converge on Fashion-MNIST (they do not reproduce the serial run) and report staleness
// or spread; ps-sync's, ps-async's and gossip's bytes match their formulas; Hogwild refuses
// ranks without shared memory. The mpiRuns rows run paralab-run under mpirun; they run only
// from their own CTests (tst_async_mpi_*, which set PARALAB_MPI_RUNS=1). Run: ctest -R async
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include "json_lines.h"
#include "comm/communicator.h"
#include "parallel/data/replica.h"
#include "parallel/strategy.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Fashion-MNIST, small enough that 200 steps take well under a second per run on 2 cores.
RunConfig fashionConfig(const QString& strategy, int ranks) {
  RunConfig c;
  c.dataDir = PARALAB_FMNIST_DIR;
  c.hidden = 32;
  c.layers = 2;
  c.batch = 64;
  c.evalEvery = 0;
  c.lr = 0.05;
  c.optimizer = "momentum";
  c.ranks = ranks;
  c.strategy = strategy.toStdString();
  c.timeoutS = 20;  // a mismatched exchange fails the test instead of hanging it
  return c;
}

RunConfig syntheticConfig(const QString& strategy, int ranks) {
  RunConfig c = fashionConfig(strategy, ranks);
  c.dataset = "synthetic";
  return c;
}

// One step driven on every rank of a ThreadWorld directly (no trainer), returning each rank's
// traffic of that step by op and group.
std::vector<CommTraffic> trafficOfStep(const RunConfig& c, int64_t step) {
  auto data = loadDataset(c.dataset, c.dataDir, c.seed);
  ThreadWorld world(c.ranks);
  std::vector<CommTraffic> out(size_t(c.ranks));
  std::vector<MemoryTracker> memory(size_t(c.ranks));
  world.run([&](Communicator& comm) {
    const int r = comm.rank();
    RankContext ctx{r, c.ranks, &comm, &memory[size_t(r)], nullptr, &c, data.get()};
    auto s = strategyFor(c).make(ctx);
    BatchSampler sampler(data->numTrain(), c.globalBatch(), c.seed);
    std::vector<int> batch;
    for (int64_t k = 0; k <= step; ++k) {  // earlier steps first, as the trainer runs them
      sampler.globalBatch(k, batch);
      if (k == step) comm.accounting().take();  // only this step's traffic
      s->step(k, batch);
    }
    out[size_t(r)] = comm.accounting().take();
  });
  return out;
}

// Bytes by one op in one group, sent (or received) by a rank.
int64_t opBytes(const CommTraffic& t, CommOp op, const std::string& group, bool sent) {
  int64_t b = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.op == op && o.group == group) b += sent ? o.sent : o.recv;
  return b;
}

int64_t parameterCount(const RunConfig& c) {
  MlpShape s;
  s.hidden = c.hidden;
  s.layers = c.layers;
  return s.parameterCount();
}

// A communicator whose ranks are separate processes (what MpiComm reports), moving nothing.
class ProcessComm final : public Communicator {
 public:
  ProcessComm()
      : Communicator(0, 2, "world", {0, 1}, CommOptions{}, LinkProfile{},
                     std::make_shared<RankContext>(RankContext{std::make_shared<CommAccounting>(0, 2)})) {}
  Backend backend() const override { return Backend::Mpi; }
  std::vector<std::string> gatherToRoot(const std::string&, int) override { return {}; }
  void abort(const std::string&) override {}

 protected:
  CommAlgo defaultAlgo() const override { return CommAlgo::Mpi; }
  void doAllReduce(const float*, float*, int64_t, ReduceOp, CommAlgo, Device) override { fail(); }
  void doReduceScatter(const float*, float*, int64_t, ReduceOp, Device) override { fail(); }
  void doAllGather(const float*, float*, int64_t, Device) override { fail(); }
  void doBroadcast(float*, int64_t, int, Device) override { fail(); }
  void doReduce(const float*, float*, int64_t, int, ReduceOp, Device) override { fail(); }
  void doAllToAll(const float*, float*, int64_t, Device) override { fail(); }
  void doAllToAllv(const float*, const int64_t*, float*, const int64_t*, Device) override { fail(); }
  void doSend(const float*, int64_t, int, Device) override { fail(); }
  void doRecv(float*, int64_t, int, Device) override { fail(); }
  void doBarrier() override { fail(); }
  std::unique_ptr<Communicator> doSplit(int, int, const std::string&) override { fail(); return nullptr; }

 private:
  [[noreturn]] static void fail() { throw CommError("this test communicator moves no data"); }
};

using Run = test::ProgramResult;
const auto runProcess = test::runProgram;

}  // namespace

class TstAsyncStrategies : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] Convergence on Fashion-MNIST: H = 32, batch 64, 200 steps. The serial run's mean
  // loss over the last 20 steps is 0.58-0.62 (seeds 1-3); every strategy must get below 0.8
  // from ~2.3 at the start, and report its staleness or spread on the steps it promises.
  void converges_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QString>("option");  // servers, topology or H, as "name=value"
    // ps-async with plain SGD: staleness adds momentum of its own (Mitliagkas et al. 2016), and
    // with the default momentum 0.9 on top, lr 0.05 diverges at 4 workers.
    QTest::newRow("ps-async N=4 S=2") << "ps-async" << 4 << "servers=2";
    QTest::newRow("ps-async N=8 S=3") << "ps-async" << 8 << "servers=3";
    QTest::newRow("hogwild N=4") << "hogwild" << 4 << "";
    QTest::newRow("hogwild N=8") << "hogwild" << 8 << "";
    QTest::newRow("local-sgd N=4 H=4") << "local-sgd" << 4 << "sync-every=4";
    QTest::newRow("gossip ring N=4") << "gossip" << 4 << "topology=ring";
    QTest::newRow("gossip ring N=3") << "gossip" << 3 << "topology=ring";
    QTest::newRow("gossip random N=5") << "gossip" << 5 << "topology=random";
  }
  void converges() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(QString, option);
    RunConfig c = fashionConfig(strategy, ranks);
    const QString name = option.section('=', 0, 0), value = option.section('=', 1);
    if (name == "servers") c.servers = value.toInt();
    if (name == "sync-every") c.syncEvery = value.toInt();
    if (name == "topology") c.topology = value.toStdString();
    if (strategy == "ps-async") {
      c.optimizer = "sgd";
      c.lr = 0.1;
    }
    const int steps = 200;
    Trainer t(c);
    double first = 0, lastAvg = 0, stalenessSum = 0, spreadSum = 0;
    int spreads = 0;
    for (int s = 0; s < steps; ++s) {
      const StepMetrics m = t.step();
      QVERIFY(std::isfinite(m.loss));
      if (s == 0) first = m.loss;
      if (s >= steps - 20) lastAvg += m.loss / 20;
      if (strategy == "ps-async") {
        // Round-robin service (param_server.cpp): on the first step worker r's pushes land r
        // versions late; then a remote push lands N-1 late and server k's own k late, so the
        // mean over ranks and shards is ((S-1)/2 + (N-1)^2) / N.
        QVERIFY(m.staleness.has_value());
        const double expect = s == 0 ? (ranks - 1) / 2.0
                                     : ((c.servers - 1) / 2.0 + (ranks - 1) * (ranks - 1)) / ranks;
        QCOMPARE(*m.staleness, expect);
        stalenessSum += *m.staleness;
      } else if (strategy == "hogwild") {
        // Others' updates that finished while this rank computed: each other rank makes one
        // update a step, so 0..N-1.
        QVERIFY(m.staleness.has_value());
        QVERIFY2(*m.staleness >= 0 && *m.staleness <= ranks - 1, qPrintable(QString::number(*m.staleness)));
        stalenessSum += *m.staleness;
        for (const RankMetrics& r : m.ranks) QCOMPARE(r.bytesSent, int64_t(0));  // no messages
      } else if (strategy == "local-sgd") {
        const bool syncStep = (s + 1) % c.syncEvery == 0;
        QCOMPARE(m.spread.has_value(), syncStep);  // measured on averaging steps only
        if (!syncStep)
          for (const RankMetrics& r : m.ranks) QCOMPARE(r.bytesSent, int64_t(0));  // alone
      } else {
        QVERIFY(m.spread.has_value());  // gossip: every step
      }
      if (m.spread) {
        QVERIFY2(*m.spread > 0 && std::isfinite(*m.spread), qPrintable(QString::number(*m.spread)));
        spreadSum += *m.spread;
        ++spreads;
      }
    }
    QVERIFY2(first > 2.0, qPrintable(QString::number(first)));
    QVERIFY2(lastAvg < 0.8, qPrintable(QString("mean loss of the last 20 steps %1").arg(lastAvg)));
    qInfo("%s: loss %.3f -> %.3f (last 20 steps); mean staleness %.3f; mean spread %.4f over %d steps",
          qPrintable(QTest::currentDataTag()), first, lastAvg, stalenessSum / steps,
          spreads ? spreadSum / spreads : 0.0, spreads);
    if (strategy == "hogwild") {  // one shared parameter buffer, owned by rank 0, and each
      const int64_t P = t.parameterCount();  // rank's copy of what it read from it (its x)
      QCOMPARE(t.memory(0).snapshot()[MemCategory::Params], 2 * 4 * P);
      for (int r = 1; r < ranks; ++r) QCOMPARE(t.memory(r).snapshot()[MemCategory::Params], 4 * P);
    }
  }

  // [SECTION] Where they meet the serial run exactly.
  void psAsyncOneRankEqualsSerial() {
    RunConfig serial = syntheticConfig("sync", 1), async = syntheticConfig("ps-async", 1);
    Trainer a(serial), b(async);
    for (int s = 0; s < 20; ++s) QCOMPARE(b.step().loss, a.step().loss);
  }

  // H = 1, equal slices: averaging after every local step is synchronous SGD with momentum
  // (both are linear in the gradient). Same tolerance as tst_parallel_equals_serial.
  void localSgdEveryStepEqualsSerial() {
    RunConfig serial = syntheticConfig("sync", 1);
    serial.batch = 48;  // 12 per rank: the mean of the slice means is the batch mean
    RunConfig local = serial;
    local.strategy = "local-sgd";
    local.ranks = 4;
    local.syncEvery = 1;
    Trainer a(serial), b(local);
    for (int s = 0; s < 50; ++s) {
      const double x = a.step().loss;
      const StepMetrics m = b.step();
      QVERIFY2(std::abs(x - m.loss) <= 1e-5 * std::abs(x),
               qPrintable(QString("step %1: serial %2, local-sgd %3").arg(s + 1).arg(x, 0, 'g', 10).arg(m.loss, 0, 'g', 10)));
      QVERIFY(m.spread.has_value());
    }
  }

  // [SECTION] Traffic against the formulas (ThreadComm counts each transfer as it happens).
  // ps-sync: worker r sends its gradient shard k (P_k floats) to every server k != r and
  // receives parameter shard k back; server k also receives (N-1) gradient shards and sends
  // (N-1) parameter shards. Bytes = 4 x floats, each way the same.
  void psSyncTrafficMatchesFormula_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("servers");
    QTest::newRow("N=4 S=1") << 4 << 1;
    QTest::newRow("N=4 S=2") << 4 << 2;
    QTest::newRow("N=3 S=3") << 3 << 3;
  }
  void psSyncTrafficMatchesFormula() {
    QFETCH(int, ranks);
    QFETCH(int, servers);
    RunConfig c = syntheticConfig("ps-sync", ranks);
    c.servers = servers;
    const int64_t P = parameterCount(c);
    const std::vector<CommTraffic> t = trafficOfStep(c, 1);
    for (int r = 0; r < ranks; ++r) {
      int64_t floats = 0;
      for (int k = 0; k < servers; ++k)
        floats += k == r ? (ranks - 1) * shardLen(k, servers, P) : shardLen(k, servers, P);
      QCOMPARE(t[size_t(r)].bytesSent, 4 * floats);
      QCOMPARE(t[size_t(r)].bytesRecv, 4 * floats);
      // and by op: every byte is a push or a pull, a message to or from a server (lesson 8),
      // not a collective: what the traffic chart draws, on every backend
      QCOMPARE(opBytes(t[size_t(r)], CommOp::Send, "world", true), 4 * floats);
      QCOMPARE(opBytes(t[size_t(r)], CommOp::Recv, "world", false), 4 * floats);
    }
  }

  // ps-async: the same shards by send/recv, plus one float (the version) with each reply.
  void psAsyncTrafficMatchesFormula() {
    RunConfig c = syntheticConfig("ps-async", 4);
    c.servers = 2;
    const int64_t P = parameterCount(c);
    const std::vector<CommTraffic> t = trafficOfStep(c, 1);
    for (int r = 0; r < c.ranks; ++r) {
      int64_t sent = 0, recv = 0;
      for (int k = 0; k < c.servers; ++k) {
        const int64_t n = shardLen(k, c.servers, P);
        if (k == r) {
          sent += (c.ranks - 1) * (n + 1);
          recv += (c.ranks - 1) * n;
        } else {
          sent += n;
          recv += n + 1;
        }
      }
      QCOMPARE(t[size_t(r)].bytesSent, 4 * sent);
      QCOMPARE(t[size_t(r)].bytesRecv, 4 * recv);
    }
  }

  // Gossip on a ring sends its parameters to both neighbours (N = 2: to the one); random
  // pairing to its partner. The spread measurement travels in a group of its own.
  void gossipTrafficMatchesFormula_data() {
    QTest::addColumn<QString>("topology");
    QTest::addColumn<int>("ranks");
    QTest::newRow("ring N=2") << "ring" << 2;
    QTest::newRow("ring N=5") << "ring" << 5;
    QTest::newRow("random N=4") << "random" << 4;
    QTest::newRow("random N=5") << "random" << 5;
  }
  void gossipTrafficMatchesFormula() {
    QFETCH(QString, topology);
    QFETCH(int, ranks);
    RunConfig c = syntheticConfig("gossip", ranks);
    c.topology = topology.toStdString();
    const int64_t P = parameterCount(c);
    const std::vector<CommTraffic> t = trafficOfStep(c, 3);
    int sittingOut = 0;
    for (int r = 0; r < ranks; ++r) {
      const int64_t sent = opBytes(t[size_t(r)], CommOp::Send, "world", true);
      const int64_t recv = opBytes(t[size_t(r)], CommOp::Recv, "world", false);
      QCOMPARE(recv, sent);
      if (topology == "ring") {
        QCOMPARE(sent, (ranks == 2 ? 1 : 2) * 4 * P);
      } else {
        QVERIFY2(sent == 4 * P || sent == 0, qPrintable(QString::number(sent)));
        sittingOut += sent == 0;
      }
      QVERIFY(opBytes(t[size_t(r)], CommOp::AllReduce, "spread", true) > 0);
      QCOMPARE(opBytes(t[size_t(r)], CommOp::AllReduce, "world", true), int64_t(0));  // none
    }
    if (topology == "random") QCOMPARE(sittingOut, ranks % 2);
  }

  // [SECTION] Hogwild needs ranks that share memory.
  void hogwildRefusesSeparateProcesses() {
    RunConfig c = syntheticConfig("hogwild", 2);
    auto data = loadDataset(c.dataset, c.dataDir, c.seed);
    ProcessComm comm;
    MemoryTracker memory;
    RankContext ctx{0, 2, &comm, &memory, nullptr, &c, data.get()};
    try {
      strategyFor(c).make(ctx);
      QFAIL("hogwild was built on a communicator of separate processes");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains("share memory"), e.what());
    }
    QVERIFY(strategyFor(c).threadOnly);
  }

  void hogwildWithMpiBackendExits2() {
    const Run r = runProcess(PARALAB_RUN, {"--backend", "mpi", "--strategy", "hogwild", "--steps", "1"}, 60000);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);  // one line
    QVERIFY2(r.err.contains("hogwild needs ranks that share memory"), qPrintable(r.err));
  }

  // [SECTION] Under mpirun: every strategy here runs on MpiComm (Hogwild refuses). Rows run
  // only with PARALAB_MPI_RUNS=1, from the CTests tst_async_mpi_<row> (tests/engine/CMakeLists.txt).
  void mpiRuns_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("np");
    const std::vector<std::pair<QString, QStringList>> kinds = {
        {"ps-sync", {"--strategy", "ps-sync", "--servers", "2"}},
        {"ps-async", {"--strategy", "ps-async", "--servers", "2", "--optimizer", "sgd"}},
        {"local-sgd", {"--strategy", "local-sgd", "--sync-every", "2"}},
        {"gossip-ring", {"--strategy", "gossip", "--topology", "ring"}},
        {"gossip-random", {"--strategy", "gossip", "--topology", "random"}},
        {"hogwild", {"--strategy", "hogwild"}}};
    for (const auto& [name, args] : kinds)
      for (int np : {2, 4}) QTest::addRow("%s np=%d", qPrintable(name), np) << args << np;
  }
  void mpiRuns() {
    QFETCH(QStringList, args);
    QFETCH(int, np);
#ifndef PARALAB_MPIEXEC
    QSKIP("built without MPI");
#else
    if (qEnvironmentVariable("PARALAB_MPI_RUNS") != "1")
      QSKIP("run by the tst_async_mpi_* CTests (PARALAB_MPI_RUNS=1)");
    const int steps = 6;
    QStringList cmd = {"--oversubscribe", "-np", QString::number(np), PARALAB_RUN, "--backend", "mpi",
                       "--ranks", QString::number(np), "--dataset", "synthetic", "--hidden", "32",
                       "--batch", "32", "--eval-every", "0", "--steps", QString::number(steps),
                       "--timeout", "30", "--json"};
    cmd += args;
    const Run r = runProcess(PARALAB_MPIEXEC, cmd, 120000);
    const QString strategy = args[1];
    if (strategy == "hogwild") {  // refused before any rank starts, by every process
      QVERIFY2(r.code != 0, qPrintable(r.out));
      QVERIFY2(r.err.contains("paralab-run: strategy: hogwild needs ranks that share memory"), qPrintable(r.err));
      return;
    }
    QVERIFY2(r.code == 0, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err)));
    const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), steps + 1);  // one per step, then the summary
    for (int s = 0; s < steps; ++s) {
      const QJsonObject j = QJsonDocument::fromJson(lines[s].toUtf8()).object();
      QCOMPARE(j["step"].toInt(), s + 1);
      QVERIFY(std::isfinite(j["loss"].toDouble()) && j["loss"].toDouble() > 0);
      const QJsonArray ranks = j["ranks"].toArray();
      QCOMPARE(ranks.size(), np);
      if (strategy == "ps-async") {
        const double expect = s == 0 ? (np - 1) / 2.0 : (0.5 + (np - 1) * (np - 1)) / np;  // S = 2
        QCOMPARE(j["staleness"].toDouble(-1), expect);
      }
      const bool spread = strategy == "gossip" || (strategy == "local-sgd" && (s + 1) % 2 == 0);
      QCOMPARE(j.contains("spread"), spread);
      int64_t sent = 0;
      for (const QJsonValue& v : ranks) sent += v.toObject()["bytes_sent"].toInteger();
      QCOMPARE(sent > 0, strategy != "local-sgd" || spread);
      if (strategy == "ps-sync") {  // messages, counted as sent: server k serves every worker
        RunConfig c = syntheticConfig("ps-sync", np);
        c.hidden = 32;
        const int64_t P = parameterCount(c);
        for (int r = 0; r < np; ++r) {
          const QJsonObject rank = ranks[r].toObject();
          QVERIFY2(!rank["bytes_modelled"].toBool(), "ps-sync's pushes and pulls are counted");
          int64_t floats = 0;
          for (int k = 0; k < 2; ++k)
            floats += k == r ? (np - 1) * shardLen(k, 2, P) : shardLen(k, 2, P);
          QCOMPARE(rank["bytes_sent"].toInteger(), 4 * floats);
          QCOMPARE(rank["bytes_recv"].toInteger(), 4 * floats);
        }
      }
    }
    QVERIFY(QJsonDocument::fromJson(lines.last().toUtf8()).object()["summary"].toBool());
#endif
  }
};

QTEST_GUILESS_MAIN(TstAsyncStrategies)
#include "tst_async_strategies.moc"
