// The zero-bubble schedule (--schedule zb-h1): B then W is the unsplit backward bit for bit;
// the plan's exact counts and its bubble beside the paper's formula; the real run equal to the
// serial one (MLP and GPT; dp, tp, sp, ZeRO, recomputation) and following its plan; refusals.
// Run: ctest -R tst_pipeline_zero_bubble
#include <QtTest>
#include <array>
#include <map>

#include "json_lines.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "pipeline_traffic.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_play.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// `base` cut into `spec` (layout_spec.h; "acc2": --accumulate 2) under `schedule`.
RunConfig scheduled(const RunConfig& base, QString spec, const char* schedule) {
  const bool accumulate = spec.contains("acc2");
  RunConfig c = test::withLayout(base, spec.remove("acc2").simplified());
  c.schedule = schedule;
  if (accumulate) c.accumulate = 2;
  return c;
}

// A model's base run for `spec`: the MLP, or ("gpt" in it, never with "acc2") the small GPT
// with the spec's layers and recomputation.
RunConfig baseOf(QString spec) {
  if (!spec.contains("gpt"))
    return test::withLayout(test::smallRun(32, 8, 48), spec.contains("adam") ? "adam" : "");
  spec.remove("gpt");
  RunConfig c = test::smallGptRun(16);
  const RunConfig shaped = test::withLayout(c, spec);
  c.layers = shaped.layers;
  c.recompute = shaped.recompute;
  // As tst_pipeline_interleaved: Adam over eight blocks turns near-zero gradients' rounding
  // into whole steps; that row trains with momentum.
  if (c.layers > 4) c.optimizer = "momentum";
  return c;
}

QString stripModel(QString spec) { return spec.remove("gpt").remove("adam").simplified(); }

// The serial run for `spec`: its base, with --accumulate 2 where the spec says "acc2".
RunConfig serialOf(const QString& spec) {
  RunConfig c = baseOf(spec);
  if (spec.contains("acc2")) c.accumulate = 2;
  return c;
}

PipeTimes equalTimes(int P, double t) {
  return PipeTimes{.forward = std::vector<double>(size_t(P), t),
                   .backward = std::vector<double>(size_t(P), 2 * t),
                   .weight = std::vector<double>(size_t(P), t)};
}

}  // namespace

