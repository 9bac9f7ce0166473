// The pipeline schedules as data (parallel/pipeline/schedule.h) and their playback in modelled
// time (schedule_play.h): every schedule of the table whose backward is one step gives each
// stage M forwards and M backwards, each micro-batch's forward before its backward, matching
// transfers, and with equal stages the bubble (P-1)/(M+P-1). Run: ctest -R tst_pipeline_schedule
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>

#include "config.h"  // ConfigError
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_play.h"

using namespace paralab;

namespace {

bool near(double a, double b) { return std::abs(a - b) < 1e-12; }

// The rows whose backward is one step (a zero-bubble schedule splits it into B and W, and has
// its counts and bubble checked in tst_pipeline_zero_bubble.cpp).
std::vector<PipeScheduleRow> unsplit() {
  std::vector<PipeScheduleRow> out;
  for (const PipeScheduleRow& row : pipeSchedules()) {
    const std::vector<PipeStep> steps = pipelineSchedule(row.name, 0, 2, 2);
    if (std::none_of(steps.begin(), steps.end(),
                     [](const PipeStep& p) { return p.action == PipeAction::BackwardInput; }))
      out.push_back(row);
  }
  return out;
}

}  // namespace

class TestPipelineSchedule : public QObject {
  Q_OBJECT

 private slots:
  // Per stage: M forwards, M backwards, a micro-batch's backward after its forward; an
  // activation received from the stage before unless first, sent on unless last, the same
  // for gradients the other way; one model chunk.
  void everyStageDoesEveryMicroBatchOnce() {
    for (const PipeScheduleRow& row : unsplit())
      for (int P = 1; P <= 8; ++P)
        for (int M = 1; M <= 16; ++M)
          for (int s = 0; s < P; ++s) {
            const QString at = QString("%1 P=%2 M=%3 stage %4").arg(row.name).arg(P).arg(M).arg(s);
            std::map<PipeAction, int> count;
            std::map<int, int> forwardAt, backwardAt;
            const std::vector<PipeStep> steps = pipelineSchedule(row.name, s, P, M);
            for (size_t i = 0; i < steps.size(); ++i) {
              const PipeStep& p = steps[i];
              QVERIFY2(p.micro >= 0 && p.micro < M && p.chunk == 0, qPrintable(at));
              ++count[p.action];
              if (p.action == PipeAction::Forward) forwardAt[p.micro] = int(i);
              if (p.action == PipeAction::Backward) backwardAt[p.micro] = int(i);
            }
            QCOMPARE(count[PipeAction::Forward], M);
            QCOMPARE(count[PipeAction::Backward], M);
            QCOMPARE(count[PipeAction::RecvAct], s > 0 ? M : 0);
            QCOMPARE(count[PipeAction::SendGrad], s > 0 ? M : 0);
            QCOMPARE(count[PipeAction::SendAct], s < P - 1 ? M : 0);
            QCOMPARE(count[PipeAction::RecvGrad], s < P - 1 ? M : 0);
            for (int m = 0; m < M; ++m)
              QVERIFY2(forwardAt.at(m) < backwardAt.at(m), qPrintable(at));
          }
  }

  // GPipe keeps all M micro-batches' activations at the turn; 1F1B at most P - s.
  void activationsInFlight() {
    for (int P = 1; P <= 8; ++P)
      for (int M = 1; M <= 16; ++M)
        for (int s = 0; s < P; ++s) {
          QCOMPARE(peakInFlight(pipelineSchedule("gpipe", s, P, M)), M);
          QCOMPARE(peakInFlight(pipelineSchedule("1f1b", s, P, M)), std::min(P - s, M));
        }
  }

