// Interleaved 1F1B (parallel/pipeline/schedule_interleaved.cpp, --schedule interleaved
// --virtual-stages V): the plan's exact counts (micro-batches in flight, sends, receives), its
// bubble played out beside 1F1B's and Narayanan et al.'s formula, the real run equal to the
// serial one (MLP and GPT, with dp, tp and ZeRO on top), and the shapes it refuses.
// Run: ctest -R tst_pipeline_interleaved
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <map>
#include <set>

#include "json_lines.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "pipeline_traffic.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_play.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

// Megatron-LM's warm-up: 2(P - s - 1) + (V - 1)P forwards of chunks, all of them when M = P.
int warmup(int s, int P, int M, int V) {
  return M == P ? M * V : std::min(M * V, 2 * (P - s - 1) + (V - 1) * P);
}

// `base` cut into `spec` (layout_spec.h) and interleaved over V chunks per stage.
RunConfig interleaved(const RunConfig& base, const QString& spec, int V) {
  RunConfig c = test::withLayout(base, spec);
  c.schedule = "interleaved";
  c.virtualStages = V;
  return c;
}

void agreesWithSerial(const RunConfig& serial, const RunConfig& parallel) {
  QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
  const int steps = 20;
  const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
  VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, "interleaved vs serial");
  VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, "final parameters, interleaved vs serial");
  QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
}

}  // namespace

class TstPipelineInterleaved : public QObject {
  Q_OBJECT

 private slots:
  // [SECTION] The plan. Each stage runs every micro-batch's forward and backward once on each
  // chunk, the forward first; receives what comes from the virtual stage before (the last
  // stage's chunk c - 1 for stage 0's chunk c) and sends on; holds the warm-up plus one
  // chunks' activations at its peak; and blocking sends never wait in a cycle.
  void planCounts() {
    for (int P : {2, 4})
      for (int M : {4, 8, 12})
        for (int V : {1, 2, 3}) {
          const QString at = QString("P=%1 M=%2 V=%3").arg(P).arg(M).arg(V);
          const auto plan = pipelinePlan(PipeSchedule::Interleaved, P, M, V);
          QVERIFY2(playSchedule(plan, PipeTimes{.forward = std::vector<double>(size_t(P), 1.0),
                                                .backward = std::vector<double>(size_t(P), 2.0)}),
                   qPrintable(at + " deadlocks"));
          for (int s = 0; s < P; ++s) {
            std::map<PipeAction, int> count;
            std::map<std::pair<int, int>, int> forwardAt, backwardAt;
            for (size_t i = 0; i < plan[size_t(s)].size(); ++i) {
              const PipeStep& p = plan[size_t(s)][i];
              QVERIFY2(p.micro >= 0 && p.micro < M && p.chunk >= 0 && p.chunk < V, qPrintable(at));
              ++count[p.action];
              if (p.action == PipeAction::Forward) forwardAt[{p.micro, p.chunk}] = int(i);
              if (p.action == PipeAction::Backward) backwardAt[{p.micro, p.chunk}] = int(i);
            }
            QCOMPARE(int(forwardAt.size()), M * V);
            QCOMPARE(count[PipeAction::Forward], M * V);
            QCOMPARE(count[PipeAction::Backward], M * V);
            for (const auto& [key, i] : forwardAt) QVERIFY(i < backwardAt.at(key));
            const int first = s == 0 ? M : 0, last = s == P - 1 ? M : 0;
            QCOMPARE(count[PipeAction::RecvAct], M * V - first);
            QCOMPARE(count[PipeAction::SendGrad], M * V - first);
            QCOMPARE(count[PipeAction::SendAct], M * V - last);
            QCOMPARE(count[PipeAction::RecvGrad], M * V - last);
            // One chunk is 1F1B itself; more follow Megatron-LM's warm-up.
            const int live = V == 1 ? std::min(P - s, M) : std::min(warmup(s, P, M, V) + 1, M * V);
            QCOMPARE(peakInFlight(plan[size_t(s)]), live);
          }
        }
  }

