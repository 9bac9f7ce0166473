// The projection onto real GPUs (engine/projection/): its pieces against their formulas, the
// whole against published runs (Narayanan et al. 2021 Table 1, the ZeRO paper's memory) and the
// engine's own memory estimate where both apply. Layouts, refusals and paralab-run --project:
// tst_projection_layouts.cpp. Run: ctest -R tst_projection (the Table 1 rows print projected
// beside published).
#include <QtTest>
#include <cmath>
#include <iterator>

#include "config.h"
#include "memory_estimate.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "projection/projection.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;
using namespace paralab::projection::fixtures;

namespace {

// An engine-size GPT as a run's settings give it.
RunConfig smallGpt() {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.seq = 32;
  c.batch = 16;
  c.optimizer = "adam";
  return c;
}

int64_t engineParameterCount(const RunConfig& c) {
  if (c.model == ModelKind::Mlp) return MlpShape{784, c.hidden, c.layers, 10}.parameterCount();
  return GptShape{kEngineVocab, c.seq, c.hidden, c.layers, c.heads}.parameterCount();
}

}  // namespace

class TstProjection : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] GPU kinds

  void gpuKindsReadTheirDatasheets() {
    QCOMPARE(QString::fromStdString(gpuNamesText()), "a100-80gb, h100-sxm, h200");
    const GpuSpec a100 = loadGpu("a100-80gb"), h100 = loadGpu("h100-sxm"), h200 = loadGpu("h200");
    QCOMPARE(a100.bf16Tflops, 312.0);
    QCOMPARE(a100.tf32Tflops, 156.0);
    QCOMPARE(a100.hbmGB, 80.0);
    QCOMPARE(a100.hbmGBps, 2039.0);
    QCOMPARE(a100.nvlinkGBps, 300.0);
    QCOMPARE(h100.bf16Tflops, 989.0);
    QCOMPARE(h100.hbmGBps, 3350.0);
    QCOMPARE(h200.hbmGB, 141.0);
    QCOMPARE(h200.hbmGBps, 4800.0);
    for (const GpuSpec& g : {a100, h100, h200}) {
      QVERIFY(!g.source.empty());
      QVERIFY(g.matmulFraction() > 0.5 && g.matmulFraction() < 1);
      QVERIFY(g.peakFlops(Precision::Bf16Mixed) > g.peakFlops(Precision::Tf32));
      QVERIFY(g.peakFlops(Precision::Tf32) > g.peakFlops(Precision::Fp32));
    }
    // A DGX A100 has one 200 Gb/s HDR adapter per GPU: 25 GB/s each way.
    QCOMPARE(a100.networkGBpsPerGpu(), 25.0);
    try {
      loadGpu("v100");
      QFAIL("an unknown GPU was accepted");
    } catch (const ConfigError& e) {
      const QString what = e.what();
      QVERIFY2(what.startsWith("project: unknown GPU 'v100'") &&
                   what.contains("a100-80gb, h100-sxm, h200"),
               qPrintable(what));
    }
  }

  // [SECTION] Communication: alpha-beta per link, nccl-tests' conventions

  void collectivesFollowAlphaBeta_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<double>("bytes");
    for (int n : {2, 4, 8, 64})
      for (double bytes : {1e3, 1e6, 1e9}) QTest::addRow("n=%d bytes=%g", n, bytes) << n << bytes;
  }
  void collectivesFollowAlphaBeta() {
    QFETCH(int, ranks);
    QFETCH(double, bytes);
    const Link link{"test", 5e-6, 100e9, true};
    const double n = ranks, a = link.alphaS, B = link.bytesPerS;
    // Ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps of bytes/n each.
    const double ring = collectiveSeconds(Collective::AllReduce, bytes, ranks, link);
    QVERIFY(near(ring, 2 * (n - 1) * a + 2 * (n - 1) / n * bytes / B, 1e-12));
    const double tree =
        collectiveSeconds(Collective::AllReduce, bytes, ranks, link, Algorithm::Tree);
    QVERIFY(near(tree, 2 * std::ceil(std::log2(n)) * a + 2 * (n - 1) / n * bytes / B, 1e-12));
    QVERIFY(tree <= ring);  // same bandwidth term, fewer latency steps
    for (Collective op : {Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll})
      QVERIFY(near(collectiveSeconds(op, bytes, ranks, link), (n - 1) * a + (n - 1) / n * bytes / B,
                   1e-12));
    QVERIFY(
        near(collectiveSeconds(Collective::PointToPoint, bytes, 2, link), a + bytes / B, 1e-12));
    QCOMPARE(collectiveSeconds(Collective::AllReduce, bytes, 1, link), 0.0);
    // Bus bandwidth (nccl-tests): without latency every ring collective's busbw is the link's.
    const Link noLatency{"test", 0, 100e9, true};
    for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                          Collective::AllToAll}) {
      const double s = collectiveSeconds(op, bytes, ranks, noLatency);
      QVERIFY(near(busBandwidth(op, bytes, ranks, s), 100e9, 1e-12));
    }
    // With latency the bus bandwidth of small messages falls below the link's.
    if (bytes <= 1e3) QVERIFY(busBandwidth(Collective::AllReduce, bytes, ranks, ring) < 0.5 * B);
  }

  void groupsUseTheirLinks() {
    const Cluster c = a100s(128);
    // dp 4 x tp 8 x pp 4: a tp group is one node; dp and pp groups one GPU per node.
    const GridShape g{4, 8, 4, 1, 1};
    const GroupPlacement tp = placeGroup(g, Axis::Tp, 8), dp = placeGroup(g, Axis::Dp, 8),
                         pp = placeGroup(g, Axis::Pp, 8);
    QCOMPARE(tp.nodes, 1);
    QCOMPARE(tp.perNode, 8);
    QCOMPARE(dp.nodes, 4);
    QCOMPARE(dp.perNode, 1);
    QCOMPARE(pp.nodes, 4);
    const Link nvlink = linkFor(c, tp), ib = linkFor(c, dp);
    QVERIFY(!nvlink.interNode);
    QVERIFY(ib.interNode);
    QVERIFY(near(nvlink.bytesPerS, 300e9 * kNvlinkFraction, 1e-12));
    QVERIFY(near(ib.bytesPerS, 25e9 * kNetworkFraction, 1e-12));
    // tp 2: a dp group has 4 ranks on each node, 4 adapters' worth of bandwidth.
    const GroupPlacement dp4 = placeGroup({16, 2, 4, 1, 1}, Axis::Dp, 8);
    QCOMPARE(dp4.perNode, 4);
    QVERIFY(near(linkFor(c, dp4).bytesPerS, 4 * 25e9 * kNetworkFraction, 1e-12));
    // Ethernet: one 10 GbE port per node shared by its 8 GPUs.
    Cluster eth = c;
    eth.nodeLink = NodeLink::Ethernet;
    QVERIFY(linkFor(eth, dp).bytesPerS < ib.bytesPerS / 100);
    QVERIFY(linkFor(eth, dp).alphaS > ib.alphaS);
  }

  // [SECTION] Pipeline schedule

  void bubbleIsTheFillAndDrain_data() {
    QTest::addColumn<int>("p");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("v");
    for (int p : {1, 2, 4, 8, 64})
      for (int m : {1, 4, 16, 512})
        for (int v : {1, 2, 4}) QTest::addRow("p=%d m=%d v=%d", p, m, v) << p << m << v;
  }
  void bubbleIsTheFillAndDrain() {
    QFETCH(int, p);
    QFETCH(int, m);
    QFETCH(int, v);
    const double fill = double(p - 1) / v;
    QVERIFY(near(bubbleFraction(p, m, v), fill / (m + fill), 1e-12) || p == 1);
    if (v == 1) QCOMPARE(bubbleFraction(p, m), double(p - 1) / (m + p - 1));
    // Equal stages of 10 ms: (m + (p - 1)/v) slots, of which (p - 1)/v are the bubble.
    const PipelineTime t = pipelineTime(std::vector<double>(size_t(p), 0.010), m, v);
    QVERIFY(near(t.total, (m + fill) * 0.010, 1e-12));
    QVERIFY(near(t.bubble, fill * 0.010, 1e-12) || p == 1);
    QVERIFY(near(t.bubble / t.total, bubbleFraction(p, m, v), 1e-12) || p == 1);
    // GPipe keeps every micro-batch in flight, 1F1B at most p - k.
    QCOMPARE(microBatchesInFlight(Schedule::GPipe, p, m, 0), double(m));
    QCOMPARE(microBatchesInFlight(Schedule::OneFOneB, p, m, 0), double(std::min(m, p)));
    QCOMPARE(microBatchesInFlight(Schedule::OneFOneB, p, m, p - 1), 1.0);
  }

  void slowestStageSetsThePace() {
    // Stages of 10, 30 and 20 ms, 8 micro-batches: the 30 ms stage works 8 slots; the others'
    // fill and drain add 30 ms.
    const PipelineTime t = pipelineTime({0.010, 0.030, 0.020}, 8);
    QVERIFY(near(t.total, 8 * 0.030 + 0.030, 1e-12));
    QVERIFY(near(t.bubble, 0.030, 1e-12));
  }

  // [SECTION] Compute: FLOPs and the roofline

  void blockFlopsAreTheTransformersCount_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("cp");
    QTest::addColumn<bool>("dropout");
    for (int tp : {1, 2, 8})
      for (int cp : {1, 2})
        for (bool d : {false, true})
          QTest::addRow("tp=%d cp=%d dropout=%d", tp, cp, d) << tp << cp << d;
  }
  void blockFlopsAreTheTransformersCount() {
    QFETCH(int, tp);
    QFETCH(int, cp);
    QFETCH(bool, dropout);
    const Roofline r = Roofline::of(loadGpu("a100-80gb"), Precision::Bf16Mixed);
    BlockWork w;
    w.microBatch = 2;
    w.seq = 1024;
    w.hidden = 4096;
    w.heads = 32;
    w.tp = tp;
    w.cp = cp;
    w.dropout = dropout;
    const double h = w.hidden, s = w.seq, tokens = w.microBatch * s;
    // Forward: 24 h^2 + 4 s h per token (Narayanan et al. 2021 §5.1), over tp x cp GPUs.
    const double forward = totalFlops(blockForward(r, w)) * tp * cp;
    QVERIFY(near(forward, tokens * (24 * h * h + 4 * s * h), 1e-12));
    QVERIFY(near(totalFlops(blockBackward(r, w)), 2 * totalFlops(blockForward(r, w)), 1e-12));
    QVERIFY(near(totalFlops(attentionCoreForward(r, w)) * tp * cp, tokens * 4 * s * h, 1e-12));
    // Dropout adds memory passes, not FLOPs; every pass costs time.
    for (const OpCost& op : blockForward(r, w)) QVERIFY2(op.seconds > 0, op.name.c_str());
  }

  void rooflineSeparatesComputeFromMemory() {
    const GpuSpec a100 = loadGpu("a100-80gb");
    const Roofline r = Roofline::of(a100, Precision::Bf16Mixed);
    // 8192^3: compute-bound, at the measured matmul rate (its 2,048 tiles of 256 x 128 fill
    // 19 waves of 108 SMs within 1%).
    const OpCost big = gemmCost(r, "big", 8192, 8192, 8192);
    QVERIFY(big.computeBound);
    QVERIFY(near(big.seconds,
                 2 * std::pow(8192.0, 3) / (a100.matmulTflopsBf16 * 1e12) /
                     waveEfficiency(8192, 8192, 1, a100.sms),
                 1e-12));
    QVERIFY(waveEfficiency(8192, 8192, 1, a100.sms) > 0.98);
    // Inner dimension 16: 16 FLOPs per byte, far below the ridge (~ 146 FLOP/byte): memory-bound.
    const OpCost thin = gemmCost(r, "thin", 8192, 8192, 16);
    QVERIFY(!thin.computeBound);
    QVERIFY(near(thin.seconds, thin.bytes / r.bytesPerS, 1e-12));
    QVERIFY(r.ridge() > 100 && r.ridge() < 200);
    // One tile more than the SMs hold takes a second wave.
    QVERIFY(near(waveEfficiency(kTileRows, kTileCols * (a100.sms + 1), 1, a100.sms),
                 double(a100.sms + 1) / (2 * a100.sms), 1e-12));
    // A narrow GEMM (a weight gradient of the MLP at batch 4096: 128 x 512 out, k 4096) has 4
    // tiles for 108 SMs: split along k into 16 slices of 256, 64 tiles in one wave.
    QCOMPARE(splitK(128, 512, 4096, 1, a100.sms), 16.0);
    QVERIFY(near(waveEfficiency(128, 512, 1, a100.sms, 4096), 64.0 / a100.sms, 1e-12));
    QCOMPARE(splitK(8192, 8192, 8192, 1, a100.sms), 1.0);  // enough tiles: not split
    QCOMPARE(splitK(128, 512, 200, 1, a100.sms), 1.0);     // too shallow to split
  }

  // [SECTION] Memory

  // ZeRO (Rajbhandari et al. 2020, §5 and Fig. 1): a 7.5B model on 64 GPUs with Adam in mixed
  // precision (K = 12): 120 GB per GPU without ZeRO, 31.4 GB at stage 1, 16.6 at stage 2, 1.9
  // at stage 3 (GB = 1e9 bytes, the paper's rounding).
  void zeroPaperMemory_data() {
    QTest::addColumn<int>("stage");
    QTest::addColumn<double>("gigabytes");
    QTest::newRow("baseline") << 0 << 120.0;
    QTest::newRow("stage 1") << 1 << 31.4;
    QTest::newRow("stage 2") << 2 << 16.6;
    QTest::newRow("stage 3") << 3 << 1.9;
  }
  void zeroPaperMemory() {
    QFETCH(int, stage);
    QFETCH(double, gigabytes);
    QCOMPARE(optimizerBytesPerParameter(Precision::Bf16Mixed, "adam"), 12);
    const ModelStateBytes s = modelStates(7.5e9, stage, Precision::Bf16Mixed, "adam", 64);
    QCOMPARE(std::round(s.total() / 1e8) / 10, gigabytes);
  }

  // Where the engine estimates a run's memory (memory_estimate.h: fp32, the engine's GPT and
  // MLP, every rank alike), the projection in fp32 gives the same bytes per category.
  void memoryMatchesTheEngineEstimate_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("recompute");
    QTest::addColumn<int>("zero");
    for (const char* rc : {"none", "selective", "full"})
      for (int zero : {0, 1, 3}) QTest::addRow("gpt %s zero %d", rc, zero) << "gpt" << rc << zero;
    QTest::newRow("mlp") << "mlp"
                         << "none" << 0;
    QTest::newRow("mlp zero 2") << "mlp"
                                << "none" << 2;
  }
  void memoryMatchesTheEngineEstimate() {
    QFETCH(QString, model);
    QFETCH(QString, recompute);
    QFETCH(int, zero);
    RunConfig c = smallGpt();
    c.model = *fromName<ModelKind>(model.toStdString());
    if (model == "mlp") c.hidden = 48, c.layers = 3;
    c.recompute = recomputeFromName(recompute.toStdString());
    c.ranks = 4;
    c.zero = zero;
    const MemoryEstimate engine = estimateMemory(c);
    Layout l = layoutOf(c);
    l.precision = Precision::Fp32;
    l.microBatches = 1;
    Cluster cluster = a100s(4);
    const Projection p = project(modelOf(c, kEngineVocab), l, cluster);
    const double states = p.memory.params + p.memory.grads + p.memory.optimizer;
    QVERIFY2(std::abs(4 * states - double(engine.modelStates)) <= 4,
             qPrintable(QString("%1 vs %2").arg(4 * states).arg(engine.modelStates)));
    QVERIFY2(near(4 * p.memory.activations, double(engine.activations), 1e-12),
             qPrintable(QString("%1 vs %2").arg(4 * p.memory.activations).arg(engine.activations)));
    QCOMPARE(p.parameters, double(engineParameterCount(c)));
  }

  void zeroStagesAndRecomputationSaveMemory() {
    const ModelSpec m = ModelSpec::megatronGpt(48, 8192, 64, 2048, 51200);
    Layout l = table1Layout(kTable1[4]);
    double previous = INFINITY;
    for (int zero : {0, 1}) {  // with pp 2, stages 0 and 1 apply
      l.zero = zero;
      const double total = project(m, l, a100s(512)).memory.total();
      QVERIFY(total < previous);
      previous = total;
    }
    l.zero = 0;
    double activations = 0;
    for (Recompute rc : {Recompute::Full, Recompute::Selective, Recompute::None}) {
      l.recompute = rc;
      const double a = project(m, l, a100s(512)).memory.activations;
      QVERIFY(a > activations);
      activations = a;
    }
    // GPipe keeps all micro-batches: more activations than 1F1B.
    l.recompute = Recompute::Full;
    const double oneFOneB = project(m, l, a100s(512)).memory.activations;
    l.schedule = Schedule::GPipe;
    QVERIFY(project(m, l, a100s(512)).memory.activations > 4 * oneFOneB);
  }

  // [SECTION] Published runs: Narayanan et al. 2021, Table 1

  void table1ParameterCounts() {
    for (const Table1Row& row : kTable1) {
      const ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, 2048, 51200);
      QCOMPARE(QString::number(m.parameterCount() / 1e9, 'f', 1), QString(row.params));
    }
  }

  // The FLOPs the projection executes are the paper's eq. (3) exactly, for every row.
  void table1FlopsAreThePapersFormula() {
    for (const Table1Row& row : kTable1) {
      const ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, 2048, 51200);
      const Projection p = project(m, table1Layout(row), a100s(row.gpus));
      const double paper = narayananStepFlops(row.batch, 2048, row.layers, row.hidden, 51200);
      QVERIFY2(near(p.hardwareFlops, paper, 1e-9),
               qPrintable(QString("%1: %2 vs %3").arg(row.params).arg(p.hardwareFlops).arg(paper)));
      QVERIFY(p.modelFlops < p.hardwareFlops);  // recomputation is not model work
    }
  }

  void table1Throughput_data() {
    QTest::addColumn<int>("row");
    for (int i = 0; i < int(std::size(kTable1)); ++i) QTest::addRow("%sB", kTable1[i].params) << i;
  }
  // Every row within 15% of the achieved TFLOP/s per GPU, projected with one layout rule (see
  // table1Layout) and no constant fitted to the table; each row also fits in 80 GB, as it ran.
  void table1Throughput() {
    QFETCH(int, row);
    const Table1Row& r = kTable1[row];
    const ModelSpec m = ModelSpec::megatronGpt(r.layers, r.hidden, r.heads, 2048, 51200);
    const Projection p = project(m, table1Layout(r), a100s(r.gpus));
    const double ratio = p.tflopsPerGpu / r.tflops;
    qInfo(
        "Table 1 %7sB: tp %d pp %2d dp %3d m %4d: projected %6.1f TFLOP/s per GPU, paper %5.0f "
        "(%+5.1f%%); step %.2f s = compute %.0f%%, tp %.0f%%, bubble %.0f%%, pp sends %.1f%%, "
        "dp %.1f%%, optimizer %.1f%%; MFU %.1f%%; memory %.1f GB",
        r.params, r.tp, r.pp, p.layout.dp, p.layout.microBatches, p.tflopsPerGpu, r.tflops,
        100 * (ratio - 1), p.stepSeconds, 100 * p.split.compute / p.stepSeconds,
        100 * p.split.tpComm / p.stepSeconds, 100 * p.split.ppBubble / p.stepSeconds,
        100 * p.split.ppComm / p.stepSeconds, 100 * p.split.dpCommExposed / p.stepSeconds,
        100 * p.split.optimizer / p.stepSeconds, 100 * p.mfu, p.memory.total() / 1e9);
    QVERIFY2(std::abs(ratio - 1) <= 0.15, qPrintable(QString("%1B: projected %2, paper %3")
                                                         .arg(r.params)
                                                         .arg(p.tflopsPerGpu)
                                                         .arg(r.tflops)));
    QVERIFY2(p.fits(), qPrintable(QString("%1 GB").arg(p.memory.total() / 1e9)));
    QVERIFY(near(p.split.total(), p.stepSeconds, 1e-9));
    QVERIFY(p.mfu < p.hfu && p.hfu < 1);
  }

};

QTEST_GUILESS_MAIN(TstProjection)
#include "tst_projection.moc"
