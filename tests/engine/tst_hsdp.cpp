// HSDP (--zero-shard node: ZeRO inside each node, a replica per node, FSDP's HYBRID_SHARD):
// equal to the serial run (MLP and GPT, 2 nodes x 2 and 2 x 4 thread ranks, and under mpirun),
// bytes per tier against their formulas and below plain ZeRO-3's between nodes, model states
// per rank sharded over the node's G ranks, checkpoints saved from one replica and resumed on
// another layout, the holdings of each replica, and the one-line refusals.
// Run: ctest -R 'tst_hsdp'
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "comm/hierarchical_allreduce.h"  // splitByNode
#include "device/compute.h"
#include "json_lines.h"
#include "loss_trajectory.h"
#include "memory_estimate.h"
#include "model/mlp.h"
#include "parallel/data/grad_sync.h"
#include "parallel/data/zero.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "zero_formula.h"

using namespace paralab;

namespace {

// The MLP with Adam (as tst_zero), on `nodes` x `perNode` thread ranks with HSDP at `stage`;
// the ring all-reduce, so the bytes between nodes follow the ring's formula.
RunConfig hsdpRun(int stage, int nodes, int perNode) {
  RunConfig c = test::smallRun(32, 2, 48);
  c.optimizer = "adam";
  c.lr = 0.002;
  c.ranks = nodes * perNode;
  c.zero = stage;
  c.gpusPerNode = perNode;
  c.zeroShard = ZeroShard::Node;
  c.allreduce = "ring";
  return c;
}

// ZeRO's layout of the MLP over `ranks`: the exact (padded) figures.
ZeroLayout layoutOver(const RunConfig& c, int ranks) {
  MlpShape s;
  s.hidden = c.hidden;
  s.layers = c.layers;
  Mlp model(s, c.seed, nullptr);
  return ZeroLayout(model.params(), ranks);
}

const HeldGroup* groupNamed(const RankHoldings& h, const std::string& name) {
  for (const HeldGroup& g : h.groups)
    if (g.name == name) return &g;
  return nullptr;
}

}  // namespace

