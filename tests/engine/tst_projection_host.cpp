// The projection fed this machine's measured figures (projection/host_profile.h): with figures
// given by hand, the projected step follows from them exactly as the model says (each rank's
// share of the cores, one measured link for every group, the engine's gradient calls, the
// attention kernel's own rate); measured here, the figures are sane. The check against measured
// step times needs a quiet machine: tst_projection_host_timing and `paralab-bench project`.
// Run: ctest -R tst_projection_host --output-on-failure
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "config.h"
#include "projection/host_profile.h"

using namespace paralab;
using namespace paralab::projection;

namespace {

// Figures a machine could have, given by hand so the arithmetic below is exact.
HostProfile handProfile(int cores, int ranks) {
  HostProfile h;
  h.cores = cores;
  h.ranks = ranks;
  h.gemmFlops = 100e9;
  h.bytesPerS = 10e9;
  h.attentionFlops = 5e9;
  h.link.title = "hand";
  h.link.alphaS = 10e-6;
  h.link.bytesPerS = 1e9;
  return h;
}

// The settings of one of the layouts the projection is checked on (lessonLayouts()), whose
// name starts with `lesson`.
RunConfig checkedLayout(const std::string& lesson) {
  for (const CheckedLayout& l : lessonLayouts())
    if (std::string(l.name).starts_with(lesson)) {
      RunConfig c;
      applyJson(c, nlohmann::json::parse(l.settings));
      return c;
    }
  qFatal("no checked layout '%s'", lesson.c_str());
}

// Lesson 5's experiment: the MLP over 4 thread ranks, ring all-reduce per tensor.
RunConfig lesson5() { return checkedLayout("lesson 5:"); }

// Lesson 10's: the GPT over tp 2.
RunConfig lesson10() { return checkedLayout("lesson 10:"); }

bool near(double a, double b, double relative = 1e-9) {
  return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
}

}  // namespace

class TestProjectionHost : public QObject {
  Q_OBJECT

 private slots:
  // More ranks than cores: each rank computes at cores / ranks of a core, so compute time
  // scales by ranks / cores; with a core each, not at all.
  void ranksShareTheCores() {
    const RunConfig c = lesson5();
    const Projection shared = projectOnHost(c, handProfile(2, 4));
    const Projection own = projectOnHost(c, handProfile(4, 4));
    QCOMPARE(handProfile(2, 4).coreShare(), 0.5);
    QCOMPARE(handProfile(8, 4).coreShare(), 1.0);
    QVERIFY(near(shared.split.compute, 2 * own.split.compute));
    QVERIFY(near(shared.split.optimizer, 2 * own.split.optimizer));
    // The link is the machine's, not the cores': communication does not scale.
    QVERIFY(near(shared.split.dpCommExposed, own.split.dpCommExposed));
  }

  // A pipeline on fewer cores than stages: its schedule played out in time, a stage waiting in
  // the bubble leaving its core to the others. The step lies between the work at the shared
  // rate (every stage busy all along) and the whole pipeline at the shared rate.
  void pipelineSharesTheCores() {
    RunConfig c = lesson10();
    c.tp = 1;
    c.pp = 4;
    c.ranks = 4;
    c.layers = 4;
    c.batch = 32;
    c.microbatches = 4;
    const Projection own = projectOnHost(c, handProfile(4, 4));
    const Projection shared = projectOnHost(c, handProfile(2, 4));
    QVERIFY(own.split.ppBubble > 0);
    QCOMPARE(shared.split.compute, own.split.compute);  // the work, at a core each
    QVERIFY(near(shared.stepSeconds, shared.split.total()));
    const double pipeline = shared.stepSeconds - shared.split.dpCommExposed - shared.split.optimizer;
    const double ownPipeline = own.stepSeconds - own.split.dpCommExposed - own.split.optimizer;
    double work = 0;  // every stage's micro-batches, over the two cores
    for (size_t k = 0; k < own.stageForwardS.size(); ++k)
      work += 4 * (own.stageForwardS[k] + own.stageBackwardS[k]) / 2;
    QVERIFY2(pipeline >= work - 1e-12 && pipeline < 2 * ownPipeline,
             qPrintable(QString("%1 in [%2, %3)").arg(pipeline).arg(work).arg(2 * ownPipeline)));
    // With a core per stage the played-out schedule is the formula's (m + p - 1) slots.
    std::vector<double> f(4, 1.0), b(4, 2.0);
    QVERIFY(near(sharedCoresPipelineTime(f, b, 4, Schedule::OneFOneB, 4), 7 * 3.0));
    QVERIFY(near(sharedCoresPipelineTime(f, b, 4, Schedule::GPipe, 4), 7 * 3.0));
    // One core for four stages: nothing overlaps, all the work one after another.
    QVERIFY(near(sharedCoresPipelineTime(f, b, 4, Schedule::OneFOneB, 1), 4 * 4 * 3.0));
  }