class TstPipelineZeroBubble : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The split backward. ZB-H1 runs every micro-batch's B and, later, its W, in the
  // micro-batches' order, as 1F1B runs its backwards: the weight gradients add up in the same
  // order, so the run is 1F1B's bit for bit when B then W is the backward.
  void splitIsTheBackward_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s : {"pp2 M4", "pp4 M8", "dp2 tp2 pp2 M4", "tp2 pp2 sp M4", "dp2 pp2 M4 zero2",
                          "dp2 pp2 M4 zero3 adam", "gpt pp2 M4 L4", "gpt tp2 pp2 sp M4 L4",
                          "gpt pp2 M4 L4 selective", "gpt pp2 M4 L4 full",
                          "gpt dp2 pp2 M4 L4 zero3", "dp2 pp2 M4 bucket0.02 acc2"})
      QTest::newRow(s) << QString(s);
  }
  void splitIsTheBackward() {
    QFETCH(QString, spec);
    const RunConfig base = baseOf(spec);
    const RunConfig plain = scheduled(base, stripModel(spec), "1f1b"),
                    split = scheduled(base, stripModel(spec), "zb-h1");
    QVERIFY2(!split.validate(), split.validate().value_or("").c_str());
    const int steps = 4;
    const test::RunRecord a = test::recordRun(plain, steps), b = test::recordRun(split, steps);
    QCOMPARE(b.losses, a.losses);  // exactly
    QVERIFY(b.params == a.params);
  }

  // [SECTION] The plan. Each stage runs every micro-batch's forward, B and W once, in that
  // order, never the unsplit backward; as many transfers as 1F1B; min(P, M) micro-batches in
  // flight on every stage (1F1B's peak, stage 0's); and blocking sends never wait in a cycle.
  void zbH1Plan() {
    for (int P : {2, 3, 4, 8})
      for (int M : {1, 2, 4, 8, 12}) {
        const QString at = QString("P=%1 M=%2").arg(P).arg(M);
        const auto plan = pipelinePlan(PipeSchedule::ZbH1, P, M);
        QVERIFY2(playSchedule(plan, equalTimes(P, 1.0)), qPrintable(at + " deadlocks"));
        for (int s = 0; s < P; ++s) {
          std::map<PipeAction, int> count;
          std::map<int, std::array<int, 3>> when;  // micro-batch: its F, B, W positions
          for (size_t i = 0; i < plan[size_t(s)].size(); ++i) {
            const PipeStep& p = plan[size_t(s)][i];
            ++count[p.action];
            if (p.action == PipeAction::Forward) when[p.micro][0] = int(i);
            if (p.action == PipeAction::BackwardInput) when[p.micro][1] = int(i);
            if (p.action == PipeAction::BackwardWeight) when[p.micro][2] = int(i);
          }
          QCOMPARE(count[PipeAction::Forward], M);
          QCOMPARE(count[PipeAction::BackwardInput], M);
          QCOMPARE(count[PipeAction::BackwardWeight], M);
          QCOMPARE(count[PipeAction::Backward], 0);
          for (const auto& [m, w] : when) QVERIFY2(w[0] < w[1] && w[1] < w[2], qPrintable(at));
          const int first = s == 0 ? M : 0, last = s == P - 1 ? M : 0;
          QCOMPARE(count[PipeAction::RecvAct], M - first);
          QCOMPARE(count[PipeAction::SendGrad], M - first);
          QCOMPARE(count[PipeAction::SendAct], M - last);
          QCOMPARE(count[PipeAction::RecvGrad], M - last);
          QCOMPARE(peakInFlight(plan[size_t(s)]), std::min(P, M));
        }
      }
  }

  // Equal T_F = T_B = T_W, blocking sends: every stage's bubble within a quarter of
  // (P - 1)/(3M + P - 1) and below 1F1B's in the same times (the bar: 4 stages, 8
  // micro-batches; the formula holds for M >= P).
  void zbH1Bubble() {
    QCOMPARE(scheduleBubble("zb-h1", 4, 8), 3.0 / 27.0);
    QCOMPARE(scheduleBubble("1f1b", 4, 8), bubbleFraction(4, 8));
    for (const auto& [P, M] : {std::pair{4, 8}, {2, 4}, {4, 4}, {8, 16}}) {
      const auto zb = playSchedule(pipelinePlan(PipeSchedule::ZbH1, P, M), equalTimes(P, 1.0));
      const auto plain =
          playSchedule(pipelinePlan(PipeSchedule::OneFOneB, P, M), equalTimes(P, 1.0));
      QVERIFY(zb && plain);
      const double formula = scheduleBubble("zb-h1", P, M);
      for (int s = 0; s < P; ++s) {
        const double b = zb->bubble()[size_t(s)], one = plain->bubble()[size_t(s)];
        qInfo("P=%d M=%d zb-h1 stage %d: bubble %.4f, formula %.4f; 1F1B %.4f, formula %.4f", P, M,
              s, b, formula, one, bubbleFraction(P, M));
        QVERIFY2(std::abs(b - formula) <= 0.25 * formula, qPrintable(QString::number(b)));
        QVERIFY(b < one);
      }
    }
  }

  // [SECTION] The real run equals the serial one: loss at each step, parameters after it.
  void zbH1EqualsSerial_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s :
         {"pp2 M4", "pp4 M8", "dp2 tp2 pp2 M4", "dp2 pp2 M4 zero1 adam", "dp2 pp2 M4 zero2",
          "dp2 pp2 M4 zero3", "tp2 pp2 sp M4", "gpt pp2 M4 L4", "gpt pp4 M8 L8",
          "gpt dp2 tp2 pp2 M4 L4", "gpt pp2 M4 L4 full", "dp2 pp2 M4 zero2 acc2"})
      QTest::newRow(s) << QString(s);
  }
  void zbH1EqualsSerial() {
    QFETCH(QString, spec);
    const RunConfig serial = serialOf(spec);
    const RunConfig parallel = scheduled(serial, stripModel(spec), "zb-h1");
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 20;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "zb-h1 vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, zb-h1 vs serial");
    QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
  }

  // The real run issues the plan's transfers, each one micro-batch's residual stream, keeps
  // the plan's peak of micro-batches in flight (each holding what its B keeps for its W, in
  // its buffers), and reports the schedule's own bubble formula beside the measured bubble.
  void zbH1RealRunFollowsThePlan() {
    const int P = 4, M = 8;
    const RunConfig c = scheduled(test::smallRun(32, 4, 64), "pp4 M8", "zb-h1");
    Trainer t(c);
    t.step();
    const StepMetrics metrics = t.step();
    QVERIFY(metrics.bubbleReference);
    QCOMPARE(*metrics.bubbleReference, scheduleBubble("zb-h1", P, M));
    const auto plan = pipelinePlan(PipeSchedule::ZbH1, P, M);
    const std::vector<RankHoldings> held = t.holdings();
    const int64_t message = int64_t(c.globalBatch() / M) * c.hidden * 4;
    for (int s = 0; s < P; ++s) {
      int64_t sends = 0, recvs = 0;
      const int64_t sent = test::pipelineBytes(t.lastTraffic(s), CommOp::Send, &sends);
      test::pipelineBytes(t.lastTraffic(s), CommOp::Recv, &recvs);
      std::map<PipeAction, int> count;
      for (const PipeStep& p : plan[size_t(s)]) ++count[p.action];
      QCOMPARE(sends, int64_t(count[PipeAction::SendAct] + count[PipeAction::SendGrad]));
      QCOMPARE(recvs, int64_t(count[PipeAction::RecvAct] + count[PipeAction::RecvGrad]));
      QCOMPARE(sent, sends * message);
      int64_t micro = 0;
      for (const HeldSlice& h : held[size_t(s)].items)
        if (h.kind == HoldingKind::Activations && h.tensor == "micro-batch 0 activations")
          micro = h.bytes;
      QVERIFY(micro > 0);
      QCOMPARE(t.memory(s).snapshot().peak[int(MemCategory::Activations)], std::min(P, M) * micro);
    }
  }

  // [SECTION] Refusals: one line naming the setting, exit 2. ZB-H1 runs one chunk per stage.
  void refusals() {
    const auto r = paralab::test::runProgram(
        PARALAB_RUN, {"--pp", "2", "--layers", "4", "--batch", "16", "--microbatches", "4",
                      "--schedule", "zb-h1", "--virtual-stages", "2", "--steps", "1"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString("paralab-run: virtual-stages: belongs to an interleaved schedule "
                            "(--schedule interleaved)\n"));
  }
};

QTEST_GUILESS_MAIN(TstPipelineZeroBubble)
#include "tst_pipeline_zero_bubble.moc"
