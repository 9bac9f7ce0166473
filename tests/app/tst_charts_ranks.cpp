// The lab window's per-rank charts, offscreen: memory, traffic and the link heatmap fed from a
// synthetic Snapshot show exactly the bytes in it, the timeline draws every span (and the
// context-parallel ring), the Chrome trace parses, and the holdings map draws real sharding
// metadata with every label fitted to its room. Run: ctest -R tst_charts_ranks --output-on-failure
#include <QSet>
#include <QTest>
#include <algorithm>
#include <map>
#include <tuple>

#include "chart_inputs.h"
#include "charts/overlap_chart.h"
#include "holdings_inputs.h"
#include "text_boxes.h"

using namespace paralab;
using namespace paralab::test;

class TestChartsRanks : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void memoryBarsAreTheSnapshotBytes();
  void trafficBarsAreTheCountedBytes();
  void heatmapCellsAreSentTo();
  void overlapBarsAreTheMeter();
  void timelineDrawsEverySpan();
  void timelineDrawsTheRing();
  void chromeTraceParses();
  void holdingsMapDrawsTheSlices();
  void holdingsMapLabelsFitEveryRoom();
  void holdingsMapFollowsTheLayout_data();
  void holdingsMapFollowsTheLayout();
};

void TestChartsRanks::initTestCase() {
  QApplication::setStyle("Fusion");
  QApplication::setPalette(QApplication::style()->standardPalette());
}

void TestChartsRanks::memoryBarsAreTheSnapshotBytes() {
  const Snapshot s = syntheticSnapshot(4);
  MemoryChart chart;
  chart.showSnapshot(s);
  const StepMetrics& last = s.steps.back();
  const double unit = chart.unitBytes();
  QCOMPARE(unit, 1024.0 * 1024.0);  // the largest value is a few MiB
  for (const RankMetrics& r : last.ranks)
    for (int c = 0; c < kMemCategories; ++c) {
      const double drawn = valueAt(chart.bars(MemCategory(c)), r.rank - 0.12);
      QCOMPARE(drawn * unit, double(r.mem.current[size_t(c)]));  // not recomputed: the bytes
    }
  // The reference: 4P + 12P/N of P = 100000 at N = 4, beside each rank.
  QCOMPARE(chart.referenceBars()->dataCount(), 4);
  QCOMPARE(valueAt(chart.referenceBars(), 0.26) * unit, 400000.0 + 300000.0);
  QVERIFY(chart.referenceBars()->name().contains("4P + 12P/N"));
  QVERIFY(chart.referenceBars()->name().contains("reference"));
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,params_bytes,grads_bytes,optimizer_bytes,activations_bytes,"
                           "comm_bytes,workspace_bytes,peak_bytes,model_states_reference_bytes"));
  QCOMPARE(csv.size(), 5);
  const MemorySnapshot& m2 = last.ranks[2].mem;
  QCOMPARE(csv[3], QString("2,%1,%2,%3,%4,%5,%6,%7,700000")
                       .arg(m2.current[0])
                       .arg(m2.current[1])
                       .arg(m2.current[2])
                       .arg(m2.current[3])
                       .arg(m2.current[4])
                       .arg(m2.current[5])
                       .arg(m2.peakTotal));
  // No formula for a tensor-parallel run: no reference bars.
  Snapshot tp = s;
  tp.config.tp = 2, tp.config.zero = 0;
  chart.showSnapshot(tp);
  QCOMPARE(chart.referenceBars()->dataCount(), 0);
}