  // Equal stages, a chunk taking 1/V of a stage's time, blocking sends: on 4 stages and 8
  // micro-batches the bubble is below 1F1B's (P - 1)/(M + P - 1) and within a quarter of
  // ((P - 1)/V)/(M + (P - 1)/V).
  void bubbleShrinks() {
    const int P = 4, M = 8;
    const auto plain = modelledBubble("1f1b", P, M, 1.0, 2.0);
    QVERIFY(plain);
    for (int V : {2, 4}) {
      const auto played =
          playSchedule(pipelinePlan(PipeSchedule::Interleaved, P, M, V),
                       PipeTimes{.forward = std::vector<double>(size_t(P), 1.0 / V),
                                 .backward = std::vector<double>(size_t(P), 2.0 / V)});
      QVERIFY(played);
      const double formula = bubbleFraction(P, M, V);
      for (int s = 0; s < P; ++s) {
        const double b = played->bubble()[size_t(s)];
        qInfo("V=%d stage %d: bubble %.4f, formula %.4f, 1F1B %.4f", V, s, b, formula,
              (*plain)[size_t(s)]);
        QVERIFY(b < (*plain)[size_t(s)]);
        QVERIFY2(std::abs(b - formula) <= 0.25 * formula, qPrintable(QString::number(b)));
      }
    }
  }

