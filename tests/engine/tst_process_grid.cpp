// The rank layout: coordinates round-trip, groups hold the ranks the layout says, and bad
// layouts are named. Run: ctest -R tst_process_grid
#include <QtTest>

#include <mutex>
#include <set>

#include "comm/communicator.h"
#include "parallel/process_grid.h"

using namespace paralab;

namespace {

// A group's world ranks, in group order, learnt by an all-gather of the world rank.
std::vector<int> members(Communicator& c) {
  std::vector<float> mine = {float(c.worldRank())}, all(size_t(c.size()));
  c.allGather(mine.data(), all.data(), 1);
  return std::vector<int>(all.begin(), all.end());
}

}  // namespace

class TstProcessGrid : public QObject {
  Q_OBJECT
 private slots:
  void coordinatesRoundTrip() {
    const GridShape s{2, 2, 2, 2};
    std::set<int> seen;
    for (int r = 0; r < s.world(); ++r) {
      const GridCoords c = ProcessGrid::coordsOf(s, r);
      QCOMPARE(ProcessGrid::rankOf(s, c.dp, c.tp, c.pp), r);
      seen.insert(r);
    }
    QCOMPARE(int(seen.size()), 8);
    // Tensor-parallel partners are neighbours (the fast links of one node).
    QCOMPARE(ProcessGrid::coordsOf(s, 1).tp, 1);
    QCOMPARE(ProcessGrid::coordsOf(s, 1).dp, 0);
    QCOMPARE(ProcessGrid::coordsOf(s, 4).pp, 1);
  }

  void badLayoutsAreNamed() {
    QVERIFY(QString::fromStdString(*ProcessGrid::validate({2, 2, 1, 1}, 8)).startsWith("ranks:"));
    QVERIFY(QString::fromStdString(*ProcessGrid::validate({4, 1, 1, 3}, 4)).startsWith("ep:"));
    QVERIFY(!ProcessGrid::validate({2, 2, 2, 2}, 8));
  }

  void groupsHoldTheRightRanks() {
    const GridShape s{2, 2, 2, 2};
    ThreadWorld world(8);
    std::mutex m;
    std::vector<std::vector<int>> dpMembers(8), tpMembers(8), ppMembers(8);
    world.run([&](Communicator& comm) {
      ProcessGrid g(s, comm);
      const auto dp = members(g.dp()), tp = members(g.tp()), pp = members(g.pp());
      std::lock_guard lock(m);
      dpMembers[size_t(comm.rank())] = dp;
      tpMembers[size_t(comm.rank())] = tp;
      ppMembers[size_t(comm.rank())] = pp;
    });
    for (int r = 0; r < 8; ++r) {
      const GridCoords c = ProcessGrid::coordsOf(s, r);
      for (int i = 0; i < 2; ++i) {
        QCOMPARE(dpMembers[size_t(r)][size_t(i)], ProcessGrid::rankOf(s, i, c.tp, c.pp));
        QCOMPARE(tpMembers[size_t(r)][size_t(i)], ProcessGrid::rankOf(s, c.dp, i, c.pp));
        QCOMPARE(ppMembers[size_t(r)][size_t(i)], ProcessGrid::rankOf(s, c.dp, c.tp, i));
      }
    }
  }

  // With a cp axis (dp 2 x cp 2 x tp 2 = 8): cp varies between tp and dp (Megatron-Core's
  // order), the cp group holds the ranks of one (dp, pp, tp), and the replicas, whose gradients
  // are summed, are dp x cp: every rank of one (pp, tp).
  void contextParallelGroups() {
    const GridShape s{2, 2, 1, 1, 2};
    QCOMPARE(s.world(), 8);
    for (int r = 0; r < 8; ++r) {
      const GridCoords c = ProcessGrid::coordsOf(s, r);
      QCOMPARE(ProcessGrid::rankOf(s, c.dp, c.tp, c.pp, c.cp), r);
    }
    QCOMPARE(ProcessGrid::coordsOf(s, 2).cp, 1);  // tp fastest, then cp
    QCOMPARE(ProcessGrid::coordsOf(s, 4).dp, 1);
    ThreadWorld world(8);
    std::mutex m;
    std::vector<std::vector<int>> cpMembers(8), replicaMembers(8), dpMembers(8);
    world.run([&](Communicator& comm) {
      ProcessGrid g(s, comm);
      const auto cp = members(*g.cp()), rep = members(g.replicas()), dp = members(g.dp());
      std::lock_guard lock(m);
      cpMembers[size_t(comm.rank())] = cp;
      replicaMembers[size_t(comm.rank())] = rep;
      dpMembers[size_t(comm.rank())] = dp;
    });
    for (int r = 0; r < 8; ++r) {
      const GridCoords c = ProcessGrid::coordsOf(s, r);
      QCOMPARE(int(cpMembers[size_t(r)].size()), 2);
      QCOMPARE(int(replicaMembers[size_t(r)].size()), 4);
      for (int i = 0; i < 2; ++i) {
        QCOMPARE(cpMembers[size_t(r)][size_t(i)], ProcessGrid::rankOf(s, c.dp, c.tp, c.pp, i));
        QCOMPARE(dpMembers[size_t(r)][size_t(i)], ProcessGrid::rankOf(s, i, c.tp, c.pp, c.cp));
      }
      for (int d = 0; d < 2; ++d)
        for (int k = 0; k < 2; ++k)
          QCOMPARE(replicaMembers[size_t(r)][size_t(d * 2 + k)],
                   ProcessGrid::rankOf(s, d, c.tp, c.pp, k));
    }
    QVERIFY(QString::fromStdString(*ProcessGrid::validate({2, 2, 1, 1, 2}, 4)).startsWith("ranks:"));
  }
};

QTEST_GUILESS_MAIN(TstProcessGrid)
#include "tst_process_grid.moc"