void TestChartsRanks::trafficBarsAreTheCountedBytes() {
  const Snapshot s = syntheticSnapshot(4);
  TrafficChart chart;
  chart.showSnapshot(s);
  QCOMPARE(chart.layers().size(), 2);  // allgather (tp), allreduce (dp)
  const double unit = chart.unitBytes();
  for (const RankMetrics& r : s.steps.back().ranks)
    for (const OpTraffic& o : r.ops) {
      QCPBars* layer = nullptr;
      for (QCPBars* b : chart.layers())
        if (b->name() == QString("%1 (%2)").arg(o.op.c_str(), o.group.c_str())) layer = b;
      QVERIFY(layer);
      QCOMPARE(bytesAt(layer, r.rank + TrafficChart::kSentOffset, unit), double(o.bytesSent));
      QCOMPARE(bytesAt(layer, r.rank + TrafficChart::kRecvOffset, unit), double(o.bytesRecv));
    }
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,op,group,calls,bytes_sent,bytes_recv,ms"));
  QCOMPARE(csv.size(), 1 + 4 * 2);
  QCOMPARE(csv[1], QString("0,allreduce,dp,3,500000,500001,1.5"));

  // A step without the per-op split still shows the rank's totals, as one layer.
  Snapshot bare = s;
  for (RankMetrics& r : bare.steps.back().ranks) r.ops.clear();
  chart.showSnapshot(bare);
  QCOMPARE(chart.layers().size(), 1);
  const RankMetrics& r1 = bare.steps.back().ranks[1];
  QCOMPARE(bytesAt(chart.layers()[0], 1 + TrafficChart::kSentOffset, chart.unitBytes()),
           double(r1.bytesSent));
}

// The overlap chart stacks each rank's meter as the engine measured it: compute alone
// (compute − hidden), hidden, exposed and idle, adding up to the step; the share of the
// rank's communication that hid above its bar; the same figures in its CSV. A real run of
// bucketed data parallelism over an emulated ethernet is saved as screenshots/overlap.png.
void TestChartsRanks::overlapBarsAreTheMeter() {
  Snapshot s = syntheticSnapshot(4);
  for (RankMetrics& r : s.steps.back().ranks)
    r.overlap = OverlapMeter{.computeMs = 10.0 + r.rank, .commMs = 4.0 + r.rank,
                             .hiddenMs = 3.0, .exposedMs = 1.0 + r.rank, .idleMs = 0.5 * r.rank};
  s.steps.back().ranks[3].overlap->hiddenMs = 0, s.steps.back().ranks[3].overlap->exposedMs = 7;
  OverlapChart chart;
  chart.resize(800, 500);  // room for the shares in words
  chart.showSnapshot(s);
  chart.replot();  // laid out at that size: the labels fitted to it
  for (const RankMetrics& r : s.steps.back().ranks) {
    const OverlapMeter& m = *r.overlap;
    QCOMPARE(valueAt(chart.bars(OverlapChart::ComputeAlone), r.rank), m.computeMs - m.hiddenMs);
    QCOMPARE(valueAt(chart.bars(OverlapChart::Exposed), r.rank), m.exposedMs);
    if (r.rank > 0) QCOMPARE(valueAt(chart.bars(OverlapChart::Idle), r.rank), m.idleMs);
  }
  QCOMPARE(valueAt(chart.bars(OverlapChart::Hidden), 1), 3.0);
  QVERIFY(std::isnan(valueAt(chart.bars(OverlapChart::Hidden), 3)));  // none: no bar
  QCOMPARE(chart.shareLabels().size(), 4);
  QCOMPARE(chart.shareLabels()[0]->text(), QString("75 % hidden"));  // 3 of 4 ms
  QCOMPARE(chart.shareLabels()[3]->text(), QString("0 % hidden"));
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,compute_ms,comm_ms,hidden_ms,exposed_ms,idle_ms,hidden_share"));
  QCOMPARE(csv.size(), 5);
  QCOMPARE(csv[2], QString("1,11,5,3,2,0.5,0.6"));

  // A step without the meter (spans not recorded): the placeholder says why.
  Snapshot bare = s;
  for (RankMetrics& r : bare.steps.back().ranks) r.overlap.reset();
  chart.showSnapshot(bare);
  QCOMPARE(chart.pointCount(), 0);

  RunConfig c = quickRun();
  c.steps = 4, c.ranks = 4, c.link = "ethernet", c.bucketMb = 0.02;
  OverlapChart run;
  run.showSnapshot(runToEnd(c));
  QVERIFY(run.bars(OverlapChart::Hidden)->dataCount() > 0);
  saveScreenshot(run, "overlap");
}

