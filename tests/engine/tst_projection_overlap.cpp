// What the projection hides (projection.h: overlapDpComm, overlapParamGather, overlapTpComm):
// the step split's hidden and exposed parts against their formulas, and the whole against
// Megatron-Core's published H100 weak-scaling table, which ran with DP and TP overlap on. Run:
// ctest -R tst_projection_overlap --output-on-failure (each row prints projected beside published).
#include <QtTest>
#include <iterator>

#include "projection/projection.h"
#include "projection_fixtures.h"

using namespace paralab;
using namespace paralab::projection;
using namespace paralab::projection::fixtures;

namespace {

// Megatron-Core r0.8.0 on H100 (NVIDIA/Megatron-LM README.md, "Performance Benchmarking": the
// model table images/model_table.png, the same points as images/weak_scaling.png): GPT models of
// vocabulary 131,072 and sequence 4,096, data-parallel size 48 throughout, "fine-grained
// overlapping of data-parallel (--overlap-grad-reduce --overlap-param-gather), tensor-parallel
// (--tp-comm-overlap) and pipeline-parallel communication", throughput end to end.
struct CoreRow {
  const char* params;  // billions, as printed
  int heads, hidden, layers, tp, pp, gpus, batch;
  double tflops;  // per GPU: Megatron's model FLOPs (num_floating_point_operations) per second
};
const CoreRow kCoreTable[] = {
    {"1.7", 16, 2048, 24, 1, 1, 48, 192, 408.8},
    {"7.1", 32, 4096, 30, 2, 1, 96, 192, 465.9},
    {"16", 48, 6144, 32, 4, 1, 192, 192, 489.1},
    {"32", 56, 7168, 48, 8, 1, 384, 192, 459.6},
    {"70", 64, 8192, 84, 8, 2, 768, 384, 419.7},
    {"119", 80, 10240, 92, 8, 4, 1536, 768, 420.5},
    {"177", 96, 12288, 96, 8, 6, 2304, 1152, 432.8},
    {"314", 128, 16384, 96, 8, 8, 3072, 1536, 474.4},
    {"462", 144, 18432, 112, 8, 16, 6144, 3072, 459.9},
};
constexpr int kCoreSeq = 4096, kCoreVocab = 131072;

// Megatron's GPT with its output layer apart from the token embedding (the printed sizes count
// both: 1.7B is 12 l h^2 + 2 V h, tied it would be 1.5B).
ModelSpec coreModel(const CoreRow& row) {
  ModelSpec m = ModelSpec::megatronGpt(row.layers, row.hidden, row.heads, kCoreSeq, kCoreVocab);
  m.tiedEmbeddings = false;
  return m;
}

// The one layout rule of every row, from the flags the README names and their prerequisites in
// Megatron-Core's arguments: --tp-comm-overlap needs sequence parallelism; --overlap-param-gather
// needs the distributed optimizer (ZeRO-1 over the data-parallel replicas); micro-batches of one
// sequence (--micro-batch-size 1, as Megatron's GPT examples set it: the argument has no default
// and the README does not say it; the replica's 4 sequences as one micro-batch would hide the
// whole reduce-scatter under the backward and put every tp-only row 33-46% over); the weight
// gradients accumulated by the GEMM
// (--gradient-accumulation-fusion, on by default); attention recomputed in the backward as a
// fused attention kernel does (selective recomputation's memory and FLOPs); bf16 with Adam;
// 1F1B, not interleaved (the README names no virtual stages).
Layout coreLayout(const CoreRow& row) {
  Layout l;
  l.tp = row.tp;
  l.pp = row.pp;
  l.globalBatch = row.batch;
  l.microBatchSize = 1;
  l.sequenceParallel = row.tp > 1;
  l.overlapTpComm = row.tp > 1;
  l.zero = 1;
  l.overlapDpComm = true;
  l.overlapParamGather = true;
  l.fusedGradAccumulation = true;
  l.fp32MainGrads = true;        // Megatron forces it in bf16
  l.unfusedCrossEntropy = true;  // --cross-entropy-loss-fusion is off unless given
  l.attentionKernel = "cudnn";   // Transformer Engine's fused attention on Hopper
  l.recompute = Recompute::Selective;
  l.schedule = Schedule::OneFOneB;
  l.precision = Precision::Bf16Mixed;
  l.optimizer = "adam";
  return l;
}

Cluster h100s(int gpus) {
  Cluster c;
  c.gpu = loadGpu("h100-sxm");
  c.gpus = gpus;
  c.gpusPerNode = 8;
  c.nodeLink = NodeLink::InfiniBand;
  return c;
}

// Megatron's num_floating_point_operations (megatron/training/training.py, r0.8.0) per token:
// 12 l h^2 (3 + s/h + 3 + V / (2 l h)) for full attention and an FFN of 4h: the FLOPs its
// TFLOP/s and MFU count.
double megatronFlopsPerToken(const CoreRow& row) {
  const double l = row.layers, h = row.hidden, s = kCoreSeq, V = kCoreVocab;
  return 12 * l * h * h * (6 + s / h + V / (2 * l * h));
}

// The rows the projection misses by more than 15%, and why. Its GEMMs and fused attention run
// at the rates measured for their shapes (resources/gpus: matmul_by_shape, fused_attention),
// bursts of 10 to 20 calls on an idle GPU (attention without dropout, where Megatron's default
// keeps 0.1 inside the kernel), and the loss makes the passes Megatron's code makes. The two
// smallest models spend their whole step computing and ran about 20% slower than those rates
// add up to (1.7B +26%, 7.1B +25%; with two sequences a micro-batch +31% and +30%, with four
// +34% and +32%): what a long run's compute loses beside a short burst (clocks held under the
// 700 W limit, that dropout, launches between short kernels, communication kernels taking SMs
// from the GEMMs they overlap) is not measured. The pipelined rows fit partly by the same gap:
// r0.8.0 overlaps pipeline communication only in its interleaved schedule (arguments.py turns
// --overlap-p2p-communication off otherwise), which Megatron's README says those runs
// overlapped, and interleaving would shrink the 1F1B bubble this rule keeps. The 32B row is
// projected low, and with one sequence a micro-batch no overlap r0.8.0 runs could reach it
// (coreThirtyTwoBOutOfReachAtOneSequence); with two it projects -1.4%, but 16B then hides its
// whole reduce-scatter and goes +30%. The table publishes neither micro-batch sizes nor virtual
// stages, and fitting them, or a derating, to the table would make it a fit instead of a check.
const char* const kOutsideBar[] = {"1.7B", "7.1B", "32B"};

double projectedTflops(const Projection& p, const CoreRow& row) {
  return p.tokensPerS * megatronFlopsPerToken(row) / row.gpus / 1e12;
}

}  // namespace

