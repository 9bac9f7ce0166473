// CPU against GPU layer by layer (teach/roofline.h) and layouts side by side on a cluster
// (teach/layout_projection.h): the projected figures are compute_model's and projection's own,
// the roofline puts batch 1 under memory and batch 4096's large GEMMs under compute on an H100,
// every layer is measured on this CPU, and tensor parallelism across nodes costs a larger share
// of the step than inside one. (Measured times are printed, never asserted.)
// Run: ctest -R tst_teach_roofline -V
#include <QtTest>
#include <cmath>

#include "cuda/device.h"
#include "projection/compute_model.h"
#include "projection/gpu_spec.h"
#include "teach/layout_projection.h"
#include "teach/roofline.h"

using namespace paralab;
using namespace paralab::teach;
namespace pj = paralab::projection;

class TstTeachRoofline : public QObject {
  Q_OBJECT
 private slots:
  // Each layer's projection is the sum of compute_model's operations for that layer, recomputed
  // here from gemmCost and elementwiseCost with the shapes the MLP has.
  void projectedLayersAreComputeModelsFigures_data() {
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("precision");
    QTest::newRow("h100 fp32 batch 1") << "h100-sxm" << 1 << int(pj::Precision::Fp32);
    QTest::newRow("h100 fp32 batch 4096") << "h100-sxm" << 4096 << int(pj::Precision::Fp32);
    QTest::newRow("a100 tf32 batch 4096") << "a100-80gb" << 4096 << int(pj::Precision::Tf32);
  }
  void projectedLayersAreComputeModelsFigures() {
    QFETCH(QString, gpu);
    QFETCH(int, batch);
    QFETCH(int, precision);
    const pj::Roofline r = pj::Roofline::of(pj::loadGpu(gpu.toStdString()), pj::Precision(precision));
    const int H = 128, L = 2;
    const std::vector<RooflineLayer> layers = projectedMlpLayers(r, H, 784, 10, L, batch);
    QStringList keys;
    for (const RooflineLayer& l : layers) keys << QString::fromStdString(l.key);
    QCOMPARE(keys, QStringList({"input", "layernorm", "fc1", "gelu", "fc2", "residual", "head",
                                "loss"}));
    const auto layer = [&](const char* key) -> const RooflineLayer& {
      for (const RooflineLayer& l : layers)
        if (l.key == key) return l;
      qFatal("no layer %s", key);
    };
    const double B = batch, e = r.elementBytes;
    // fc1: forward B x 4H x H, input gradient B x H x 4H, weight gradient H x 4H x B.
    const double fc1 = pj::gemmCost(r, "", B, 4 * H, H).seconds +
                       pj::gemmCost(r, "", B, H, 4 * H).seconds +
                       pj::gemmCost(r, "", H, 4 * H, B).seconds;
    QCOMPARE(layer("fc1").projected.at(0).seconds, fc1);
    QCOMPARE(layer("fc1").count, L);
    QCOMPARE(layer("fc1").ops.size(), size_t(3));
    // LayerNorm: read and write B x H, the backward twice that.
    QCOMPARE(layer("layernorm").projected.at(0).seconds,
             pj::elementwiseCost(r, "", 3 * 2 * e * H * B).seconds);
    QCOMPARE(layer("layernorm").projected.at(0).computeBound, false);
    // The input layer: forward and the weight gradient only.
    QCOMPARE(layer("input").projected.at(0).seconds,
             pj::gemmCost(r, "", B, H, 784).seconds + pj::gemmCost(r, "", 784, H, B).seconds);
    QCOMPARE(layer("input").count, 1);
    // The whole step: the layers, the block's L times, against compute_model's own lists.
    pj::BlockWork w;
    w.attention = false, w.microBatch = B, w.hidden = H, w.heads = 1;
    pj::EndsWork ends;
    ends.gpt = false, ends.samples = B, ends.hidden = H;
    const double step = pj::totalSeconds(pj::firstEnd(r, ends)) +
                        L * (pj::totalSeconds(pj::blockForward(r, w)) +
                             pj::totalSeconds(pj::blockBackward(r, w))) +
                        pj::totalSeconds(pj::lastEnd(r, ends));
    RooflineBatch rb;
    rb.layers = layers;
    QVERIFY(std::abs(rb.projectedStepSeconds(0) - step) <= 1e-12 * step);
  }