void TestChartsRanks::heatmapCellsAreSentTo() {
  const Snapshot s = syntheticSnapshot(4);
  LinkHeatmap chart;
  chart.showSnapshot(s);
  const double unit = chart.unitBytes();
  for (const RankMetrics& r : s.steps.back().ranks)
    for (int to = 0; to < 4; ++to) {
      const int64_t b = r.sentTo[size_t(to)];
      if (b == 0)
        QVERIFY(std::isnan(chart.cell(r.rank, to)));  // no traffic: no colour
      else
        QCOMPARE(chart.cell(r.rank, to) * unit, double(b));
    }
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0],
           QString("from_rank,to_rank_0_bytes,to_rank_1_bytes,to_rank_2_bytes,to_rank_3_bytes"));
  const auto& row3 = s.steps.back().ranks[3].sentTo;
  QCOMPARE(csv[4], QString("3,%1,%2,%3,0").arg(row3[0]).arg(row3[1]).arg(row3[2]));
}

void TestChartsRanks::timelineDrawsEverySpan() {
  const Snapshot s = syntheticSnapshot(2);
  TimelineChart chart;
  chart.resize(800, 500);
  chart.showSnapshot(s);
  // Only the last kSteps steps, every span of them, in its rank's row.
  int spans = 0, idle = 0;
  std::set<int64_t> steps;
  for (const TimelineChart::Bar& b : chart.bars()) {
    steps.insert(b.step);
    if (b.kind == SpanKind::Idle)
      ++idle;
    else
      ++spans;
  }
  QCOMPARE(int(steps.size()), TimelineChart::kSteps);
  QCOMPARE(*steps.begin(), int64_t(5 - TimelineChart::kSteps + 1));
  QCOMPARE(spans, 2 * 5 * TimelineChart::kSteps);
  // The gap between forward and backward, and rank 0 ends before rank 1: idle bars.
  QVERIFY(idle >= 2 * TimelineChart::kSteps);
  // Times: from the first span drawn, in ms; a comm span keeps its bytes and op.
  const auto comm = std::find_if(chart.bars().begin(), chart.bars().end(),
                                 [](const auto& b) { return b.kind == SpanKind::Comm; });
  QVERIFY(comm != chart.bars().end());
  QCOMPARE(comm->startMs, 4.0);
  QCOMPARE(comm->endMs, 7.5);
  QCOMPARE(comm->bytes, int64_t(1 << 20));
  // Hover: op, bytes and duration; over the thin communication row, not the compute row.
  const QString hover = chart.describeAt(5.0, TimelineChart::commRow(0).center());
  QVERIFY2(
      hover.contains("allreduce ring") && hover.contains("1.00 MiB") && hover.contains("3.500 ms"),
      qPrintable(hover));
  QVERIFY(chart.describeAt(5.0, TimelineChart::computeRow(0).center()).contains("backward"));
  // Waiting: the all-reduce outlasts backward by 0.5 ms (7.0 -> 7.5) with nothing to compute,
  // once per rank and step, hatched in the compute row and named on hover.
  QCOMPARE(int(chart.waiting().size()), 2 * TimelineChart::kSteps);
  for (const TimelineChart::Bar& w : chart.waiting())
    QVERIFY2(qFuzzyCompare(w.endMs - w.startMs, 0.5),
             qPrintable(QString::number(w.endMs - w.startMs)));
  QCOMPARE(chart.waiting().front().startMs, 7.0);
  const QString waitHover = chart.describeAt(7.25, TimelineChart::computeRow(0).center());
  QVERIFY2(waitHover.contains("waiting"), qPrintable(waitHover));
  QCOMPARE(chart.pointCount(), int(chart.bars().size()));
  const QStringList csv = csvLines(chart);
  QCOMPARE(csv[0], QString("rank,row,kind,op,step,start_ms,end_ms,duration_ms,bytes"));
  QCOMPARE(csv.size(), 1 + int(chart.bars().size()));
  // Zoomed by the user: newer snapshots wait until a double-click.
  QVERIFY(chart.following());
  chart.xAxis->setRange(1, 2);
  QVERIFY(!chart.following());
}