  // Every group talks over the one measured link.
  void everyGroupUsesTheMeasuredLink() {
    const Projection p = projectOnHost(lesson10(), handProfile(2, 2));
    for (const Link* l : {&p.tpLink, &p.ppLink, &p.dpLink, &p.cpLink, &p.epLink}) {
      QCOMPARE(QString::fromStdString(l->title), QString("hand"));
      QCOMPARE(l->alphaS, 10e-6);
      QCOMPARE(l->bytesPerS, 1e9);
    }
  }

  // The engine's per-tensor sync: one ring all-reduce per parameter tensor (16 for the MLP of 2
  // blocks), each paying 2 (n - 1) latencies, after the backward (nothing hidden).
  void perTensorSyncPaysALatencyPerTensor() {
    const RunConfig c = lesson5();
    const Projection p = projectOnHost(c, handProfile(2, 4));
    const double gradientBytes = 4.0 * double(p.parameters);
    const int n = 4, tensors = 16;
    const double expected =
        tensors * 2 * (n - 1) * 10e-6 + 2.0 * (n - 1) / n * gradientBytes / 1e9;
    QVERIFY2(near(p.split.dpCommExposed, expected, 1e-9),
             qPrintable(QString("%1 vs %2").arg(p.split.dpCommExposed).arg(expected)));
    // Bucketed instead: 0.25 MiB buckets, overlapped with the backward, so less is exposed.
    RunConfig bucketed = c;
    bucketed.dpVersion = DpVersion::Bucket;
    QVERIFY(projectOnHost(bucketed, handProfile(2, 4)).split.dpCommExposed <
            p.split.dpCommExposed);
  }

  // ZeRO-1 in the engine: a reduce-scatter and an all-gather per unit (the MLP's input layer,
  // its blocks, its head), after the backward.
  void zeroSyncsPerUnit() {
    RunConfig c = lesson5();
    c.zero = 1;
    c.optimizer = "adam";
    const Projection p = projectOnHost(c, handProfile(2, 4));
    const double bytes = 4.0 * double(p.parameters);
    const int n = 4, units = 4;
    const double expected = 2 * units * (n - 1) * 10e-6 + 2 * (n - 1.0) / n * bytes / 1e9;
    QVERIFY2(near(p.split.dpCommExposed, expected, 1e-9),
             qPrintable(QString("%1 vs %2").arg(p.split.dpCommExposed).arg(expected)));
  }

  // The GPT's attention runs at the attention kernel's measured rate, not the GEMMs'.
  void attentionAtItsOwnRate() {
    HostProfile slow = handProfile(2, 2), fast = slow;
    fast.attentionFlops = 2 * slow.attentionFlops;
    const Projection a = projectOnHost(lesson10(), slow), b = projectOnHost(lesson10(), fast);
    QVERIFY(a.split.compute > b.split.compute);
    double attention = 0;  // the products' FLOPs in one block, forward and backward
    for (const OpCost& op : a.blockOps)
      if (op.name.find("attention scores") == 0 || op.name.find("attention weighted") == 0)
        attention += op.flops;
    QVERIFY(attention > 0);
    // 2 blocks, one micro-batch (tp 2 splits the heads: each rank computes its half), at the
    // rank's share of a core (1: two ranks, two cores).
    const double saved = 2 * (attention / 5e9 - attention / 10e9);
    QVERIFY2(near(a.split.compute - b.split.compute, saved, 1e-6),
             qPrintable(QString("%1 vs %2").arg(a.split.compute - b.split.compute).arg(saved)));
  }