  // The roofline's verdict: at batch 1 every layer of an H100 waits on memory (under 1 FLOP
  // per byte, far below its ridge); at batch 4096 the Linear layers' GEMMs are compute-bound,
  // the elementwise layers and the 10-wide head stay memory-bound.
  void batchOneIsMemoryBoundBatch4096ComputeBound() {
    const pj::Roofline r = pj::Roofline::of(pj::loadGpu("h100-sxm"), pj::Precision::Fp32);
    for (const RooflineLayer& l : projectedMlpLayers(r, 128, 784, 10, 2, 1)) {
      QVERIFY2(!l.projected[0].computeBound, l.key.c_str());
      QVERIFY2(l.projected[0].intensity() < 1, l.key.c_str());
    }
    for (const RooflineLayer& l : projectedMlpLayers(r, 128, 784, 10, 2, 4096)) {
      // The head's GEMM has 10 outputs: a few FLOP per byte, memory-bound even at batch 4096.
      const bool gemm = l.key == "fc1" || l.key == "fc2" || l.key == "input";
      QVERIFY2(l.projected[0].computeBound == gemm, l.key.c_str());
      QVERIFY2(gemm == (l.projected[0].intensity() >= r.ridge()), l.key.c_str());
      QVERIFY(l.projected[0].smBusy > 0 && l.projected[0].smBusy <= 1 + 1e-12);
    }
  }

  // The benchmark itself at small sizes: every layer measured on this CPU at every batch, the
  // projection beside it for each GPU asked for, the step the sum of its layers.
  void runMeasuresEveryLayer() {
    RooflineOptions o;
    o.hidden = 32;
    o.layers = 2;
    o.batches = {1, 64};
    o.repeats = 2;
    o.measureGpu = false;
    int lastDone = 0, lastTotal = 0;
    const RooflineResult r = runRoofline(o, [&](int done, int total) {
      lastDone = done, lastTotal = total;
      return true;
    });
    QVERIFY(!r.cancelled);
    QCOMPARE(lastDone, lastTotal);
    QCOMPARE(lastTotal, 2 * 8);
    QCOMPARE(r.gpus.size(), size_t(2));
    QCOMPARE(QString::fromStdString(r.gpus[0].title), QString("NVIDIA H100 SXM"));
    QCOMPARE(QString::fromStdString(r.precision), QString("fp32"));
    QVERIFY(r.gpus[0].ridge > r.gpus[1].ridge * 0.5 && r.gpus[0].ridge > 1);
    QCOMPARE(r.batches.size(), size_t(2));
    QCOMPARE(r.parameters, 784LL * 32 + 32 + 2 * (2 * 32 + 32 * 128 + 128 + 128 * 32 + 32) +
                               32 * 10 + 10);
    for (const RooflineBatch& b : r.batches) {
      double sum = 0;
      for (const RooflineLayer& l : b.layers) {
        QVERIFY2(l.cpuSeconds > 0 && std::isfinite(l.cpuSeconds), l.key.c_str());
        QCOMPARE(l.projected.size(), size_t(2));
        QVERIFY(l.projected[0].seconds > 0);
        // A100 is slower than H100 on every layer: less bandwidth and fewer FLOP/s.
        QVERIFY2(l.projected[1].seconds > l.projected[0].seconds, l.key.c_str());
        QCOMPARE(l.gpuSeconds, 0.0);
        sum += l.count * l.cpuSeconds;
        qInfo("batch %4d %-10s CPU %10.2f us   H100 %8.3f us (%s)", b.batch, l.key.c_str(),
              l.cpuSeconds * 1e6, l.projected[0].seconds * 1e6,
              l.projected[0].computeBound ? "compute" : "memory");
      }
      QCOMPARE(b.cpuStepSeconds(), sum);
    }
    QCOMPARE(QString::fromStdString(r.gpuNotRun), QString("not asked for"));
  }

  // Where a GPU answers (a real one, or the emulated runtime of tst_teach_roofline_emulated),
  // every layer is timed there too with the same calls, and the result names it.
  void gpuTimesEveryLayerWhereThereIsOne() {
    const paralab::kernels::GpuInfo gpus = paralab::kernels::cuda_query_devices();
    if (gpus.count == 0) QSKIP(qPrintable("no GPU here: " + QString::fromStdString(gpus.reason)));
    RooflineOptions o;
    o.hidden = 16, o.layers = 1, o.batches = {1, 4}, o.repeats = 1;
    o.gpuKernel = gpus.emulated ? "coalesced" : "vendor";  // the emulated GPU has no cuBLAS
    const RooflineResult r = runRoofline(o);
    QVERIFY2(!r.measuredGpu.empty(), r.gpuNotRun.c_str());
    for (const RooflineBatch& b : r.batches)
      for (const RooflineLayer& l : b.layers) {
        QVERIFY2(l.gpuSeconds > 0 && std::isfinite(l.gpuSeconds), l.key.c_str());
        if (!gpus.emulated)  // a real GPU: printed beside the projection, never asserted
          qInfo("batch %d %-10s GPU %.2f us, projected %.3f us", b.batch, l.key.c_str(),
                l.gpuSeconds * 1e6, l.projected[0].seconds * 1e6);
      }
  }