// Context parallelism's ring (ring_attention.h): a block in flight is drawn in a lane of its
// own, cut where the rank computed (hidden) and where not (exposed), measured from the spans:
// in flight 0 -> 2 ms, forward 0.1 -> 1.5 ms, so 1.4 of 2 ms hid.
void TestChartsRanks::timelineDrawsTheRing() {
  auto ns = [](double ms) { return int64_t(ms * 1e6); };
  Snapshot s;
  s.spans = {
      {Span{SpanKind::Comm, ns(0), ns(0.1), 4096, "send p2p", 1},
       Span{SpanKind::Comm, ns(0), ns(2), 4096, "send→recv · ring K/V forward, step 1 of 1", 1},
       Span{SpanKind::Forward, ns(0.1), ns(1.5), 0, "", 1},
       Span{SpanKind::Comm, ns(1.5), ns(2.2), 4096, "recv p2p", 1}}};
  TimelineChart chart;
  chart.resize(800, 400);
  chart.showSnapshot(s);
  int ring = 0;
  for (const TimelineChart::Bar& b : chart.bars()) ring += TimelineChart::isRingTransfer(b);
  QCOMPARE(ring, 1);
  QVERIFY(qFuzzyCompare(chart.ringHiddenShare(), 0.7));
  double hidden = 0, exposed = 0;
  for (const TimelineChart::Bar& p : chart.ringParts())
    (p.op == "hidden" ? hidden : exposed) += p.endMs - p.startMs;
  QVERIFY(qFuzzyCompare(hidden, 1.4));
  QVERIFY(qFuzzyCompare(exposed, 0.6));  // 0 -> 0.1 in the send, 1.5 -> 2 in the recv
  const QString inFlight = chart.describeAt(1.0, TimelineChart::ringRow(0).center());
  QVERIFY2(inFlight.contains("ring K/V forward"), qPrintable(inFlight));
  const QString call = chart.describeAt(1.8, TimelineChart::commRow(0).center());
  QVERIFY2(call.contains("recv p2p"), qPrintable(call));
  bool listed = false;
  for (int i = 0; i < chart.legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.legend->item(i)))
      listed = listed || item->plottable()->name().contains("hidden behind compute: 70%");
  QVERIFY(listed);
  // No ring: no share, no legend entry.
  chart.showSnapshot(syntheticSnapshot(2));
  QCOMPARE(chart.ringHiddenShare(), -1.0);
}

void TestChartsRanks::chromeTraceParses() {
  const Snapshot s = syntheticSnapshot(3);
  const QByteArray json = chromeTraceJson(s.spans, "pcie");
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
  const QJsonArray events = doc.object()["traceEvents"].toArray();
  QCOMPARE(doc.object()["otherData"].toObject()["emulated"].toString(), QString("pcie"));
  std::map<int, int> perRank;
  int comm = 0;
  for (const QJsonValue& v : events) {
    const QJsonObject e = v.toObject();
    if (e["ph"].toString() != "X") continue;
    ++perRank[e["pid"].toInt()];
    QVERIFY(e["dur"].toDouble() > 0);
    QVERIFY(e["ts"].toDouble() >= 0);
    if (e["cat"].toString() == "comm") {
      ++comm;
      QCOMPARE(e["tid"].toInt(), 1);
      QCOMPARE(e["args"].toObject()["bytes"].toInteger(), qint64(1 << 20));
      QCOMPARE(e["args"].toObject()["op"].toString(), QString("allreduce ring"));
      QCOMPARE(e["dur"].toDouble(), 3500.0);  // µs
    } else {
      QCOMPARE(e["tid"].toInt(), 0);
    }
  }
  QCOMPARE(int(perRank.size()), 3);
  for (const auto& [rank, n] : perRank) QCOMPARE(n, int(s.spans[size_t(rank)].size()));
  QCOMPARE(comm, 3 * 5);
  // Written to a file, whole.
  QTemporaryDir dir;
  QCOMPARE(writeChromeTrace(dir.filePath("trace.json"), s.spans), QString());
  QFile f(dir.filePath("trace.json"));
  QVERIFY(f.open(QIODevice::ReadOnly));
  QVERIFY(QJsonDocument::fromJson(f.readAll()).isObject());
}

