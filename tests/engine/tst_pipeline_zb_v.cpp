// ZB-V (parallel/pipeline/schedule_zb_v.cpp, --schedule zb-v): two chunks per stage in a V, the
// backward split into B and W. The plan's exact counts (micro-batches in flight, sends,
// receives, the last stage's hand-over that is none), its bubble played out beside the formula
// and 1F1B's, the real run equal to the serial one (MLP and GPT; dp, tp, sp, cp, ZeRO,
// recomputation) and following its plan, the shapes it refuses, its row among the window's
// choices and its thread run, and the projection. Run: ctest -R tst_pipeline_zb_v
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <array>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "json_lines.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_play.h"
#include "pipeline_traffic.h"
#include "projection/pipeline_schedule.h"
#include "schema.h"
#include "session.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// `base` cut into `spec` (layout_spec.h; "acc2": --accumulate 2) under zb-v.
RunConfig zbV(const RunConfig& base, QString spec) {
  const bool accumulate = spec.contains("acc2");
  RunConfig c = test::withLayout(base, spec.remove("acc2").simplified());
  c.schedule = "zb-v";
  if (accumulate) c.accumulate = 2;
  return c;
}

// A model's serial run for `spec`: the MLP over eight blocks, or ("gpt" in it) the small GPT
// with the spec's layers, recomputation and context parallelism's ranks left to the layout.
RunConfig serialOf(QString spec) {
  RunConfig c;
  if (!spec.contains("gpt")) {
    c = test::withLayout(test::smallRun(32, 8, 48), spec.contains("adam") ? "adam" : "");
  } else {
    c = test::smallGptRun(16);
    const RunConfig shaped = test::withLayout(c, spec.remove("gpt").remove("adam").simplified());
    c.layers = shaped.layers;
    c.recompute = shaped.recompute;
    // As tst_pipeline_interleaved: Adam over eight blocks turns near-zero gradients' rounding
    // into whole steps; that row trains with momentum.
    if (c.layers > 4) c.optimizer = "momentum";
  }
  if (spec.contains("acc2")) c.accumulate = 2;
  return c;
}

QString layoutOf(QString spec) { return spec.remove("gpt").remove("adam").simplified(); }

// Equal forward, B and W times per chunk, blocking sends.
PipeTimes equalTimes(int P, double t) {
  return PipeTimes{.forward = std::vector<double>(size_t(P), t),
                   .backward = std::vector<double>(size_t(P), 2 * t),
                   .weight = std::vector<double>(size_t(P), t)};
}

std::vector<std::vector<PipeStep>> zbVPlan(int P, int M) {
  return pipelinePlan(PipeSchedule::ZbV, P, M, pipelineChunks("zb-v", P, 1));
}

// The most micro-batches of chunk `chunk` (-1: of both) whose buffers the stage holds at once:
// taken where its activations arrive (or at its forward: on virtual stage 0, and on the last
// stage's chunk 1, handed over), given back by its W.
int peakOf(const std::vector<PipeStep>& steps, int chunk) {
  std::set<std::pair<int, int>> live;
  int peak = 0;
  for (const PipeStep& p : steps) {
    if (chunk >= 0 && p.chunk != chunk) continue;
    if (p.action == PipeAction::RecvAct || p.action == PipeAction::Forward)
      live.insert({p.micro, p.chunk});
    if (p.action == PipeAction::BackwardWeight) live.erase({p.micro, p.chunk});
    peak = std::max(peak, int(live.size()));
  }
  return peak;
}

}  // namespace

