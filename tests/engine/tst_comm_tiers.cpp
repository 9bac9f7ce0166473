// Two tiers of links (--gpus-per-node, --link inside a node, --node-link between nodes): every
// byte on its tier in the accounting, the tiered step model, the hierarchical all-reduce's
// results and bytes per tier against their formulas and below the flat ring's between nodes,
// and a training run with it equal to the serial one. Run: ctest -R tst_comm_tiers
#include <QtTest>
#include <mutex>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "comm/link_model.h"
#include "loss_trajectory.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

CommOptions nodesOf(int gpusPerNode) {
  CommOptions o;
  o.gpusPerNode = gpusPerNode;
  return o;
}

// Each rank's traffic after `rankMain`, by rank; any rank's error fails the run.
std::vector<CommTraffic> trafficOf(int n, CommOptions options,
                                   const std::function<void(Communicator&)>& rankMain) {
  std::vector<CommTraffic> out(static_cast<size_t>(n));
  ThreadWorld world(n, options);
  world.run([&](Communicator& comm) {
    rankMain(comm);
    out[size_t(comm.rank())] = comm.accounting().take();
  });
  return out;
}

int64_t interSent(const std::vector<CommTraffic>& t) {
  int64_t s = 0;
  for (const CommTraffic& r : t) s += r.tiers.interSent;
  return s;
}

// The value rank r puts at index i: exact in fp32 when summed over a few ranks.
float valueAt(int r, int64_t i) { return float((r + 1) * 3 + i % 11); }

}  // namespace