class TstHsdp : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] Equal to serial: the losses of every step and the parameters after the run.
  void equalsSerial_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("stage");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("perNode");
    QTest::addColumn<int>("accumulate");
    for (int stage : {1, 2, 3})
      QTest::addRow("mlp zero-%d 2x2", stage) << "mlp" << stage << 2 << 2 << 1;
    QTest::addRow("mlp zero-3 2x4") << "mlp" << 3 << 2 << 4 << 1;
    QTest::addRow("mlp zero-2 2x2 accumulate 2") << "mlp" << 2 << 2 << 2 << 2;
    QTest::addRow("gpt zero-3 2x2") << "gpt" << 3 << 2 << 2 << 1;
    QTest::addRow("gpt zero-3 2x4") << "gpt" << 3 << 2 << 4 << 1;
  }
  void equalsSerial() {
    QFETCH(QString, model);
    QFETCH(int, stage);
    QFETCH(int, nodes);
    QFETCH(int, perNode);
    QFETCH(int, accumulate);
    RunConfig serial = model == "gpt" ? test::smallGptRun(16) : test::smallRun(32, 2, 48);
    serial.accumulate = accumulate;
    RunConfig hsdp = serial;
    hsdp.ranks = nodes * perNode;
    hsdp.zero = stage;
    hsdp.gpusPerNode = perNode;
    hsdp.zeroShard = ZeroShard::Node;
    QVERIFY2(!hsdp.validate(), hsdp.validate().value_or("").c_str());
    const int steps = model == "gpt" ? 10 : 20;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(hsdp, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "hsdp vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, hsdp vs serial");
  }

  // [SECTION] Bytes per tier. Inside a node, ZeRO-3 over G: two gathers and a reduce-scatter,
  // 3(G-1)/G x 4 x padded P. Between nodes, each owned chunk's ring all-reduce over the n
  // nodes: 2(n-1)/n x S/G per rank, S/G = 4 x the floats a rank owns. And fewer bytes between
  // nodes than plain ZeRO-3 over the same ranks.
  void bytesPerTierMatchTheFormulas_data() {
    QTest::addColumn<int>("perNode");
    QTest::addRow("2 nodes x 2") << 2;
    QTest::addRow("2 nodes x 4") << 4;
  }
  void bytesPerTierMatchTheFormulas() {
    QFETCH(int, perNode);
    const int G = perNode, n = 2;
    RunConfig c = hsdpRun(3, n, G);
    const ZeroLayout layout = layoutOver(c, G);
    const int64_t owned = 4 * layout.shardNumel;  // S/G bytes
    int64_t inter[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      c.zeroShard = k == 0 ? ZeroShard::Node : ZeroShard::All;
      Trainer t(c);
      t.step();
      const StepMetrics m = t.step();
      QCOMPARE(int(m.ranks.size()), n * G);
      for (const RankMetrics& r : m.ranks) {
        QVERIFY(r.tiers);
        inter[k] += r.tiers->interSent;
        if (k == 1) continue;
        QCOMPARE(r.tiers->intraSent, int64_t(3) * (G - 1) * owned);
        const double between = 2.0 * (n - 1) / n * double(owned);
        QCOMPARE(double(r.tiers->interSent), between);
        QCOMPARE(r.bytesSent, r.tiers->intraSent + r.tiers->interSent);
      }
    }
    qInfo("between nodes per step: HSDP %lld bytes, ZeRO-3 over every rank %lld",
          (long long)inter[0], (long long)inter[1]);
    QVERIFY2(inter[0] < inter[1], qPrintable(QString("%1 vs %2").arg(inter[0]).arg(inter[1])));
  }

  // [SECTION] Memory: each rank holds the model states of ZeRO over the node's G ranks, not
  // over all N (the same bytes as a plain ZeRO run of G ranks), and the estimate a run is
  // refused by counts the same.
  void memoryIsShardedOverTheNode_data() {
    QTest::addColumn<int>("stage");
    QTest::addColumn<int>("perNode");
    for (int stage : {1, 2, 3})
      for (int g : {2, 4}) QTest::addRow("zero-%d 2 x %d", stage, g) << stage << g;
  }
  void memoryIsShardedOverTheNode() {
    QFETCH(int, stage);
    QFETCH(int, perNode);
    const RunConfig c = hsdpRun(stage, 2, perNode);
    const ZeroLayout layout = layoutOver(c, perNode);
    const int64_t full = 4 * layout.paddedNumel, shard = 4 * layout.shardNumel;
    const int64_t exact[] = {16 * layout.numel, 2 * full + 2 * shard, full + 3 * shard, 4 * shard};
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    int64_t held = 0;
    for (const RankMetrics& r : m.ranks) {
      const int64_t got = test::modelStates(r.mem);
      held += got;
      QCOMPARE(got, exact[stage]);
      const double formula = test::zeroFormulaBytes(stage, perNode, double(layout.numel));
      QVERIFY2(
          std::abs(double(got) - formula) <= 0.05 * formula,
          qPrintable(
              QString("rank %1: %2 bytes, formula over G %3").arg(r.rank).arg(got).arg(formula)));
    }
    const int64_t estimate = estimateMemory(c).modelStates;
    QVERIFY2(estimate <= held && held - estimate <= 4 * c.ranks * perNode * 16,
             qPrintable(QString("held %1, estimated %2").arg(held).arg(estimate)));
  }

  // [SECTION] Saving and resuming: the state saved from the first node's shards (the other
  // nodes' ranks are replicas of them) through a checkpoint file, resumed on another layout,
  // takes the uninterrupted run's steps; and a state saved elsewhere loads into every replica.
  void checkpointResumesAcrossLayouts_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QList<int>>("layouts");  // ranks, zero, G (0: plain) saving; resuming
    QTest::newRow("mlp hsdp zero-3 2x2 -> serial") << "mlp" << QList<int>{4, 3, 2, 1, 0, 0};
    QTest::newRow("gpt serial -> hsdp zero-3 2x2") << "gpt" << QList<int>{1, 0, 0, 4, 3, 2};
    QTest::newRow("mlp hsdp zero-1 2x2 -> hsdp zero-3 2x4")
        << "mlp" << QList<int>{4, 1, 2, 8, 3, 4};
  }
  void checkpointResumesAcrossLayouts() {
    QFETCH(QString, model);
    QFETCH(QList<int>, layouts);
    const RunConfig base = model == "gpt" ? test::smallGptRun(16) : test::smallRun(32, 2, 48);
    auto layout = [&](int at) {
      RunConfig c = base;
      c.ranks = layouts[at];
      c.zero = layouts[at + 1];
      c.gpusPerNode = layouts[at + 2];
      if (c.gpusPerNode > 0) c.zeroShard = ZeroShard::Node;
      return c;
    };
    const RunConfig saving = layout(0), resuming = layout(3);
    QVERIFY2(!saving.validate(), saving.validate().value_or("").c_str());
    QVERIFY2(!resuming.validate(), resuming.validate().value_or("").c_str());
    const int per = 6;
    const test::RunRecord ref = test::recordRun(base, 2 * per);
    QTemporaryDir dir;
    const std::string file = dir.filePath("hsdp.ckpt").toStdString();
    std::vector<double> losses;
    {
      Trainer t(saving);
      for (int s = 0; s < per; ++s) losses.push_back(t.step().loss);
      writeCheckpoint(file, t.saveState(), t.config(), t.parameterCount());
    }
    const Checkpoint k = readCheckpoint(file);
    Trainer t(resuming);
    QVERIFY(!checkpointMismatch(k, t.config(), t.parameterCount()));
    t.loadState(k.state);
    for (int s = 0; s < per; ++s) losses.push_back(t.step().loss);
    VERIFY_TRAJECTORIES_AGREE(losses, ref.losses, 1e-5, "resumed vs uninterrupted serial");
    VERIFY_PARAMETERS_AGREE(t.saveState().params, ref.params, 1e-5,
                            "final parameters, resumed vs uninterrupted serial");
  }

  // Saving gathers one replica's shards: the first node's ranks all-gather, the other node's
  // ranks (holding the same chunks) gather nothing, and rank 0's state is the whole model.
  void saveGathersOneReplica() {
    const int G = 2, n = 2;
    CommOptions o;
    o.gpusPerNode = G;
    ThreadWorld world(n * G, o);
    std::vector<int64_t> gathered(size_t(n * G), -1);
    std::vector<float> initial, saved;
    std::mutex mutex;
    world.run([&](Communicator& comm) {
      MlpShape shape;
      shape.hidden = 16;
      shape.layers = 2;
      Mlp model(shape, 7, nullptr);
      const std::vector<float> before(model.params().params().data(),
                                      model.params().params().data() + model.params().numel());
      const std::unique_ptr<Compute> compute = Compute::cpu();
      NodeGroups nodes = splitByNode(comm, "test", "shard", "replicas");
      GradSyncSettings settings;
      settings.zero = ZeroStage::Parameters;
      settings.optimizer = "adam";
      GradSync sync(model.params(), {{nodes.node.get(), "shard", nodes.across.get()}}, {}, settings,
                    *compute, nullptr, nullptr);
      (void)comm.accounting().take();
      TrainingState state;
      const int64_t P = int64_t(before.size());
      sync.save(state, comm, P, [&](const std::vector<float>& local, std::vector<float>& serial) {
        if (comm.rank() == 0) serial = local;
      });
      int64_t bytes = 0;
      for (const CommOpTotals& op : comm.accounting().take().ops)
        if (op.op == CommOp::AllGather) bytes += op.sent;
      std::lock_guard lock(mutex);
      gathered[size_t(comm.rank())] = bytes;
      if (comm.rank() == 0) {
        initial = before;
        saved = state.params;
      }
    });
    for (int r = 0; r < n * G; ++r)
      QVERIFY2(r < G ? gathered[size_t(r)] > 0 : gathered[size_t(r)] == 0,
               qPrintable(QString("rank %1 gathered %2 bytes").arg(r).arg(gathered[size_t(r)])));
    QVERIFY(!initial.empty());
    QVERIFY(saved == initial);
  }

  // [SECTION] The holdings: rank l of every node holds the same chunk of each unit (the
  // replicas), a node's ranks hold each unit's floats once between them, and every rank says
  // its node ("shard") and its replicas ("replicas") beside the world.
  void holdingsShowTheReplicas() {
    const int G = 2, n = 2;
    const RunConfig c = hsdpRun(3, n, G);
    Trainer t(c);
    t.step();
    const std::vector<RankHoldings> hs = t.holdings();
    QCOMPARE(int(hs.size()), n * G);
    // Per rank: unit -> [begin, end) of its parameters' chunk.
    std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> chunks(hs.size());
    std::map<std::string, int64_t> lengths;
    for (const RankHoldings& h : hs) {
      for (const HeldSlice& s : h.items)
        if (s.kind == HoldingKind::Params && s.tensor.ends_with(" (flat)")) {
          chunks[size_t(h.rank)][s.tensor] = {s.begin, s.end};
          lengths[s.tensor] = s.total;
        }
      const HeldGroup* shard = groupNamed(h, "shard");
      const HeldGroup* replicas = groupNamed(h, "replicas");
      QVERIFY(shard && replicas);
      const int node = h.rank / G, local = h.rank % G;
      std::vector<int> inNode, acrossNodes;
      for (int q = 0; q < G; ++q) inNode.push_back(node * G + q);
      for (int m = 0; m < n; ++m) acrossNodes.push_back(m * G + local);
      QCOMPARE(shard->worldRanks, inNode);
      QCOMPARE(replicas->worldRanks, acrossNodes);
    }
    QVERIFY(!lengths.empty());
    for (const auto& [unit, len] : lengths) {
      for (int r = 0; r < n * G; ++r)  // the replica in the next node holds the same chunk
        QCOMPARE(chunks[size_t(r)].at(unit), chunks[size_t((r + G) % (n * G))].at(unit));
      for (int node = 0; node < n; ++node) {  // the node's chunks tile the unit once
        int64_t at = 0;
        for (int q = 0; q < G; ++q) {
          const auto [b, e] = chunks[size_t(node * G + q)].at(unit);
          QCOMPARE(b, at);
          at = e;
        }
        QCOMPARE(at, len);
      }
    }
  }

  // [SECTION] Refused in one line where it cannot run, naming what is allowed.
  void refusals_data() {
    QTest::addColumn<QString>("change");
    QTest::addColumn<QString>("message");
    QTest::addRow("no zero stage") << "zero 0"
                                   << "zero-shard: belongs to a ZeRO stage (--strategy sync "
                                      "--zero 1, 2 or 3)";
    QTest::addRow("another strategy") << "local-sgd"
                                      << "zero-shard: belongs to a ZeRO stage";
    QTest::addRow("one node") << "no gpus-per-node"
                              << "zero-shard: node shards over the ranks of a node (allowed: "
                                 "with --gpus-per-node G";
    QTest::addRow("G does not divide N") << "gpus-per-node 3"
                                         << "gpus-per-node: 3 does not divide the ranks (4;";
    QTest::addRow("tensor parallel") << "tp 2"
                                     << "zero-shard: node shards sync's data-parallel replicas "
                                        "(allowed: --tp 1";
    QTest::addRow("elastic") << "elastic"
                             << "zero-shard: node keeps a replica per node";
  }
  void refusals() {
    QFETCH(QString, change);
    QFETCH(QString, message);
    RunConfig c = hsdpRun(3, 2, 2);
    if (change == "zero 0") c.zero = 0;
    if (change == "local-sgd") {
      c.zero = 0;
      c.strategy = "local-sgd";
    }
    if (change == "no gpus-per-node") c.gpusPerNode = 0;
    if (change == "gpus-per-node 3") c.gpusPerNode = 3;
    if (change == "tp 2") c.tp = 2;
    if (change == "elastic") {
      c.elastic = true;
      c.fail = "1@3";
    }
    const QString got = QString::fromStdString(c.validate().value_or(""));
    QVERIFY2(got.startsWith(message), qPrintable(got));
    QVERIFY(!got.contains('\n'));
  }

  // The projection models ZeRO over every rank: --project refuses HSDP in one line, exit 2.
  void projectionRefusesHsdp() {
    const test::ProgramResult r = test::runProgram(
        PARALAB_RUN, {"--project", "h100-sxm:16", "--model", "gpt", "--zero", "3", "--zero-shard",
                      "node", "--gpus-per-node", "8"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(), QString("paralab-run: zero-shard: --project projects ZeRO over "
                                      "every data-parallel rank (allowed: --zero-shard all)"));
  }

  // [SECTION] Under mpirun (a process per rank): the same losses and model states per rank as
  // thread ranks, and the same bytes per tier.
  void mpiRunMatchesThreads() {
#if defined(PARALAB_MPIEXEC) && defined(PARALAB_RUN)
    if (qEnvironmentVariableIsEmpty("PARALAB_HSDP_MPI")) QSKIP("runs as the CTest tst_hsdp_mpi");
    const QStringList run = {"--zero",
                             "3",
                             "--zero-shard",
                             "node",
                             "--gpus-per-node",
                             "2",
                             "--dataset",
                             "synthetic",
                             "--hidden",
                             "32",
                             "--batch",
                             "48",
                             "--steps",
                             "3",
                             "--optimizer",
                             "adam",
                             "--lr",
                             "0.002",
                             "--eval-every",
                             "0",
                             "--allreduce",
                             "ring",
                             "--json"};
    const auto mpi = test::runJsonLines(
        PARALAB_MPIEXEC,
        QStringList{"--oversubscribe", "-np", "4", PARALAB_RUN, "--backend", "mpi"} + run, 4);
    const auto thr = test::runJsonLines(PARALAB_RUN, QStringList{"--ranks", "4"} + run, 4);
    QCOMPARE(int(mpi.size()), 4);  // 3 steps and the summary
    QCOMPARE(int(thr.size()), 4);
    for (int s = 0; s < 3; ++s) {
      const auto &a = mpi[size_t(s)], &b = thr[size_t(s)];
      const double la = a["loss"], lb = b["loss"];
      QVERIFY2(std::abs(la - lb) <= 1e-5 * std::abs(lb),
               qPrintable(QString("%1 vs %2").arg(la).arg(lb)));
      QCOMPARE(int(a["ranks"].size()), 4);
      for (int r = 0; r < 4; ++r) {
        const auto &ra = a["ranks"][size_t(r)], &rb = b["ranks"][size_t(r)];
        for (const char* k : {"params", "grads", "optimizer"})
          QCOMPARE(ra["mem"][k].get<int64_t>(), rb["mem"][k].get<int64_t>());
        QCOMPARE(ra["tiers"].dump(), rb["tiers"].dump());
      }
    }
#else
    QSKIP("built without MPI");
#endif
  }
};

QTEST_GUILESS_MAIN(TstHsdp)
#include "tst_hsdp.moc"