void TestChartsRanks::holdingsMapDrawsTheSlices() {
  QCOMPARE(HoldingsMap::rowOf("block0.fc1.weight"), QString("block0"));
  QCOMPARE(HoldingsMap::rowOf("block1 (flat)"), QString("block1"));
  QCOMPARE(HoldingsMap::rowOf("block0.expert2.fc1.weight"), QString("block0.expert2"));

  // ZeRO-3 over 4 ranks: rank r holds the r-th quarter of every layer's params, grads and
  // optimizer state, and the r-th quarter of the batch.
  RunConfig z;
  z.ranks = 4, z.zero = 3, z.layers = 2;
  HoldingsMap map;
  map.showHoldings(holdingsOf(z));
  QCOMPARE(map.rows().front(), QString("batch"));
  QVERIFY(map.rows().contains("block1"));
  QCOMPARE(map.rows().back(), QString("classifier"));
  for (int r = 0; r < 4; ++r) {
    for (HoldingKind k : {HoldingKind::Params, HoldingKind::Grads, HoldingKind::Optimizer}) {
      const auto* c = findCell(map, r, "block0", k);
      QVERIFY(c);
      QCOMPARE(int(c->parts.size()), 1);
      QVERIFY2(
          std::abs(c->parts[0].first - r / 4.0) < 1e-3 &&
              std::abs(c->parts[0].second - (r + 1) / 4.0) < 1e-3,
          qPrintable(
              QString("rank %1: %2..%3").arg(r).arg(c->parts[0].first).arg(c->parts[0].second)));
    }
    const auto* batch = findCell(map, r, "batch", HoldingKind::Batch);
    QVERIFY(batch);
    QCOMPARE(batch->parts[0].first, r / 4.0);
  }
  // Tensor and pipeline parallel 2 x 2: a stage holds only its layers, and the two tp ranks
  // of a stage hold different parts of each block that together make the whole block.
  RunConfig m;
  m.ranks = 4, m.tp = 2, m.pp = 2, m.layers = 2, m.microbatches = 2;
  map.showHoldings(holdingsOf(m));
  QVERIFY(findCell(map, 0, "block0", HoldingKind::Params));
  QVERIFY(!findCell(map, 0, "block1", HoldingKind::Params));
  QVERIFY(findCell(map, 2, "block1", HoldingKind::Params));
  double covered = 0;
  for (int r : {0, 1})
    for (const auto& [a, b] : findCell(map, r, "block0", HoldingKind::Params)->parts)
      covered += b - a;
  QVERIFY2(covered > 1.0 && covered < 1.5,
           qPrintable(QString::number(covered)));  // layer norms on both
  // Hover names the slices: fc1's columns of the tensor-parallel split.
  QVERIFY(findCell(map, 1, "block0", HoldingKind::Params)
              ->items.join('\n')
              .contains("fc1.weight: cols 64–128 of 128"));
  const QStringList csv = csvLines(map);
  QCOMPARE(csv[0], QString("rank,row,tensor,kind,dim,begin,end,total,rows,cols,bytes"));
  QVERIFY(csv.size() > 20);
  map.showHistory(MetricHistory());
  QCOMPARE(map.pointCount(), 0);

  // For a look: ZeRO-3, tensor x pipeline, experts spread over ranks.
  const std::pair<const char*, RunConfig> looks[] = {{"holdings-zero3", z}, {"holdings-tp-pp", m}};
  for (const auto& [name, config] : looks) {
    HoldingsMap shown;
    shown.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(config))));
    shown.showHoldings(holdingsOf(config));
    saveScreenshot(shown, name);
  }
  // The GPT's selective recomputation: a "recomputed" row under the activations, hatched, its
  // legend entry saying what is recomputed; its bytes one block's attention probabilities of
  // the rank's windows, [B, NH, T, T]. Both bars say their bytes.
  RunConfig g;
  g.model = ModelKind::Gpt, g.ranks = 2, g.layers = 2, g.heads = 4, g.seq = 16,
  g.recompute = Recompute::Selective;
  HoldingsMap gpt;
  gpt.showHoldings(holdingsOf(g));
  QCOMPARE(gpt.rows().mid(0, 3), QStringList({"batch", "activations", "recomputed"}));
  auto legendNames = [](const HoldingsMap& m) {
    QStringList names;
    for (int i = 0; i < m.legend->itemCount(); ++i)
      if (auto* p = qobject_cast<QCPPlottableLegendItem*>(m.legend->item(i)))
        names << p->plottable()->name();
    return names;
  };
  QVERIFY2(legendNames(gpt).contains("recomputed in backward: attention probabilities"),
           qPrintable(legendNames(gpt).join(", ")));
  for (int r = 0; r < 2; ++r) {
    const auto* kept = findCell(gpt, r, "activations", HoldingKind::Activations);
    const auto* redo = findCell(gpt, r, "recomputed", HoldingKind::Activations);
    QVERIFY(kept && redo);
    QCOMPARE(redo->bytes, int64_t(48 / 2) * 4 * 16 * 16 * 4);  // windows x NH x T x T floats
    QVERIFY(kept->bytes > redo->bytes);
    QCOMPARE(redo->parts, kept->parts);  // the same rows: the rank's half of the batch
    QVERIFY(redo->items.join('\n').contains("attention probabilities"));
  }
  gpt.resize(1200, 750);
  gpt.replot();
  QStringList shownBytes;
  for (const QCPItemText* t : gpt.findChildren<QCPItemText*>())
    if (t->visible() && t->text().contains("iB")) shownBytes << t->text();  // KiB, MiB
  QVERIFY2(shownBytes.size() == 4, qPrintable(shownBytes.join(" | ")));     // 2 bars x 2 ranks
  gpt.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(g))));
  saveScreenshot(gpt, "holdings-gpt-selective");
  // Nothing recomputed (the MLP under tp x pp): no such row, and the entry leaves the legend.
  gpt.showHoldings(holdingsOf(m));
  QVERIFY(!gpt.rows().contains("recomputed"));
  QVERIFY(!legendNames(gpt).join(",").contains("recomputed"));

  RunConfig e;
  e.model = ModelKind::Moe, e.ranks = 4, e.ep = 4, e.experts = 4, e.layers = 2;
  HoldingsMap experts;
  experts.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(e))));
  experts.showHoldings(holdingsOf(e));
  saveScreenshot(experts, "holdings-moe-ep");
}