class TstPipelineZbV : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The plan. Stage s holds virtual stages s (chunk 0) and 2P - 1 - s (chunk 1).
  // Each chunk runs every micro-batch's forward, B and W once, in that order; activations come
  // into chunk 0 from stage s - 1 and chunk 1 from stage s + 1, except where the V turns (the
  // last stage's chunk 0 hands over to its own chunk 1: no transfer) and stage 0's chunk 0 (the
  // input); stage 0's chunk 1 is the model's end. So every stage but the first and last sends
  // and receives 2M of each kind, twice 1F1B's. Blocking sends never wait in a cycle, and each
  // stage holds 2P chunks' micro-batches at its peak (P micro-batches of a whole stage: 1F1B's
  // stage 0) once M >= 2P - 1, the source's warm-up.
  void plan() {
    QCOMPARE(vPlacement(0, 1, 4), 7);
    QCOMPARE(vPlacement(3, 0, 4), 3);
    QCOMPARE(vPlacement(3, 1, 4), 4);
    QCOMPARE(pipelineChunks("zb-v", 4, 1), 2);
    QCOMPARE(pipelineChunks("zb-v", 4, 3), 2);  // its own count
    for (int P : {2, 3, 4, 8})
      for (int M : {1, 2, 3, 4, 7, 8, 12, 16}) {
        const QString at = QString("P=%1 M=%2").arg(P).arg(M);
        const auto plan = zbVPlan(P, M);
        QVERIFY2(playSchedule(plan, equalTimes(P, 1.0), vPlacement), qPrintable(at + " deadlocks"));
        for (int s = 0; s < P; ++s) {
          std::map<std::pair<PipeAction, int>, int> count;         // (action, chunk)
          std::map<std::pair<int, int>, std::array<int, 3>> when;  // (micro, chunk): F, B, W
          for (size_t i = 0; i < plan[size_t(s)].size(); ++i) {
            const PipeStep& p = plan[size_t(s)][i];
            QVERIFY2(p.micro >= 0 && p.micro < M && (p.chunk == 0 || p.chunk == 1), qPrintable(at));
            ++count[{p.action, p.chunk}];
            const int k = p.action == PipeAction::Forward          ? 0
                          : p.action == PipeAction::BackwardInput  ? 1
                          : p.action == PipeAction::BackwardWeight ? 2
                                                                   : -1;
            if (k >= 0) when[{p.micro, p.chunk}][size_t(k)] = int(i) + 1;
          }
          QCOMPARE(int(when.size()), 2 * M);
          for (const auto& [key, w] : when)
            QVERIFY2(0 < w[0] && w[0] < w[1] && w[1] < w[2], qPrintable(at));
          const auto n = [&](PipeAction a, int c) { return count[{a, c}]; };
          using A = PipeAction;
          for (int c : {0, 1}) {
            QCOMPARE(n(A::Forward, c), M);
            QCOMPARE(n(A::BackwardInput, c), M);
            QCOMPARE(n(A::BackwardWeight, c), M);
            QCOMPARE(n(A::Backward, c), 0);
          }
          const int first = s == 0 ? 0 : M, turn = s == P - 1 ? 0 : M;
          QCOMPARE(n(A::RecvAct, 0), first);
          QCOMPARE(n(A::SendGrad, 0), first);
          QCOMPARE(n(A::SendAct, 0), turn);
          QCOMPARE(n(A::RecvGrad, 0), turn);
          QCOMPARE(n(A::RecvAct, 1), turn);
          QCOMPARE(n(A::SendGrad, 1), turn);
          QCOMPARE(n(A::SendAct, 1), first);  // stage 0's chunk 1 is the last virtual stage
          QCOMPARE(n(A::RecvGrad, 1), first);
          if (M >= 2 * P - 1) QCOMPARE(peakInFlight(plan[size_t(s)]), 2 * P);
          QVERIFY(peakInFlight(plan[size_t(s)]) <= 2 * P);
        }
      }
    // One stage: nothing to place in a V; ZB-H1's split backward on its one chunk.
    QCOMPARE(pipelineChunks("zb-v", 1, 1), 1);
    QCOMPARE(pipelinePlan(PipeSchedule::ZbV, 1, 4), pipelinePlan(PipeSchedule::ZbH1, 1, 4));
  }

  // Equal T_F = T_B = T_W (a chunk half a stage's), blocking sends: every stage's bubble
  // within a quarter of (P - 1)/(6M + P - 1) and below 1F1B's and ZB-H1's in the same times
  // (the bar: 4 stages, 8 micro-batches).
  void bubble() {
    QCOMPARE(scheduleBubble("zb-v", 4, 8, 2), 3.0 / 51.0);
    for (const auto& [P, M] : {std::pair{4, 8}, {2, 4}, {4, 16}, {8, 16}}) {
      const auto played = playSchedule(zbVPlan(P, M), equalTimes(P, 0.5), vPlacement);
      const auto plain = modelledBubble("1f1b", P, M, 1.0, 2.0);
      const auto h1 = playSchedule(pipelinePlan(PipeSchedule::ZbH1, P, M), equalTimes(P, 1.0));
      QVERIFY(played && plain && h1);
      const double formula = scheduleBubble("zb-v", P, M, 2);
      for (int s = 0; s < P; ++s) {
        const double b = played->bubble()[size_t(s)];
        qInfo(
            "P=%d M=%d zb-v stage %d: bubble %.4f, formula %.4f; zb-h1 %.4f; 1F1B %.4f, "
            "formula %.4f",
            P, M, s, b, formula, h1->bubble()[size_t(s)], (*plain)[size_t(s)],
            bubbleFraction(P, M));
        QVERIFY2(std::abs(b - formula) <= 0.25 * formula, qPrintable(QString::number(b)));
        QVERIFY(b < (*plain)[size_t(s)]);
        QVERIFY(b < h1->bubble()[size_t(s)]);
      }
      // The same work as a stage of 1F1B: M (T_F + T_B + T_W), a stage's each 1.
      QVERIFY(std::abs(played->busy[0] - 3.0 * M) < 1e-9);
    }
  }

  // [SECTION] The real run equals the serial one: loss at each step, parameters after it.
  void equalsSerial_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s :
         {"pp2 M4", "pp4 M8", "pp2 M2", "dp2 tp2 pp2 M4", "dp2 pp2 M4 zero1 adam",
          "dp2 pp2 M4 zero2", "dp2 pp2 M4 zero3", "tp2 pp2 sp M4", "dp2 pp2 M4 zero2 acc2",
          "gpt pp2 M4 L4", "gpt pp4 M8 L8", "gpt dp2 tp2 pp2 M4 L4", "gpt pp2 M4 L4 full",
          "gpt pp2 M4 L4 selective", "gpt cp2 pp2 M4 L4"})
      QTest::newRow(s) << QString(s);
  }
  void equalsSerial() {
    QFETCH(QString, spec);
    const RunConfig serial = serialOf(spec);
    const RunConfig parallel = zbV(serial, layoutOf(spec));
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    const int steps = 20;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "zb-v vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, zb-v vs serial");
    QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
  }

  // The real run issues the plan's transfers, each one micro-batch's residual stream (the
  // hand-over at the V's turn is none), keeps each chunk's peak of micro-batches in flight (its
  // activation memory: that many of the chunk's buffers), computes the loss on stage 0, and
  // reports the schedule's own bubble formula beside the measured bubble.
  void realRunFollowsThePlan() {
    const int P = 4, M = 8;
    const RunConfig c = zbV(test::smallRun(32, 8, 64), "pp4 M8");
    Trainer t(c);
    t.step();
    const StepMetrics metrics = t.step();
    QVERIFY(metrics.bubbleReference);
    QCOMPARE(*metrics.bubbleReference, scheduleBubble("zb-v", P, M, 2));
    const auto plan = zbVPlan(P, M);
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
      QCOMPARE(sends, int64_t(s == 0 || s == P - 1 ? 2 * M : 4 * M));
      QCOMPARE(sent, sends * message);
      int64_t expected = 0;
      for (int k : {0, 1}) {
        int64_t micro = 0;
        const std::string name = "chunk " + std::to_string(k) + " micro-batch 0 activations";
        for (const HeldSlice& h : held[size_t(s)].items)
          if (h.kind == HoldingKind::Activations && h.tensor == name) micro = h.bytes;
        QVERIFY2(micro > 0, name.c_str());
        expected += peakOf(plan[size_t(s)], k) * micro;
      }
      QCOMPARE(t.memory(s).snapshot().peak[int(MemCategory::Activations)], expected);
    }
    // The loss and the labels are on stage 0 (its chunk 1 ends the model).
    for (int s = 0; s < P; ++s) {
      bool labels = false;
      for (const HeldSlice& h : held[size_t(s)].items)
        labels |= h.tensor == "global batch (labels)";
      QCOMPARE(labels, s == 0);
    }
    QVERIFY(metrics.loss > 0);
  }

  // [SECTION] Refusals: one line naming the setting and what is allowed, exit 2. ZB-V holds
  // two chunks per stage of its own, each at least one block.
  void refusals_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("line");
    const QStringList pp2{"--pp",           "2", "--batch",    "16",
                          "--microbatches", "4", "--schedule", "zb-v"};
    QTest::newRow("virtual stages given")
        << pp2 + QStringList{"--layers", "4", "--virtual-stages", "2"}
        << "virtual-stages: belongs to an interleaved schedule (--schedule interleaved)";
    QTest::newRow("a chunk without a block")
        << pp2 + QStringList{"--layers", "3"}
        << "layers: zb-v puts 2 chunks of blocks on each of 2 stages, the model has 3 blocks "
           "(allowed: layers >= 2 x pp)";
  }
  void refusals() {
    QFETCH(QStringList, args);
    QFETCH(QString, line);
    const auto r = paralab::test::runProgram(PARALAB_RUN, args + QStringList{"--steps", "1"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "paralab-run: " + line + "\n");  // one line
  }

  // [SECTION] The window: the schedule is one of the settings' choices (from its row), with
  // --virtual-stages greyed; its thread run (Session, as the window starts it) runs to the end
  // with every stage's forward and backward spans for the timeline, and the bubble beside the
  // schedule's formula.
  void window() {
    RunConfig c = zbV(test::smallRun(32, 8, 64), "pp4 M8");
    c.steps = 3;
    const Setting* schedule = findSetting("schedule");
    QVERIFY(schedule && schedule->choices);
    bool listed = false;
    for (const SettingChoice& choice : schedule->choices(c))
      listed |= choice.value == "zb-v" && choice.label == "ZB-V";
    QVERIFY(listed);
    QVERIFY(settingsInEffect(c, false).why("virtual-stages"));
    Session session;
    QCOMPARE(session.start(c), std::string());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (session.snapshot(0).state != RunState::Finished &&
           session.snapshot(0).state != RunState::Failed &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const Snapshot snap = session.snapshot(0, 1);
    QCOMPARE(snap.state, RunState::Finished);
    QCOMPARE(int(snap.steps.size()), 3);
    QVERIFY(snap.steps.back().bubbleReference);
    QCOMPARE(*snap.steps.back().bubbleReference, scheduleBubble("zb-v", 4, 8, 2));
    QCOMPARE(int(snap.spans.size()), 4);
    for (const std::vector<Span>& rank : snap.spans) {
      int forward = 0, backward = 0;
      for (const Span& sp : rank) {
        forward += sp.kind == SpanKind::Forward;
        backward += sp.kind == SpanKind::Backward;
      }
      QVERIFY(forward > 0 && backward > 0);
    }
  }

  // [SECTION] The projection takes the same schedule: ZB-V's fill is a sixth of 1F1B's (P - 1
  // chunk forwards of half a stage where 1F1B waits P - 1 forwards and backwards), half of
  // ZB-H1's, at 1F1B's activation memory.
  void projection() {
    const QStringList gpt{"--model", "gpt",       "--layers",     "32",    "--hidden",
                          "4096",    "--heads",   "32",           "--seq", "2048",
                          "--batch", "512",       "--pp",         "4",     "--microbatches",
                          "8",       "--project", "a100-80gb:64", "--json"};
    const auto json = [&](const char* schedule) {
      const auto r =
          paralab::test::runProgram(PARALAB_RUN, gpt + QStringList{"--schedule", schedule});
      if (r.code != 0) qWarning("%s", qPrintable(r.err));
      return QJsonDocument::fromJson(r.out.trimmed().toUtf8()).object();
    };
    const QJsonObject plain = json("1f1b"), h1 = json("zb-h1"), v = json("zb-v");
    QCOMPARE(v.value("schedule").toString(), QString("zb-v"));
    QCOMPARE(v.value("virtual_stages").toInt(), 2);
    const auto bubble = [](const QJsonObject& o) {
      return o.value("split_ms").toObject().value("pp_bubble").toDouble();
    };
    const auto activations = [](const QJsonObject& o) {
      return o.value("mem_per_gpu").toObject().value("activations").toDouble();
    };
    QVERIFY(bubble(plain) > 0);
    QVERIFY(bubble(v) < 0.6 * bubble(h1));
    QVERIFY(std::abs(bubble(v) - bubble(plain) / 6) <= 0.25 * bubble(plain) / 6);
    QCOMPARE(activations(v), activations(plain));
    // On stages sharing a machine's cores the V is played with its chunks, each half a stage:
    // with a core each, 6M + P - 1 chunk slots of half a stage's forward.
    const std::vector<double> forward(4, 1.0), backward(4, 2.0);
    QCOMPARE(projection::sharedCoresPipelineTime(forward, backward, 8, PipeSchedule::ZbV, 1e9),
             (6 * 8 + 3) * 0.5);
  }
};

QTEST_GUILESS_MAIN(TstPipelineZbV)
#include "tst_pipeline_zb_v.moc"