  void cancelStopsEarly() {
    RooflineOptions o;
    o.hidden = 16;
    o.batches = {1, 8};
    o.repeats = 1;
    o.measureGpu = false;
    const RooflineResult r = runRoofline(o, [](int done, int) { return done < 3; });
    QVERIFY(r.cancelled);
    QCOMPARE(r.batches[0].layers[2].cpuSeconds > 0, true);
    QCOMPARE(r.batches[1].layers[0].cpuSeconds, 0.0);
  }

  void badOptionsAreNamed() {
    RooflineOptions o;
    o.hidden = 0;
    try {
      runRoofline(o);
      QFAIL("hidden 0 accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY(QString(e.what()).startsWith("hidden"));
    }
  }

  // Lesson 13's layouts: the 70B-class GPT on 512 H100s, pipeline 8; tp 8 keeps each tensor-
  // parallel group in one node, tp 16 spans two, and its TP communication takes a larger share
  // of the step. The figures are project()'s own.
  void layoutProjectionTpAcrossNodesCostsMore() {
    LayoutProjectionOptions o;  // the lesson's defaults
    const LayoutProjection p = runLayoutProjection(o);
    QCOMPARE(p.points.size(), size_t(2));
    const LayoutPoint &tp8 = p.points[0], &tp16 = p.points[1];
    QVERIFY2(tp8.projected, tp8.refused.c_str());
    QVERIFY2(tp16.projected, tp16.refused.c_str());
    QCOMPARE(tp8.tpNodes, 1);
    QCOMPARE(tp16.tpNodes, 2);
    QVERIFY(!tp8.projection.tpLink.interNode);
    QVERIFY(tp16.projection.tpLink.interNode);
    QCOMPARE(tp8.projection.layout.dp, 8);
    QCOMPARE(tp16.projection.layout.dp, 4);
    QVERIFY(tp16.tpShare() > tp8.tpShare());
    QVERIFY(tp16.projection.stepSeconds > tp8.projection.stepSeconds);
    // The same figures project() gives for the same inputs.
    pj::ModelSpec m = p.model;
    pj::Layout l;
    l.tp = 16, l.pp = 8, l.globalBatch = 1024, l.zero = 1, l.recompute = Recompute::Selective;
    const pj::Projection direct = pj::project(m, l, p.cluster);
    QCOMPARE(tp16.projection.split.tpComm, direct.split.tpComm);
    QCOMPARE(tp16.projection.stepSeconds, direct.stepSeconds);
    // One all-reduce of a micro-batch's activations: 1 x 4096 x 8192 bf16 values.
    QCOMPARE(tp8.tpAllReduceBytes, 4096.0 * 8192 * 2);
    QCOMPARE(tp8.tpAllReduceSeconds,
             pj::collectiveSeconds(pj::Collective::AllReduce, tp8.tpAllReduceBytes, 8,
                                   tp8.projection.tpLink));
    qInfo("tp 8: TP comm %.1f%% of %.0f ms; tp 16: %.1f%% of %.0f ms", 100 * tp8.tpShare(),
          tp8.projection.stepSeconds * 1e3, 100 * tp16.tpShare(), tp16.projection.stepSeconds * 1e3);
  }

  // Over a node's single 10 GbE port the crossing is far slower than NVLink: tp 16's TP
  // communication then dominates the step.
  void layoutProjectionOverEthernet() {
    LayoutProjectionOptions o;
    o.nodeLink = "ethernet";
    const LayoutProjection p = runLayoutProjection(o);
    const LayoutPoint &tp8 = p.points[0], &tp16 = p.points[1];
    QVERIFY(tp16.projection.tpLink.bytesPerS < tp8.projection.tpLink.bytesPerS / 10);
    QVERIFY(tp16.tpShare() > 0.5);
  }

  void layoutProjectionRefusesWhatDoesNotDivide() {
    LayoutProjectionOptions o;
    o.tps = {8, 3};
    const LayoutProjection p = runLayoutProjection(o);
    QVERIFY(p.points[0].projected);
    QVERIFY(!p.points[1].projected);
    QVERIFY(!p.points[1].refused.empty());
  }
};

QTEST_GUILESS_MAIN(TstTeachRoofline)
#include "tst_teach_roofline.moc"