  // Equal stages, a core each: every stage idles (P-1)/(M+P-1) of the step, which is
  // (M+P-1) slots of a forward and a backward, whether sends block or not.
  void playedBubbleIsTheFormula() {
    for (const PipeScheduleRow& row : unsplit())
      for (PipeSends sends : {PipeSends::Blocking, PipeSends::Buffered})
        for (double tb : {1.0, 2.0})
          for (int P = 1; P <= 8; ++P)
            for (int M = 1; M <= 16; ++M) {
              const PipeTimes times{.forward = std::vector<double>(size_t(P), 1.0),
                                    .backward = std::vector<double>(size_t(P), tb),
                                    .sends = sends};
              const auto played = playSchedule(pipelinePlan(row.schedule, P, M), times);
              QVERIFY2(played,
                       qPrintable(QString("%1 P=%2 M=%3 deadlocks").arg(row.name).arg(P).arg(M)));
              QVERIFY(near(played->total(), (M + P - 1) * (1.0 + tb)));
              for (double b : played->bubble()) QVERIFY(near(b, bubbleFraction(P, M)));
            }
    QCOMPARE(bubbleFraction(4, 8), 3.0 / 11.0);
    QVERIFY(near(bubbleFraction(4, 8, 3), 1.0 / 9.0));  // interleaved: the fill over v chunks
  }

  // On one core the stages take turns: the step is all their work, one after another.
  void oneCoreDoesTheWorkInTurn() {
    for (const PipeScheduleRow& row : pipeSchedules()) {
      const PipeTimes times{.forward = {1.0, 2.0, 3.0},
                            .backward = {2.0, 4.0, 6.0},
                            .cores = 1.0,
                            .sends = PipeSends::Buffered};
      const auto played = playSchedule(pipelinePlan(row.schedule, 3, 4), times);
      QVERIFY(played);
      QVERIFY(std::abs(played->total() - 4 * (1.0 + 2.0 + 3.0 + 2.0 + 4.0 + 6.0)) < 1e-9);
    }
  }

  // Why the transfers' order is part of a schedule: two neighbours that send to each other at
  // once wait forever when sends block, and go on when they are buffered.
  void crossedBlockingSendsDeadlock() {
    using A = PipeAction;
    const std::vector<std::vector<PipeStep>> plan{{{A::Forward, 0},
                                                   {A::SendAct, 0},
                                                   {A::Forward, 1},
                                                   {A::SendAct, 1},
                                                   {A::RecvGrad, 0},
                                                   {A::Backward, 0},
                                                   {A::RecvGrad, 1},
                                                   {A::Backward, 1}},
                                                  {{A::RecvAct, 0},
                                                   {A::Forward, 0},
                                                   {A::Backward, 0},
                                                   {A::SendGrad, 0},
                                                   {A::RecvAct, 1},
                                                   {A::Forward, 1},
                                                   {A::Backward, 1},
                                                   {A::SendGrad, 1}}};
    PipeTimes times{.forward = {1.0, 1.0}, .backward = {1.0, 1.0}};
    QVERIFY(!playSchedule(plan, times));
    times.sends = PipeSends::Buffered;
    QVERIFY(playSchedule(plan, times));
  }

  // Each row is found by its name and by its value; an unknown name is refused, naming them.
  void unknownScheduleIsNamed() {
    for (const PipeScheduleRow& row : pipeSchedules()) {
      QCOMPARE(pipeScheduleNamed(row.name).schedule, row.schedule);
      QCOMPARE(QString(pipeSchedule(row.schedule).name), QString(row.name));
    }
    QCOMPARE(pipeScheduleNamed("gpipe").schedule, PipeSchedule::GPipe);
    try {
      pipeScheduleNamed("zigzag");
      QFAIL("no error");
    } catch (const ConfigError& e) {
      // The allowed values are the table's rows, in its order.
      QString allowed;
      for (const PipeScheduleRow& row : pipeSchedules())
        allowed += (allowed.isEmpty() ? "" : ", ") + QString(row.name);
      QVERIFY(allowed.startsWith("1f1b, gpipe"));
      QCOMPARE(QString(e.what()),
               "schedule: 'zigzag' is not a pipeline schedule (allowed: " + allowed + ")");
    }
  }
};

QTEST_GUILESS_MAIN(TestPipelineSchedule)
#include "tst_pipeline_schedule.moc"
