// The overlap meter (metrics/overlap.h): built spans give each figure exactly, the trainer's
// steps carry it on every rank and its line, and bucketed data parallelism over an emulated
// link hides a larger share of its communication than one all-reduce per tensor after the
// backward. Run: ctest -R tst_overlap --output-on-failure
#include <QtTest>
#include <nlohmann/json.hpp>

#include "loss_trajectory.h"
#include "overlap_run.h"
#include "metrics/overlap.h"
#include "metrics/run_record.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

constexpr int64_t kMs = 1'000'000;  // ns

Span span(SpanKind kind, int64_t fromMs, int64_t toMs) {
  Span s;
  s.kind = kind, s.startNs = fromMs * kMs, s.endNs = toMs * kMs;
  return s;
}

// A data-parallel run over an emulated ethernet: the gradients' all-reduce takes long enough
// beside the backward to be seen hiding (or not).
RunConfig ethernetRun(DpVersion version) {
  RunConfig c = test::smallRun(128, 4, 1024);
  c.ranks = 4;
  c.link = "ethernet";
  c.dpVersion = version;
  c.bucketMb = 0.02;  // several buckets, the first sent while the backward goes on
  return c;
}

}  // namespace

class TestOverlap : public QObject {
  Q_OBJECT

 private slots:
  // A step of 100 ms drawn by hand:
  //   compute  forward [0, 30), backward [30, 60), optimizer [80, 90)      union 70 ms
  //   comm     [40, 70) and, inside it, [50, 55); [75, 80); [95, 120)      union 40 ms
  //            (the last clipped to the step's end: 5 ms)
  //   idle     an Idle span [90, 95): neither compute nor communication
  // hidden = comm ∩ compute = [40, 60): 20 ms; exposed = [60, 70) + [75, 80) + [95, 100): 20 ms;
  // idle = the step less compute ∪ comm = [70, 75) + [90, 95): 10 ms.
  void builtSpansGiveEachFigure() {
    const std::vector<Span> spans = {
        span(SpanKind::Forward, 0, 30), span(SpanKind::Backward, 30, 60),
        span(SpanKind::Comm, 40, 70),   span(SpanKind::Comm, 50, 55),
        span(SpanKind::Comm, 75, 80),   span(SpanKind::Optimizer, 80, 90),
        span(SpanKind::Idle, 90, 95),   span(SpanKind::Comm, 95, 120),
        span(SpanKind::Data, -10, 0),  // before the step: left out
    };
    const OverlapMeter m = overlapMeter(spans, 0, 100 * kMs);
    QCOMPARE(m.computeMs, 70.0);
    QCOMPARE(m.commMs, 40.0);
    QCOMPARE(m.hiddenMs, 20.0);
    QCOMPARE(m.exposedMs, 20.0);
    QCOMPARE(m.idleMs, 10.0);
    QCOMPARE(m.hiddenShare(), 0.5);

    // No communication: nothing hidden, nothing exposed; nothing at all: the step is idle.
    const OverlapMeter alone = overlapMeter({span(SpanKind::Forward, 10, 20)}, 0, 50 * kMs);
    QCOMPARE(alone.computeMs, 10.0);
    QCOMPARE(alone.commMs, 0.0);
    QCOMPARE(alone.hiddenShare(), 0.0);
    QCOMPARE(alone.idleMs, 40.0);
    QCOMPARE(overlapMeter({}, 0, 7 * kMs).idleMs, 7.0);

    // On the line and back, and summed over a run in its summary line.
    StepMetrics step;
    step.step = 1;
    RankMetrics r;
    r.rank = 1;
    r.overlap = m;
    RankMetrics r0;
    step.ranks = {r0, r};
    const StepMetrics back = stepMetricsFromJson(nlohmann::json::parse(toJson(step).dump()));
    QVERIFY(back.ranks.at(1).overlap == m);
    QVERIFY(!back.ranks.at(0).overlap);
    nlohmann::json bad = toJson(step);
    bad["ranks"][1]["overlap"].erase("hidden_ms");
    try {
      stepMetricsFromJson(bad);
      QFAIL("a line without hidden_ms read");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("ranks[1].overlap.hidden_ms: missing"));
    }
    RunSummary summary;
    summary.add(step);
    summary.add(step);
    QCOMPARE(int(summary.overlap.size()), 2);
    QCOMPARE(summary.overlap[1].hiddenMs, 40.0);
    QCOMPARE(summary.overlap[1].exposedMs, 40.0);
    QCOMPARE(summary.overlap[0].commMs, 0.0);
    const nlohmann::json last = toJson(summary, RunConfig());
    QCOMPARE(last.at("overlap").size(), size_t(2));
    QCOMPARE(last.at("overlap")[1].at("rank").get<int>(), 1);
    QCOMPARE(last.at("overlap")[1].at("idle_ms").get<double>(), 20.0);
  }

  // Every rank of a trainer's step carries the meter, whose parts add up to the step: the
  // communication is hidden or exposed, the step compute, exposed or idle.
  void trainerStepsCarryTheMeter() {
    RunConfig c = ethernetRun(DpVersion::Bucket);
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    QCOMPARE(int(m.ranks.size()), c.ranks);
    for (const RankMetrics& r : m.ranks) {
      QVERIFY(r.overlap);
      const OverlapMeter& o = *r.overlap;
      QVERIFY(o.commMs > 0);
      QVERIFY(std::abs(o.hiddenMs + o.exposedMs - o.commMs) <= 1e-9 * m.stepMs);
      QVERIFY(std::abs(o.computeMs + o.exposedMs + o.idleMs - m.stepMs) <= 1e-9 * m.stepMs);
      QVERIFY(o.computeMs <= r.computeMs + 1e-9);  // a union is never more than the sum
    }
    c.instrument = false;  // no spans recorded: no meter
    Trainer quiet(c);
    for (const RankMetrics& r : quiet.step().ranks) QVERIFY(!r.overlap);
  }

  // The bar of issue "communication you can watch hide": the same run, its gradients summed in
  // buckets while the backward goes on, hides a larger share of its communication than with
  // one all-reduce per tensor after the backward (which has nothing left to hide behind but
  // the optimizer's step, after it). Shares, over 4 ranks and 3 steps, not times.
  void bucketsHideMoreThanPerTensor() {
    const OverlapMeter bucket = test::meterOverSteps(ethernetRun(DpVersion::Bucket), 3);
    const OverlapMeter perTensor = test::meterOverSteps(ethernetRun(DpVersion::PerTensor), 3);
    qInfo(
        "ethernet (emulated), 4 ranks, 3 steps: bucket %.3f of %.3f ms hidden (%.0f %%), "
        "per-tensor %.3f of %.3f ms (%.0f %%)",
        bucket.hiddenMs, bucket.commMs, 100 * bucket.hiddenShare(), perTensor.hiddenMs,
        perTensor.commMs, 100 * perTensor.hiddenShare());
    QVERIFY(bucket.commMs > 0 && perTensor.commMs > 0);
    QVERIFY2(bucket.hiddenShare() > 2 * perTensor.hiddenShare() + 0.05,
             qPrintable(QString("bucket hides %1, per-tensor %2")
                            .arg(bucket.hiddenShare())
                            .arg(perTensor.hiddenShare())));
  }
};

QTEST_GUILESS_MAIN(TestOverlap)
#include "tst_overlap.moc"