class TstCommTiers : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The tiers
  void sameNodeIsRankOverG() {
    QVERIFY(sameNode(0, 1, 2));
    QVERIFY(!sameNode(1, 2, 2));
    QVERIFY(sameNode(4, 7, 4));
    QVERIFY(!sameNode(3, 4, 4));
    QVERIFY(sameNode(0, 63, 0));  // G = 0: one node
    QCOMPARE(tierBetween(2, 3, 2), LinkTier::Intra);
    QCOMPARE(tierBetween(2, 5, 2), LinkTier::Inter);
  }

  // A step takes as long as its slower tier; a tier that moved nothing costs nothing.
  void tieredStepIsTheSlowerTier() {
    const LinkProfile nv{"nvlink", "NVLink", 1.0, 450}, ib{"infiniband", "IB", 2.0, 50};
    TierLoad load;
    load.add(LinkTier::Intra, 4500, 900);
    QCOMPARE(tieredStepNs(nv, ib, load), nv.stepNs(4500, 900));  // 1000 + 10 ns
    load.add(LinkTier::Inter, 500, 0);
    QCOMPARE(tieredStepNs(nv, ib, load), ib.stepNs(500, 0));  // 2000 + 10 ns > 1010 ns
    QCOMPARE(tieredStepNs(nv, ib, TierLoad{}), nv.stepNs(0, 0));
    TierLoad interOnly;
    interOnly.add(LinkTier::Inter, 0, 5'000'000);
    QCOMPARE(tieredStepNs(nv, ib, interOnly), int64_t(2000 + 100'000));
  }

  // Each rank's link to a peer: --link inside its node, --node-link to other nodes.
  void linkToFollowsTheNode() {
    CommOptions o = nodesOf(2);
    o.link = "nvlink";
    o.nodeLink = "infiniband";
    std::mutex mutex;
    QStringList wrong;
    ThreadWorld world(4, o);
    world.run([&](Communicator& comm) {
      for (int q = 0; q < 4; ++q) {
        const std::string want = q / 2 == comm.rank() / 2 ? "nvlink" : "infiniband";
        if (comm.linkTo(q).name != want) {
          std::lock_guard lock(mutex);
          wrong << QString("%1 -> %2: %3").arg(comm.rank()).arg(q).arg(comm.linkTo(q).name.c_str());
        }
      }
    });
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join("; ")));
  }

  // The accounting puts every byte on the tier of its link: the flat ring over 2 nodes x 2
  // sends all of a node-edge rank's 2(N-1)/N · S across, none of the others'.
  void ringBytesByTier() {
    const int64_t m = 1000, S = 4 * m;
    const auto t = trafficOf(4, nodesOf(2), [&](Communicator& comm) {
      std::vector<float> g(m, 1.f);
      comm.allReduce(g.data(), g.data(), m, ReduceOp::Sum, AllReduceAlgo::Ring);
    });
    for (int r = 0; r < 4; ++r) {
      const bool edge = (r + 1) % 4 / 2 != r / 2;  // its right neighbour is in the other node
      const int64_t all = 2 * 3 * S / 4;
      QCOMPARE(t[r].gpusPerNode, 2);
      QCOMPARE(t[r].tiers.interSent, edge ? all : 0);
      QCOMPARE(t[r].tiers.intraSent, edge ? 0 : all);
      QCOMPARE(t[r].tiers.intraSent + t[r].tiers.interSent, t[r].bytesSent);
      QCOMPARE(t[r].tiers.intraRecv + t[r].tiers.interRecv, t[r].bytesRecv);
    }
    QCOMPARE(interSent(t), 2 * (2 * 3 * S / 4));
  }

  // [SECTION] The hierarchical all-reduce
  void hierarchicalSums_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addColumn<qint64>("count");
    for (auto [n, g] : {std::pair{4, 2}, {8, 4}, {8, 2}, {4, 4}, {4, 1}, {6, 3}})
      for (qint64 m : {0, 1, 7, 1000, 4099})
        QTest::addRow("%d ranks, %d per node, %lld floats", n, g, m) << n << g << m;
  }
  void hierarchicalSums() {
    QFETCH(int, ranks);
    QFETCH(int, gpusPerNode);
    QFETCH(qint64, count);
    std::mutex mutex;
    QStringList wrong;
    ThreadWorld world(ranks, nodesOf(gpusPerNode));
    world.run([&](Communicator& comm) {
      const size_t len = static_cast<size_t>(count);
      std::vector<float> a(len), sum(len);
      for (int64_t i = 0; i < count; ++i) a[size_t(i)] = valueAt(comm.rank(), i);
      comm.allReduce(a.data(), sum.data(), count, ReduceOp::Sum, AllReduceAlgo::Hierarchical);
      std::vector<float> inPlace = a;
      comm.allReduce(inPlace.data(), inPlace.data(), count, ReduceOp::Avg,
                     AllReduceAlgo::Hierarchical);
      for (int64_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < ranks; ++r) want += valueAt(r, i);
        if (sum[size_t(i)] != want || std::abs(inPlace[size_t(i)] - want / ranks) > 1e-5f * want) {
          std::lock_guard lock(mutex);
          wrong << QString("rank %1 [%2]: %3, avg %4, want %5")
                       .arg(comm.rank())
                       .arg(i)
                       .arg(sum[size_t(i)])
                       .arg(inPlace[size_t(i)])
                       .arg(want);
          return;
        }
      }
    });
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong.mid(0, 4).join("; ")));
  }

  // Per rank, L ranks per node and M nodes, b = count / L floats: inside the node the
  // reduce-scatter and all-gather send 2(L-1)·b·4 bytes, across the ring over b floats
  // 2(M-1)/M·b·4; over 2 nodes x 2, 2S between nodes in all against the flat ring's 3S.
  void hierarchicalBytesPerTier_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addRow("2 nodes x 2") << 4 << 2;
    QTest::addRow("2 nodes x 4") << 8 << 4;
    QTest::addRow("4 nodes x 2") << 8 << 2;
  }
  void hierarchicalBytesPerTier() {
    QFETCH(int, ranks);
    QFETCH(int, gpusPerNode);
    const int L = gpusPerNode, M = ranks / gpusPerNode;
    const int64_t m = 4000, S = 4 * m, b = m / L;  // L·M divides m: no padding, even chunks
    const auto hier = trafficOf(ranks, nodesOf(gpusPerNode), [&](Communicator& comm) {
      std::vector<float> g(m, 1.f);
      comm.allReduce(g.data(), g.data(), m, ReduceOp::Sum, AllReduceAlgo::Hierarchical);
    });
    for (int r = 0; r < ranks; ++r) {
      QCOMPARE(hier[r].tiers.intraSent, 2 * (L - 1) * b * 4);
      QCOMPARE(hier[r].tiers.interSent, 2 * (M - 1) * b * 4 / M);
      QCOMPARE(hier[r].tiers.intraRecv, hier[r].tiers.intraSent);
      QCOMPARE(hier[r].tiers.interRecv, hier[r].tiers.interSent);
      // Its three collectives, each on its group: the node's and the one across the nodes.
      QStringList ops;
      for (const CommOpTotals& o : hier[r].ops)
        ops << QString("%1 %2").arg(commOpName(o.op), o.group.c_str());
      ops.sort();
      QCOMPARE(ops, QStringList({"allgather world:node", "allreduce world:nodes",
                                 "reducescatter world:node"}));
    }
    QCOMPARE(interSent(hier), 2 * (M - 1) * S);  // N · 2(M-1)/M · S/L
    const auto ring = trafficOf(ranks, nodesOf(gpusPerNode), [&](Communicator& comm) {
      std::vector<float> g(m, 1.f);
      comm.allReduce(g.data(), g.data(), m, ReduceOp::Sum, AllReduceAlgo::Ring);
    });
    // The flat ring: each of the M node-edge ranks sends all its 2(N-1)/N · S across.
    QCOMPARE(interSent(ring), M * 2 * (ranks - 1) * S / ranks);
    QVERIFY2(interSent(hier) < interSent(ring),
             qPrintable(QString("hierarchical %1 B between nodes, flat ring %2 B")
                            .arg(interSent(hier))
                            .arg(interSent(ring))));
  }

  // A group with more of its ranks in one node than in another cannot pair chunk l across
  // nodes: every rank refuses, naming the nodes' counts.
  void unevenNodesRefused() {
    QString message;
    try {
      ThreadWorld world(6, nodesOf(3));
      world.run([&](Communicator& comm) {
        // {0, 2, 4}: nodes 0, 0, 1; {1, 3, 5}: nodes 0, 1, 1 (whichever refuses first)
        auto even = comm.split(comm.rank() % 2, comm.rank(), "dp");
        float x = 1;
        even->allReduce(&x, &x, 1, ReduceOp::Sum, AllReduceAlgo::Hierarchical);
      });
    } catch (const CommError& e) {
      message = e.what();
    }
    const QRegularExpression refusal(
        "allreduce: hierarchical over group 'dp' needs as many of its ranks in every node "
        "\\(node 0 holds (2, node 1 holds 1|1, node 1 holds 2)\\)");
    QVERIFY2(message.contains(refusal), qPrintable(message));
  }

  // [SECTION] A run: settings, equal to serial, the tiers in every step's record
  void settingsRefused_data() {
    QTest::addColumn<QString>("allreduce");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addColumn<QString>("nodeLink");
    QTest::addColumn<QString>("message");
    QTest::addRow("hierarchical, one node")
        << "hierarchical" << 0 << "none"
        << "allreduce: hierarchical needs nodes to be hierarchical over (--gpus-per-node G)";
    QTest::addRow("3 per node of 4 ranks")
        << "default" << 3 << "none"
        << "gpus-per-node: 3 does not divide the ranks (4; allowed: a divisor of it, every node "
           "full)";
    QTest::addRow("node link, one node")
        << "default" << 0 << "infiniband"
        << "node-link: belongs to ranks in more than one node (--gpus-per-node)";
  }
  void settingsRefused() {
    QFETCH(QString, allreduce);
    QFETCH(int, gpusPerNode);
    QFETCH(QString, nodeLink);
    QFETCH(QString, message);
    RunConfig c = test::smallRun(32, 2, 48);
    c.ranks = 4;
    c.allreduce = allreduce.toStdString();
    c.gpusPerNode = gpusPerNode;
    c.nodeLink = nodeLink.toStdString();
    const QString got = QString::fromStdString(c.validate().value_or(""));
    QVERIFY2(got.startsWith(message), qPrintable(got));
  }

  void hierarchicalEqualsSerial_data() {
    QTest::addColumn<QString>("version");
    QTest::addColumn<int>("tp");
    QTest::addRow("per-tensor") << "per-tensor" << 1;
    QTest::addRow("bucket") << "bucket" << 1;
    QTest::addRow("tp 2 x dp 2") << "bucket" << 2;
  }
  void hierarchicalEqualsSerial() {
    QFETCH(QString, version);
    QFETCH(int, tp);
    RunConfig serial = test::smallRun(32, 2, 50);
    serial.bucketMb = 0.01;
    RunConfig parallel = serial;
    parallel.ranks = 4;
    parallel.tp = tp;
    parallel.dpVersion = *fromName<DpVersion>(version.toStdString());
    parallel.gpusPerNode = 2;
    parallel.allreduce = "hierarchical";
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "hierarchical vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, hierarchical vs serial");
  }

  // Every step's record carries the nodes and each rank's bytes by tier, and the hierarchical
  // all-reduce sends fewer bytes between the nodes than the flat ring on the same run.
  void stepRecordsTiers() {
    RunConfig c = test::smallRun(32, 2, 48);
    c.ranks = 4;
    c.gpusPerNode = 2;
    c.dpVersion = DpVersion::PerTensor;
    int64_t inter[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      c.allreduce = k == 0 ? "ring" : "hierarchical";
      Trainer t(c);
      t.step();
      const StepMetrics m = t.step();
      QCOMPARE(m.gpusPerNode, std::optional<int>(2));
      for (const RankMetrics& r : m.ranks) {
        QVERIFY(r.tiers);
        QCOMPARE(r.tiers->intraSent + r.tiers->interSent, r.bytesSent);
        inter[k] += r.tiers->interSent;
      }
      QVERIFY(stepMetricsFromJson(toJson(m)) == m);  // the JSON line round-trips them
    }
    QVERIFY2(
        inter[1] < inter[0],
        qPrintable(
            QString("hierarchical %1 B between nodes, ring %2 B").arg(inter[1]).arg(inter[0])));
  }
};

QTEST_GUILESS_MAIN(TstCommTiers)
#include "tst_comm_tiers.moc"