class TstProjectionOverlap : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The split: hidden and exposed parts

  // Overlapping moves communication from the step's path into the hidden part, never more than
  // there is: with and without, exposed + hidden is the same communication, and the split still
  // sums to the step.
  void overlapHidesWhatItOverlaps() {
    const CoreRow& row = kCoreTable[3];  // tp 8
    Layout off = coreLayout(row);
    off.overlapTpComm = false;
    off.overlapDpComm = false;
    off.overlapParamGather = false;
    const Projection a = project(coreModel(row), off, h100s(row.gpus));
    const Projection b = project(coreModel(row), coreLayout(row), h100s(row.gpus));
    QCOMPARE(a.split.tpCommHidden, 0.0);
    QCOMPARE(a.split.dpCommHidden, 0.0);
    QVERIFY(b.split.tpCommHidden > 0);
    QVERIFY(b.split.dpCommHidden > 0);
    QVERIFY(near(a.split.tpComm, b.split.tpComm + b.split.tpCommHidden, 1e-9));
    QVERIFY(near(a.split.dpCommExposed, b.split.dpCommExposed + b.split.dpCommHidden, 1e-9));
    QVERIFY(b.stepSeconds < a.stepSeconds);
    for (const Projection* p : {&a, &b}) QVERIFY(near(p->split.total(), p->stepSeconds, 1e-9));
  }

  // One pair's exchange beside its GEMMs, by hand: the MLP's FFN (one column-then-row pair) on a
  // slow link, so that every GEMM is shorter than its transfer c and each of the four exchanges
  // (forward all-gather and reduce-scatter, backward both) leaves c - (t-1)/t G exposed.
  void exposedIsTransferLessItsGemm() {
    ModelSpec mlp;
    mlp.kind = ModelSpec::Kind::Mlp;
    mlp.layers = 1;
    mlp.hidden = 1024;
    Layout l;
    l.tp = 4;
    l.globalBatch = 4096;
    l.microBatches = 1;
    l.sequenceParallel = true;
    l.overlapTpComm = true;
    Cluster c = h100s(4);
    c.measuredLink = Link{"slow", 0, 1e9, false};
    const Projection p = project(mlp, l, c);
    const double t = 4, half = collectiveSeconds(Collective::AllGather, 4096 * 1024 * 2.0, 4,
                                                 *c.measuredLink);
    double gemms = 0;  // fc1 and fc2, forward and both backward GEMMs
    for (const OpCost& op : p.blockOps)
      if (op.name.rfind("FFN fc", 0) == 0) gemms += op.seconds;
    QVERIFY(gemms > 0);
    QVERIFY(near(p.split.tpComm, 4 * half - (t - 1) / t * gemms, 1e-9));
    QVERIFY(near(p.split.tpComm + p.split.tpCommHidden, 4 * half, 1e-9));
  }

  // The engine's rules: overlapped tensor parallelism cuts sequence parallelism's collectives.
  void tpOverlapNeedsSequenceParallelism() {
    const CoreRow& row = kCoreTable[2];
    Layout l = coreLayout(row);
    l.sequenceParallel = false;
    const auto why = validate(coreModel(row), l, h100s(row.gpus));
    QVERIFY(why);
    QVERIFY2(why->starts_with("tp-overlap: "), why->c_str());
  }

  // Megatron's unfused loss against its passes counted by hand (cross_entropy.py, r0.8.0), for
  // the 1.7B row's micro-batch of 4,096 tokens: 131,072 bf16 logits a token at tp 1, half at
  // tp 2; the fused loss is one pass each way. Its time is those bytes at the HBM rate.
  void unfusedLossIsMegatronsPasses() {
    const Roofline r = Roofline::of(loadGpu("h100-sxm"), Precision::Bf16Mixed, "cudnn");
    const double tokens = kCoreSeq;
    const double forward = (2 + 4) + 4 + 8 + 8 + 4 + 8, backward = 8 + (4 + 2);
    QCOMPARE(forward + backward, 52.0);
    for (int tp : {1, 2})
      for (bool unfused : {false, true}) {
        EndsWork w;
        w.samples = 1, w.seq = kCoreSeq, w.hidden = 2048, w.vocab = kCoreVocab, w.tp = tp;
        w.unfusedLoss = unfused;
        const double logits = tokens * kCoreVocab / tp;
        const double bytes = (unfused ? forward + backward : 2 * (2 + 4)) * logits;
        bool found = false;
        for (const OpCost& op : lastEnd(r, w))
          if (op.name.starts_with("softmax cross-entropy")) {
            found = true;
            QVERIFY(near(op.bytes, bytes, 1e-12));
            QVERIFY(near(op.seconds, bytes / r.bytesPerS, 1e-12));
          }
        QVERIFY(found);
      }
    // The whole step: the same run, the loss fused, is faster by the loss's extra passes on the
    // last stage's micro-batches (no overlap changes: the loss is compute on the step's path).
    const CoreRow& row = kCoreTable[0];
    Layout fused = coreLayout(row);
    fused.unfusedCrossEntropy = false;
    const Projection a = project(coreModel(row), fused, h100s(row.gpus));
    const Projection b = project(coreModel(row), coreLayout(row), h100s(row.gpus));
    const double extra = (52 - 12) * tokens * kCoreVocab / r.bytesPerS * b.layout.microBatches;
    QVERIFY2(near(b.split.compute - a.split.compute, extra, 1e-9),
             qPrintable(QString("%1 vs %2").arg(b.split.compute - a.split.compute).arg(extra)));
  }

  // [SECTION] Published runs: Megatron-Core r0.8.0 on H100

  // Why the 32B row cannot be matched under the layout rule's micro-batches of one sequence:
  // a bound, not the projection. Megatron-Core r0.8.0 reduce-scatters the fp32 gradients only
  // while the last micro-batch runs its backward (the others run under no_sync) and gathers the
  // bf16 parameters only while the first runs its forward, so no step can be shorter than its
  // compute plus what each collective has left after its window, even at the adapter's full
  // 400 Gb/s (a slower compute than projected only raises the floor: the windows grow by less
  // than the compute). With one sequence a micro-batch that floor (0.99 s) is above the
  // published step (0.89 s); with two it is below, so that run did not cut its replica's 4
  // sequences into micro-batches of one (README does not say how it cut them).
  void coreThirtyTwoBOutOfReachAtOneSequence() {
    const CoreRow& r = kCoreTable[3];
    QCOMPARE(QString(r.params), QString("32"));
    const Cluster cluster = h100s(r.gpus);
    // The adapter at its full rate with no latency: the fastest the exchange could be.
    const Link lineRate{cluster.gpu.nicTitle, 0, cluster.gpu.networkGBpsPerGpu() * 1e9, true};
    const double publishedStep =
        double(r.batch) * kCoreSeq * megatronFlopsPerToken(r) / r.gpus / (r.tflops * 1e12);
    for (int sequences : {1, 2}) {
      Layout l = coreLayout(r);
      l.microBatchSize = sequences;
      const Projection p = project(coreModel(r), l, cluster);
      const int dp = p.layout.dp, m = p.layout.microBatches;
      const double perGpu = p.parameters / r.tp;  // fp32 gradients, bf16 parameters
      const double reduceScatter =
          collectiveSeconds(Collective::ReduceScatter, perGpu * 4, dp, lineRate);
      const double allGather = collectiveSeconds(Collective::AllGather, perGpu * 2, dp, lineRate);
      const double perMicroBatch = p.split.compute / m;
      const double backwardShare =
          p.stageBackwardS[0] / (p.stageForwardS[0] + p.stageBackwardS[0]);
      const double floor = p.split.compute +
                           std::max(0.0, reduceScatter - perMicroBatch * backwardShare) +
                           std::max(0.0, allGather - perMicroBatch * (1 - backwardShare));
      qInfo("32B, %d sequence(s) a micro-batch: floor %.3f s, published step %.3f s", sequences,
            floor, publishedStep);
      QVERIFY(sequences == 1 ? floor > publishedStep : floor < publishedStep);
    }
  }

  void coreParameterCounts() {
    for (const CoreRow& row : kCoreTable) {
      const double billions = coreModel(row).parameterCount() / 1e9;
      QVERIFY2(std::abs(billions - std::stod(row.params)) < 0.1 * std::stod(row.params),
               qPrintable(QString("%1B: %2").arg(row.params).arg(billions)));
    }
  }

  void coreThroughput_data() {
    QTest::addColumn<int>("row");
    for (int i = 0; i < int(std::size(kCoreTable)); ++i)
      QTest::addRow("%sB", kCoreTable[i].params) << i;
  }
  // Every row within 15% of the published TFLOP/s per GPU, projected with one layout rule (see
  // coreLayout) and no constant fitted to the table, but those kOutsideBar names (expected to
  // fail, so one that comes within the bar fails the test until it is taken off the list); each
  // row also fits in 80 GB, as it ran.
  void coreThroughput() {
    QFETCH(int, row);
    const CoreRow& r = kCoreTable[row];
    const Projection p = project(coreModel(r), coreLayout(r), h100s(r.gpus));
    Layout serialised = coreLayout(r);  // the same run with every exchange on the step's path
    serialised.overlapTpComm = serialised.overlapDpComm = serialised.overlapParamGather = false;
    const double without = projectedTflops(project(coreModel(r), serialised, h100s(r.gpus)), r);
    const double tflops = projectedTflops(p, r), ratio = tflops / r.tflops;
    const double step = p.stepSeconds;
    qInfo(
        "Megatron-Core H100 %4sB: tp %d pp %2d dp %2d m %2d: projected %6.1f TFLOP/s per GPU, "
        "published %5.1f (%+5.1f%%; without overlap %+5.1f%%); step %.2f s = compute %.0f%%, "
        "tp %.1f%% (hidden %.1f%%), bubble %.0f%%, dp %.1f%% (hidden %.1f%%); memory %.1f GB",
        r.params, r.tp, r.pp, p.layout.dp, p.layout.microBatches, tflops, r.tflops,
        100 * (ratio - 1), 100 * (without / r.tflops - 1), step, 100 * p.split.compute / step,
        100 * p.split.tpComm / step, 100 * p.split.tpCommHidden / step,
        100 * p.split.ppBubble / step, 100 * p.split.dpCommExposed / step,
        100 * p.split.dpCommHidden / step, p.memory.total() / 1e9);
    for (const char* tag : kOutsideBar)
      if (QString(QTest::currentDataTag()) == tag)
        QEXPECT_FAIL("", "unmeasured sustained rates or unpublished settings (see kOutsideBar)",
                     Continue);
    QVERIFY2(
        std::abs(ratio - 1) <= 0.15,
        qPrintable(
            QString("%1B: projected %2, published %3").arg(r.params).arg(tflops).arg(r.tflops)));
    QVERIFY2(p.fits(), qPrintable(QString("%1 GB").arg(p.memory.total() / 1e9)));
    QVERIFY(near(p.split.total(), p.stepSeconds, 1e-9));
  }
};

QTEST_GUILESS_MAIN(TstProjectionOverlap)
#include "tst_projection_overlap.moc"