// A mixture of experts on 8 ranks (14 rows, 8 columns, each column's traffic on two lines) in
// the rooms a dock gives it, large to small and back, and fed again in the small one (a window
// re-feeds its charts when their text changes): every frame drawn has row and column labels
// fitted to that frame's plot, none clipped, none overlapping another. Measured right after one
// replot, with no events between: what is on screen, not what a later replot would correct.
void TestChartsRanks::holdingsMapLabelsFitEveryRoom() {
  RunConfig e;
  e.model = ModelKind::Moe, e.ranks = 8, e.ep = 4, e.experts = 4, e.layers = 2;
  const std::vector<RankHoldings> eight = holdingsOf(e);
  RunConfig two;
  two.ranks = 2, two.layers = 2;
  const std::vector<RankHoldings> small = holdingsOf(two);

  HoldingsMap map;
  map.setSubtitle(QString("measured · %1").arg(LossChart::runLabel(holdingsRun(e))));
  map.resize(1200, 750);
  map.show();
  QVERIFY(QTest::qWaitForWindowExposed(&map));
  auto problems = [&](const QString& where) {
    map.replot(QCustomPlot::rpImmediateRefresh);
    const QList<test::TextBox> boxes = test::chartTextBoxes(&map);
    QStringList out;
    for (const QString& c : test::clipped(boxes)) out << where + ": clipped: " + c;
    for (const QString& o : test::overlapping(boxes)) out << where + ": overlap: " + o;
    return out;
  };
  QStringList found;
  map.showHoldings(eight);
  found += problems("fed at 1200x750");
  for (const QSize room : {QSize(900, 600), QSize(640, 420), QSize(460, 330), QSize(455, 340)}) {
    map.resize(room);
    found += problems(QString("resized to %1x%2").arg(room.width()).arg(room.height()));
  }
  // Fed again where it is small: the same run, then another, then the 8 ranks again.
  for (const auto* h : {&eight, &small, &eight}) {
    map.showHoldings(*h);
    found += problems(QString("fed %1 ranks at 455x340").arg(h->size()));
    QCOMPARE(map.xAxis->tickVectorLabels().size(), int(h->size()));  // this run's columns
    QCOMPARE(map.xAxis->range().upper, double(h->size()));
  }
  QVERIFY(map.grab().save(screenshotDir() + "/holdings-moe-8-ranks-small.png"));
  // Labels thinned for a small room come back in a large one.
  map.resize(1200, 750);
  found += problems("grown to 1200x750");
  QVERIFY2(found.isEmpty(), qPrintable(found.join('\n')));
  QVERIFY(map.yAxis->tickVectorLabels().contains("block0.expert1"));  // every row named
  QVERIFY(map.xAxis->tickVectorLabels().value(0).startsWith("rank 0"));
  QCOMPARE(map.xAxis->tickVectorLabels().size(), 8);  // the current run's columns
}