  // The optimizer's update runs at its own measured rate (a CPU's Adam is slower than a copy of
  // its bytes); the zeroing of the gradients stays at the elementwise rate.
  void optimizerAtItsOwnRate() {
    RunConfig c = lesson5();
    c.zero = 1;
    c.optimizer = "adam";
    HostProfile slow = handProfile(2, 4), fast = slow;
    slow.optimizerBytesPerS = 2e9;
    fast.optimizerBytesPerS = 4e9;
    const Projection a = projectOnHost(c, slow), b = projectOnHost(c, fast);
    // ZeRO-1 over 4 replicas: each rank updates a quarter of the weights, at half a core; Adam
    // reads and writes the weights, m and v (8 bytes each) and reads the gradient (4).
    const double updated = double(a.parameters) / 4, bytes = 8.0 * 3 + 4, share = 0.5;
    const double saved = updated * bytes * (1 / (2e9 * share) - 1 / (4e9 * share));
    QVERIFY2(near(a.split.optimizer - b.split.optimizer, saved, 1e-9),
             qPrintable(QString("%1 vs %2").arg(a.split.optimizer - b.split.optimizer).arg(saved)));
    const double zeroing = updated * 4 / (10e9 * share);
    QVERIFY2(near(b.split.optimizer, updated * bytes / (4e9 * share) + zeroing, 1e-9),
             qPrintable(QString::number(b.split.optimizer)));
    // Not measured (0): at the elementwise rate, as on a GPU.
    HostProfile unmeasured = slow;
    unmeasured.optimizerBytesPerS = 0;
    QVERIFY2(near(projectOnHost(c, unmeasured).split.optimizer,
                  updated * (bytes + 4) / (10e9 * share), 1e-9),
             "an unmeasured optimizer runs at the elementwise rate");
  }

  // The loss runs at its own measured rate, over the whole vocabulary on each tp rank: the
  // engine's GPT computes its head and softmax whole on every rank of a tp group (a cluster's
  // Megatron splits them by vocabulary).
  void lossAtItsOwnRate() {
    HostProfile slow = handProfile(2, 2), fast = slow;
    slow.lossBytesPerS = 1e9;
    fast.lossBytesPerS = 2e9;
    const RunConfig c = lesson10();
    const Projection a = projectOnHost(c, slow), b = projectOnHost(c, fast);
    // One micro-batch of 16 windows of 64 tokens, each against the 96 symbols: 2 (4 + 4) bytes a
    // logit, at a core each (2 ranks, 2 cores).
    const double bytes = 2.0 * (4 + 4) * 96 * 16 * 64;
    const double saved = bytes / 1e9 - bytes / 2e9;
    QVERIFY2(near(a.split.compute - b.split.compute, saved, 1e-6),
             qPrintable(QString("%1 vs %2").arg(a.split.compute - b.split.compute).arg(saved)));
    // The head's outputs per rank: all 96 here; on a cluster's kernels, split over tp 2.
    const auto headOutputs = [](const EndsWork& w) {
      Roofline unit;
      unit.peakFlops = 1, unit.bytesPerS = 1, unit.elementBytes = 4;
      for (const OpCost& op : lastEnd(unit, w))
        if (op.name == "output head (logits)") return op.n;
      return 0.0;
    };
    ModelSpec cluster = a.model;
    cluster.engineKernels = false;
    QCOMPARE(headOutputs(endsOf(a.model, a.layout)), 96.0);
    QCOMPARE(headOutputs(endsOf(cluster, a.layout)), 48.0);
  }

  // Measured here: positive, finite, and about what a core can do.
  void measuredFiguresAreSane() {
    for (const RunConfig& c : {lesson5(), lesson10()}) {
      const HostProfile h = measureHost(c);
      QVERIFY(h.cores >= 1);
      QCOMPARE(h.ranks, c.ranks);
      QVERIFY2(h.gemmFlops > 1e8 && h.gemmFlops < 1e13, qPrintable(QString::number(h.gemmFlops)));
      QVERIFY2(h.bytesPerS > 1e7 && h.bytesPerS < 1e13, qPrintable(QString::number(h.bytesPerS)));
      QVERIFY(h.link.alphaS > 0 && h.link.bytesPerS > 0);
      QCOMPARE(h.attentionFlops > 0, c.model == ModelKind::Gpt);
      QVERIFY2(h.optimizerBytesPerS > 1e7 && h.optimizerBytesPerS < 1e13,
               qPrintable(QString::number(h.optimizerBytesPerS)));
      QVERIFY2(h.lossBytesPerS > 1e7 && h.lossBytesPerS < 1e13,
               qPrintable(QString::number(h.lossBytesPerS)));
      QVERIFY2(h.dataBytesPerS > 1e6 && h.dataBytesPerS < 1e13,
               qPrintable(QString::number(h.dataBytesPerS)));
      const Projection p = projectOnHost(c, h);
      QVERIFY(std::isfinite(p.stepSeconds) && p.stepSeconds > 0);
      QVERIFY(QString::fromStdString(p.cluster.gpu.title).contains("measured"));
    }
  }

  // What a projection does not cover is refused with the field named.
  void refusesWhatItDoesNotCover() {
    RunConfig c = lesson5();
    c.tp = 3;  // does not divide the hidden width
    c.ranks = 3;
    try {
      projectOnHost(c, handProfile(2, 3));
      QFAIL("tp 3 was projected");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).startsWith("tp"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestProjectionHost)
#include "tst_projection_host.moc"