  // [SECTION] The real run equals the serial one: loss at each step, parameters after it.
  void mlpEqualsSerial_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<int>("V");
    for (const char* s :
         {"pp2 M4", "pp2 M8", "pp4 M4", "pp4 M8", "dp2 tp2 pp2 M4", "dp2 pp2 M4 zero1 adam",
          "dp2 pp2 M4 zero2", "dp2 pp2 M4 zero3", "tp2 pp2 sp M4"})
      QTest::newRow(s) << QString(s) << 2;
    QTest::newRow("pp2 M4 V3") << QString("pp2 M4") << 3;
  }
  void mlpEqualsSerial() {
    QFETCH(QString, spec);
    QFETCH(int, V);
    const RunConfig base =
        test::withLayout(test::smallRun(32, 8, 48), spec.contains("adam") ? "adam" : "");
    agreesWithSerial(base, interleaved(base, spec, V));
  }

  void gptEqualsSerial_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s : {"pp2 M4 L4", "pp4 M8 L8", "dp2 tp2 pp2 M4 L4"})
      QTest::newRow(s) << QString(s);
  }
  void gptEqualsSerial() {
    QFETCH(QString, spec);
    RunConfig base = test::smallGptRun(16);
    base.layers = test::withLayout(base, spec).layers;
    // Eight blocks with Adam for 20 steps: Adam divides each gradient by its own root mean
    // square, so where a gradient is near zero the rounding of another summation order becomes
    // a whole step. Plain 1F1B on the same layout differs from serial as much (1.03e-5 of the
    // largest parameter with the AVX-512 kernels, 5.2e-6 with the baseline ones): that row
    // trains with momentum, the others with Adam.
    if (base.layers > 4) base.optimizer = "momentum";
    agreesWithSerial(base, interleaved(base, spec, 2));
  }

  // Live reconfiguration through the serial layout carries every chunk's parameters and
  // optimizer moments: serial -> interleaved -> serial continues the uninterrupted run.
  void reconfigureCarriesEveryChunk() {
    const RunConfig serial = test::withLayout(test::smallRun(32, 8, 48), "adam");
    const int per = 5;
    const std::vector<double> ref = test::lossTrajectory(serial, 3 * per);
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(serial);
    for (const RunConfig& next : {interleaved(serial, "dp2 pp2 M4 zero1", 2), serial}) {
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
      const TrainingState state = trainer->saveState();
      trainer = std::make_unique<Trainer>(next);
      trainer->loadState(state);
    }
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "against the uninterrupted run");
  }

  // The real run issues the plan's transfers, each one micro-batch's residual stream, and
  // keeps each chunk's peak of micro-batches in flight: its activation memory is that many
  // micro-batches' buffers of each chunk.
  void realRunFollowsThePlan() {
    const int P = 2, M = 4, V = 2;
    const RunConfig c = interleaved(test::smallRun(32, 4, 32), "pp2 M4", V);
    Trainer t(c);
    t.step();
    t.step();
    const auto plan = pipelinePlan(PipeSchedule::Interleaved, P, M, V);
    const std::vector<RankHoldings> held = t.holdings();
    const int64_t message = int64_t(c.globalBatch() / M) * c.hidden * 4;
    for (int s = 0; s < P; ++s) {
      int64_t sends = 0, recvs = 0;
      const int64_t sent = test::pipelineBytes(t.lastTraffic(s), CommOp::Send, &sends);
      test::pipelineBytes(t.lastTraffic(s), CommOp::Recv, &recvs);
      std::map<PipeAction, int> count;
      std::vector<int> live(static_cast<size_t>(V)), peak(static_cast<size_t>(V));
      // A micro-batch's buffers are taken where its activations arrive (or, on virtual stage
      // 0, at its forward) and given back by its backward.
      std::set<std::pair<int, int>> inFlight;
      for (const PipeStep& p : plan[size_t(s)]) {
        ++count[p.action];
        const bool take =
            p.action == PipeAction::RecvAct ||
            (p.action == PipeAction::Forward && !inFlight.contains({p.micro, p.chunk}));
        if (take) {
          inFlight.insert({p.micro, p.chunk});
          peak[size_t(p.chunk)] = std::max(peak[size_t(p.chunk)], ++live[size_t(p.chunk)]);
        }
        if (p.action == PipeAction::Backward) {
          inFlight.erase({p.micro, p.chunk});
          --live[size_t(p.chunk)];
        }
      }
      QCOMPARE(sends, int64_t(count[PipeAction::SendAct] + count[PipeAction::SendGrad]));
      QCOMPARE(recvs, int64_t(count[PipeAction::RecvAct] + count[PipeAction::RecvGrad]));
      QCOMPARE(sent, sends * message);
      int64_t expected = 0;
      for (int k = 0; k < V; ++k) {
        int64_t micro = 0;
        const std::string name = "chunk " + std::to_string(k) + " micro-batch 0 activations";
        for (const HeldSlice& h : held[size_t(s)].items)
          if (h.kind == HoldingKind::Activations && h.tensor == name) micro = h.bytes;
        QVERIFY2(micro > 0, name.c_str());
        expected += peak[size_t(k)] * micro;
      }
      QCOMPARE(t.memory(s).snapshot().peak[int(MemCategory::Activations)], expected);
    }
  }

  // [SECTION] Refusals: one line naming the setting, exit 2.
  void refusals_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("line");
    const QStringList pp2{"--pp", "2", "--layers", "4", "--batch", "16"};
    QTest::newRow("no pipeline") << QStringList{"--tp", "2", "--virtual-stages", "2"}
                                 << "virtual-stages: belongs to a pipeline (--pp 2 or more)";
    QTest::newRow("not interleaving")
        << pp2 + QStringList{"--microbatches", "4", "--virtual-stages", "2"}
        << "virtual-stages: belongs to an interleaved schedule (--schedule interleaved)";
    QTest::newRow("micro-batches not a multiple of pp")
        << pp2 + QStringList{"--microbatches",   "3", "--schedule", "interleaved",
                             "--virtual-stages", "2"}
        << "microbatches: the interleaved schedule needs a multiple of pp = 2 micro-batches "
           "(Narayanan et al. 2021 §2.2.2), not 3";
    QTest::newRow("a chunk without a block")
        << pp2 + QStringList{"--microbatches",   "4", "--schedule", "interleaved",
                             "--virtual-stages", "3"}
        << "virtual-stages: 2 stages x 3 chunks need 6 blocks, the model has 4 (allowed: pp x "
           "virtual-stages <= layers)";
  }
  void refusals() {
    QFETCH(QStringList, args);
    QFETCH(QString, line);
    const auto r = paralab::test::runProgram(PARALAB_RUN, args + QStringList{"--steps", "1"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "paralab-run: " + line + "\n");  // one line
  }

  // The projection takes the same schedule: interleaving shrinks the bubble it projects.
  void projectionInterleaves() {
    const QStringList gpt{"--model", "gpt",       "--layers",     "32",    "--hidden",
                          "4096",    "--heads",   "32",           "--seq", "2048",
                          "--batch", "512",       "--pp",         "4",     "--microbatches",
                          "8",       "--project", "a100-80gb:64", "--json"};
    const auto plain = paralab::test::runProgram(PARALAB_RUN, gpt);
    const auto inter = paralab::test::runProgram(
        PARALAB_RUN, gpt + QStringList{"--schedule", "interleaved", "--virtual-stages", "2"});
    QCOMPARE(plain.code, 0);
    QCOMPARE(inter.code, 0);
    const auto json = [](const QString& out) {
      return QJsonDocument::fromJson(out.trimmed().toUtf8()).object();
    };
    const QJsonObject a = json(plain.out), b = json(inter.out);
    QCOMPARE(b.value("virtual_stages").toInt(), 2);
    QCOMPARE(b.value("schedule").toString(), QString("interleaved"));
    QVERIFY(b.value("split_ms").toObject().value("pp_bubble").toDouble() <
            0.6 * a.value("split_ms").toObject().value("pp_bubble").toDouble());
  }
};

QTEST_GUILESS_MAIN(TstPipelineInterleaved)
#include "tst_pipeline_interleaved.moc"
