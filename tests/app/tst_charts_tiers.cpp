// The link heatmap and the traffic chart over two tiers (--gpus-per-node): the heatmap frames
// each node's block and says which cells crossed between nodes, the traffic bars stack each
// rank's bytes by tier exactly as the step holds them, and a real run of 2 nodes x 2 draws them.
// Run: ctest -R tst_charts_tiers --output-on-failure
#include <QTest>

#include "chart_inputs.h"

using namespace paralab;
using namespace paralab::test;

namespace {

// The synthetic step of 4 ranks as 2 nodes of 2: each rank's bytes split by the tier of the
// ranks it sent to, received the same way.
Snapshot twoNodes() {
  Snapshot s = syntheticSnapshot(4);
  for (StepMetrics& m : s.steps) {
    m.gpusPerNode = 2;
    for (RankMetrics& r : m.ranks) {
      TierBytes t;
      for (int to = 0; to < 4; ++to)
        (to / 2 == r.rank / 2 ? t.intraSent : t.interSent) += r.sentTo[size_t(to)];
      t.intraRecv = r.bytesRecv / 3, t.interRecv = r.bytesRecv - t.intraRecv;
      r.bytesSent = t.intraSent + t.interSent;
      r.tiers = t;
    }
  }
  return s;
}

}  // namespace

class TestChartsTiers : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QApplication::setStyle("Fusion");
    QApplication::setPalette(QApplication::style()->standardPalette());
  }

  void heatmapFramesTheNodes() {
    const Snapshot s = twoNodes();
    LinkHeatmap chart;
    chart.showSnapshot(s);
    QCOMPARE(chart.gpusPerNode(), 2);
    QCOMPARE(chart.nodeFrames().size(), 2);
    // Node k's frame is its block: ranks 2k and 2k + 1 on both axes.
    for (int k = 0; k < 2; ++k) {
      const QCPItemRect* f = chart.nodeFrames()[k];
      QCOMPARE(f->topLeft->coords(), QPointF(2 * k - 0.5, 2 * k - 0.5));
      QCOMPARE(f->bottomRight->coords(), QPointF(2 * k + 1.5, 2 * k + 1.5));
    }
    QVERIFY(!chart.betweenNodes(0, 1) && !chart.betweenNodes(3, 2));
    QVERIFY(chart.betweenNodes(1, 2) && chart.betweenNodes(0, 3));
    QVERIFY(chart.xAxis->label().contains("framed"));
    // The cells are still the bytes sent.
    for (const RankMetrics& r : s.steps.back().ranks)
      for (int to = 0; to < 4; ++to)
        if (r.sentTo[size_t(to)] > 0)
          QCOMPARE(chart.cell(r.rank, to) * chart.unitBytes(), double(r.sentTo[size_t(to)]));
    const QStringList csv = csvLines(chart);
    QCOMPARE(csv[0], QString("from_rank,node,to_rank_0_bytes,to_rank_1_bytes,to_rank_2_bytes,"
                             "to_rank_3_bytes"));
    QVERIFY(csv[3].startsWith("2,1,"));
    // One node: no frames, the CSV as before.
    Snapshot one = syntheticSnapshot(4);
    chart.showSnapshot(one);
    QCOMPARE(chart.nodeFrames().size(), 0);
    QVERIFY(!chart.betweenNodes(0, 3));
    QVERIFY(csvLines(chart)[0].startsWith("from_rank,to_rank_0"));
  }

  void trafficBarsSplitByTier() {
    const Snapshot s = twoNodes();
    TrafficChart chart;
    chart.showSnapshot(s);
    QVERIFY(chart.byTier());
    QCOMPARE(chart.layers().size(), 2);
    QVERIFY(chart.layers()[0]->name().startsWith("inside a node"));
    QCOMPARE(chart.layers()[1]->name(), QString("between nodes"));
    const double unit = chart.unitBytes();
    for (const RankMetrics& r : s.steps.back().ranks) {
      const TierBytes& t = *r.tiers;
      QCOMPARE(bytesAt(chart.layers()[0], r.rank + TrafficChart::kSentOffset, unit),
               double(t.intraSent));
      QCOMPARE(bytesAt(chart.layers()[1], r.rank + TrafficChart::kSentOffset, unit),
               double(t.interSent));
      QCOMPARE(bytesAt(chart.layers()[0], r.rank + TrafficChart::kRecvOffset, unit),
               double(t.intraRecv));
      QCOMPARE(bytesAt(chart.layers()[1], r.rank + TrafficChart::kRecvOffset, unit),
               double(t.interRecv));
    }
    const QStringList csv = csvLines(chart);
    QCOMPARE(csv[0], QString("rank,tier,bytes_sent,bytes_recv"));
    const TierBytes& t1 = *s.steps.back().ranks[1].tiers;
    QVERIFY(csv.contains(QString("1,inter-node,%1,%2").arg(t1.interSent).arg(t1.interRecv)));
    // One node: the bars by op as before.
    chart.showSnapshot(syntheticSnapshot(4));
    QVERIFY(!chart.byTier());
    QCOMPARE(csvLines(chart)[0], QString("rank,op,group,calls,bytes_sent,bytes_recv,ms"));
  }

  // A real run over 2 nodes x 2 with the hierarchical all-reduce: what the engine counted per
  // tier is what the charts draw, and some of it crossed between the nodes.
  void realRunOfTwoNodes() {
    RunConfig c = quickRun();
    c.steps = 3, c.ranks = 4, c.gpusPerNode = 2, c.allreduce = "hierarchical";
    c.link = "nvlink", c.nodeLink = "infiniband";
    const Snapshot s = runToEnd(c);
    QVERIFY(!s.steps.empty());
    const StepMetrics& last = s.steps.back();
    TrafficChart traffic;
    traffic.showSnapshot(s);
    QVERIFY(traffic.byTier());
    int64_t inter = 0;
    for (const RankMetrics& r : last.ranks) {
      QVERIFY(r.tiers);
      inter += r.tiers->interSent;
      QCOMPARE(
          bytesAt(traffic.layers()[1], r.rank + TrafficChart::kSentOffset, traffic.unitBytes()),
          double(r.tiers->interSent));
    }
    QVERIFY(inter > 0);
    LinkHeatmap links;
    links.showSnapshot(s);
    QCOMPARE(links.nodeFrames().size(), 2);
    saveScreenshot(links, "links-two-nodes");
    saveScreenshot(traffic, "traffic-two-nodes");
  }
};

QTEST_MAIN(TestChartsTiers)
#include "tst_charts_tiers.moc"