// [SECTION] The holdings map against the layout, from the engine's real holdings

void TestChartsRanks::holdingsMapFollowsTheLayout_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("tp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  for (const auto [dp, tp, pp] : {std::tuple{4, 1, 1}, {2, 2, 1}, {1, 2, 2}, {2, 1, 2},
                                  {2, 2, 2}, {4, 2, 1}, {8, 1, 1}})
    for (int zero = 0; zero <= 3; ++zero)
      if (dp > 1 || zero == 0)
        QTest::addRow("dp%d tp%d pp%d zero%d", dp, tp, pp, zero) << dp << tp << pp << zero;
}

// Every layer's parameters, as the map draws them from the engine's real holdings. Without
// ZeRO-3 each data-parallel replica's ranks together hold the whole layer (tensor-parallel
// slices side by side, each stage its own layers). Under ZeRO-3 rank (d, t) holds chunk d of D
// of its tensor-parallel shard t of T: the part ((t + d/D)/T, (t + (d+1)/D)/T) of a layer that
// tensor parallelism cuts, and (d/D, (d+1)/D) of one every tp rank holds whole (which layers
// are cut is read from the same layout without ZeRO, by name).
void TestChartsRanks::holdingsMapFollowsTheLayout() {
  QFETCH(int, dp);
  QFETCH(int, tp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  RunConfig c;
  c.ranks = dp * tp * pp, c.dp = dp, c.tp = tp, c.pp = pp, c.zero = zero, c.layers = 2;
  if (pp > 1) c.microbatches = 2;
  const std::vector<RankHoldings> held = holdingsOf(c);
  std::map<int, GridCoords> coordsOf;
  for (const RankHoldings& h : held) coordsOf[h.rank] = h.coords;
  std::map<std::pair<int, QString>, std::vector<std::pair<double, double>>> byReplica;
  std::map<QString, std::vector<std::pair<double, double>>> byRow;
  QSet<QString> cut;  // the layers tensor parallelism cuts, by name
  RunConfig whole = c;
  whole.zero = 0;
  for (const RankHoldings& h : holdingsOf(whole))
    for (const HeldSlice& s : h.items)
      if (s.kind == HoldingKind::Params && s.dim >= 0 && s.end - s.begin < s.total)
        cut << HoldingsMap::rowOf(s.tensor);
  QCOMPARE(cut.isEmpty(), tp == 1);
  for (const HoldingsMap::Cell& cell : HoldingsMap::cellsOf(held)) {
    if (cell.kind != HoldingKind::Params) continue;
    const GridCoords at = coordsOf[cell.rank];
    for (const auto& part : cell.parts) {
      byReplica[{at.dp, cell.row}].push_back(part);
      byRow[cell.row].push_back(part);
    }
    if (zero < 3) continue;
    const double D = dp, T = cut.contains(cell.row) ? tp : 1, t = T > 1 ? at.tp : 0;
    const double lo = (t + at.dp / D) / T, hi = (t + (at.dp + 1) / D) / T;
    QCOMPARE(int(cell.parts.size()), 1);
    QVERIFY2(std::abs(cell.parts[0].first - lo) < 0.02 && std::abs(cell.parts[0].second - hi) < 0.02,
             qPrintable(QString("rank %1 (dp %2, tp %3), %4: drawn %5..%6, the layout gives %7..%8")
                            .arg(cell.rank).arg(at.dp).arg(at.tp).arg(cell.row)
                            .arg(cell.parts[0].first).arg(cell.parts[0].second).arg(lo).arg(hi)));
  }
  QVERIFY(!byRow.empty());
  for (const auto& [row, parts] : byRow) QVERIFY2(coversWhole(parts), qPrintable(row));
  if (zero < 3)
    for (const auto& [key, parts] : byReplica)
      QVERIFY2(coversWhole(parts), qPrintable(QString("replica %1 does not hold all of %2")
                                             .arg(key.first).arg(key.second)));
}

QTEST_MAIN(TestChartsRanks)
#include "tst_charts_ranks.moc"
