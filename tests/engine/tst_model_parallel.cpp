// Tensor, sequence and pipeline parallelism and their composition with data parallelism:
// the serial loss trajectory on the same global batch and seed; the collectives each issues
// against the formulas of tensor_parallel.cpp and schedule.cpp; the schedules' structure and
// bubble against (P-1)/(M+P-1); activation memory (GPipe M micro-batches, 1F1B at most P; SP
// below TP); bad layouts named with exit code 2; the same runs under mpirun. The mpirun rows
// run from their own CTest (tst_model_parallel_mpi, PARALAB_MP_MPI=1). Run: ctest -R model_parallel
#include <QProcess>
#include <QtTest>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "json_lines.h"
#include "layout_spec.h"
#include "loss_trajectory.h"
#include "parallel/pipeline/pipeline.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

RunConfig baseConfig() { return test::smallRun(32, 4, 48); }

// "dp2 tp2 pp2 sp gpipe M3 zero1 adam" -> a configuration (layout_spec.h).
RunConfig parse(const QString& spec) { return test::withLayout(baseConfig(), spec); }

int64_t opBytes(const CommTraffic& t, CommOp op, const std::string& group, int64_t* calls = nullptr,
                int64_t* sent = nullptr) {
  int64_t bytes = 0;
  for (const CommOpTotals& o : t.ops)
    if (o.op == op && o.group == group) {
      bytes += o.bytes;
      if (calls) *calls += o.calls;
      if (sent) *sent += o.sent;
    }
  return bytes;
}

// Forward or backward spans of one micro-batch on one rank: first start, last end.
struct MicroSpan {
  int64_t start = INT64_MAX, end = 0;
};
using MicroSpans = std::map<std::pair<bool, int>, MicroSpan>;  // (forward?, micro)
MicroSpans microSpans(const std::vector<Span>& spans) {
  MicroSpans out;
  for (const Span& s : spans) {
    int m = -1;
    const bool fwd = s.kind == SpanKind::Forward;
    if ((fwd || s.kind == SpanKind::Backward) &&
        std::sscanf(s.op, fwd ? "forward mb %d" : "backward mb %d", &m) == 1) {
      MicroSpan& x = out[{fwd, m}];
      x.start = std::min(x.start, s.startNs);
      x.end = std::max(x.end, s.endNs);
    }
  }
  return out;
}

double loadAverage() {
  std::ifstream f("/proc/loadavg");
  double l = 0;
  f >> l;
  return l;
}

}  // namespace

class TstModelParallel : public QObject {
  Q_OBJECT
 private slots:
  // [SECTION] The serial trajectory, 30 steps, relative difference <= 1e-5 (the ranks sum the
  // same products in another order: fc2's partial sums, micro-batch accumulation), and the final
  // parameters within 1e-5 of the largest. Data parallelism on the dp axis with each of its
  // gradient syncs (grad_sync.h): ZeRO-1/2/3, the per-tensor and the bucketed all-reduce.
  void modelParallelMatchesSerial_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s : {"tp2",
                          "tp4",
                          "tp2 sp",
                          "tp4 sp",
                          "tp4 sp M5",
                          "tp2 M3",
                          "pp2 gpipe M1",
                          "pp2 gpipe M2",
                          "pp2 gpipe M5",
                          "pp2 1f1b M1",
                          "pp2 1f1b M4",
                          "pp2 1f1b M5",
                          "pp3 1f1b M4",
                          "pp4 gpipe M8",
                          "pp4 1f1b M3",
                          "pp4 1f1b M8",
                          "dp2 tp2 pp2 1f1b M2",
                          "dp2 tp2 pp2 sp gpipe M3",
                          "dp2 tp2 pp2 zero1 adam M2",
                          "dp2 pp2 zero1 M3",
                          "dp2 tp2 sp zero1",
                          "dp2 tp2 pp2 sp 1f1b M3 adam",
                          // fewer samples than ranks: a replica's tp and pp ranks share them
                          "tp8 sp B4",
                          "tp2 pp4 sp 1f1b M2 B4"})
      QTest::newRow(s) << QString(s);
    for (const char* zero : {"zero1", "zero2", "zero3"})
      for (const char* layout : {"tp2", "pp2 M2", "tp2 pp2 1f1b M2", "dp2 tp2", "dp2 pp2 gpipe M3",
                                 "dp2 tp2 pp2 sp 1f1b M2", "dp2 tp2 sp adam"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(layout, zero)))
            << QString("%1 %2").arg(layout, zero);
    for (const char* version : {"per-tensor", "bucket0.02"})
      for (const char* layout : {"dp2 tp2", "dp2 pp2 gpipe M3", "dp2 tp2 pp2 sp 1f1b M2"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(layout, version)))
            << QString("%1 %2").arg(layout, version);
  }
  void modelParallelMatchesSerial() {
    QFETCH(QString, spec);
    const RunConfig parallel = parse(spec);
    QVERIFY2(!parallel.validate(), parallel.validate().value_or("").c_str());
    RunConfig serial = baseConfig();
    serial.optimizer = parallel.optimizer;
    serial.lr = parallel.lr;
    serial.batch = parallel.batch;
    const int steps = 30;
    const test::RunRecord a = test::recordRun(serial, steps), b = test::recordRun(parallel, steps);
    VERIFY_TRAJECTORIES_AGREE(b.losses, a.losses, 1e-5, spec + " vs serial");
    VERIFY_PARAMETERS_AGREE(b.params, a.params, 1e-5, spec + " vs serial");
    // A batch of a few samples is too noisy to learn in 30 steps: those rows check agreement.
    if (serial.batch >= 16) QVERIFY2(a.losses.back() < 0.9 * a.losses.front(), "the run should learn");
  }

  // Live reconfiguration into and out of model-parallel layouts continues the uninterrupted
  // serial trajectory (parameters and optimizer moments travel through the serial layout).
  void reconfigureContinuesTheTrajectory_data() {
    QTest::addColumn<QStringList>("layouts");
    QTest::newRow("adam: serial -> dp2 tp2 pp2 zero1 -> tp2 sp -> serial")
        << QStringList{"dp2 tp2 pp2 zero1 M2 adam", "tp2 sp adam", "adam"};
    QTest::newRow("momentum: serial -> pp4 gpipe -> dp2 pp2 1f1b")
        << QStringList{"pp4 gpipe M3", "dp2 pp2 M2"};
  }
  void reconfigureContinuesTheTrajectory() {
    QFETCH(QStringList, layouts);
    const RunConfig serial = parse(layouts.back().contains("adam") ? "adam" : "");
    const int per = 6;
    const std::vector<double> ref = test::lossTrajectory(serial, per * int(layouts.size() + 1));
    std::vector<double> got;
    auto trainer = std::make_unique<Trainer>(serial);
    for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    for (const QString& layout : layouts) {
      const TrainingState state = trainer->saveState();
      trainer = std::make_unique<Trainer>(parse(layout));
      trainer->loadState(state);
      for (int s = 0; s < per; ++s) got.push_back(trainer->step().loss);
    }
    VERIFY_TRAJECTORIES_AGREE(got, ref, 1e-5, "against the uninterrupted run");
  }

  // [SECTION] Tensor parallelism: exactly the all-reduces Megatron's pairing implies, 2 per
  // block per micro-batch of b x H floats; SP: reduce-scatter + all-gather of the same total
  // per block, plus the all-gathers where the row split begins and ends (b x H each per
  // micro-batch) and one all-reduce of each block's LayerNorm gradients (2H floats) per step.
  void tensorParallelTraffic_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s : {"tp2", "tp2 M2", "tp4", "tp4 M2"}) {
      QTest::newRow(s) << QString(s);
      QTest::newRow(qPrintable(QString(s) + " sp")) << QString(s) + " sp";
    }
  }
  void tensorParallelTraffic() {
    QFETCH(QString, spec);
    RunConfig c = parse(spec + " B64 L2 ring");
    Trainer t(c);
    t.step();
    t.step();
    const int64_t L = c.layers, M = c.microbatches, T = c.tp, H = c.hidden, B = c.globalBatch();
    const int64_t rowBytes =
        B * H * 4;  // all micro-batches' rows x H, fp32 (B divisible by T here)
    for (int r = 0; r < t.localRankCount(); ++r) {
      const CommTraffic& tr = t.lastTraffic(r);
      int64_t arCalls = 0, rsCalls = 0, agCalls = 0, arSent = 0, rsSent = 0, agSent = 0;
      const int64_t ar = opBytes(tr, CommOp::AllReduce, "tp", &arCalls, &arSent);
      const int64_t rs = opBytes(tr, CommOp::ReduceScatter, "tp", &rsCalls, &rsSent);
      const int64_t ag = opBytes(tr, CommOp::AllGather, "tp", &agCalls, &agSent);
      int64_t other = 0;
      for (const CommOpTotals& o : tr.ops)
        if (o.group != "tp") other += o.calls;
      QCOMPARE(other, int64_t(0));  // one stage, one replica: only the tp group talks
      if (!c.sp) {
        QCOMPARE(arCalls, 2 * L * M);
        QCOMPARE(ar, 2 * L * rowBytes);
        QCOMPARE(rsCalls + agCalls, int64_t(0));
        QCOMPARE(arSent, 2 * (T - 1) * ar / T);  // ring all-reduce: 2(T-1)/T of the buffer
        QCOMPARE(tr.bytesSent, arSent);
      } else {
        QCOMPARE(rsCalls, 2 * L * M);
        QCOMPARE(rs, 2 * L * rowBytes);
        QCOMPARE(agCalls, 2 * L * M + 2 * M);  // blocks, then the input projection and classifier
        QCOMPARE(ag, (2 * L + 2) * rowBytes);
        QCOMPARE(arCalls, L);  // LayerNorm gradients
        QCOMPARE(ar, L * 2 * H * 4);
        // The blocks' reduce-scatters and all-gathers move what TP's all-reduces move:
        // (T-1)/T each, 2(T-1)/T together.
        const int64_t boundary = (T - 1) * 2 * rowBytes / T;
        QCOMPARE(rsSent + agSent - boundary, 2 * (T - 1) * (2 * L * rowBytes) / T);
      }
    }
  }

  // Pipeline: per micro-batch one b x H message forward and one back per stage boundary
  // (SP: b/T x H from each tp rank to its partner).
  void pipelineTraffic_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s : {"pp2 M4", "pp4 M2 gpipe", "tp2 pp2 M4 sp", "tp2 pp2 M3"})
      QTest::newRow(s) << QString(s);
  }
  void pipelineTraffic() {
    QFETCH(QString, spec);
    RunConfig c = parse(spec + " B48");
    Trainer t(c);
    t.step();
    t.step();
    const int64_t P = c.pp, M = c.microbatches, T = c.tp, B = c.globalBatch(), H = c.hidden;
    const int64_t perMessageRows = c.sp ? B / T : B;  // summed over the micro-batches
    for (int r = 0; r < t.localRankCount(); ++r) {
      const int s = r / T;  // pp is the slowest axis (process_grid.h)
      int64_t sends = 0, recvs = 0;
      const int64_t sent = opBytes(t.lastTraffic(r), CommOp::Send, "pp", &sends);
      const int64_t recv = opBytes(t.lastTraffic(r), CommOp::Recv, "pp", &recvs);
      const int64_t neighbours = (s > 0) + (s < P - 1);
      QCOMPARE(sends, neighbours * M);
      QCOMPARE(recvs, neighbours * M);
      QCOMPARE(sent, neighbours * perMessageRows * H * 4);
      QCOMPARE(recv, sent);
    }
  }

  // [SECTION] Schedules: every (P, M) runs to the end with blocking transfers, and the
  // modelled bubble (forward 1, backward 2) is (P-1)/(M+P-1) on every stage, for both.
  void schedulesModelled() {
    for (const char* sched : {"gpipe", "1f1b"})
      for (int P = 1; P <= 8; ++P)
        for (int M = 1; M <= 16; ++M) {
          const auto b = modelledBubble(sched, P, M, 1.0, 2.0);
          QVERIFY2(b, qPrintable(QString("%1 P=%2 M=%3 deadlocks").arg(sched).arg(P).arg(M)));
          for (double x : *b) QVERIFY(std::abs(x - bubbleFraction(P, M)) < 1e-12);
          for (int s = 0; s < P; ++s) {
            const int live = peakInFlight(pipelineSchedule(sched, s, P, M));
            QCOMPARE(live, std::string(sched) == "gpipe" ? M : std::min(P - s, M));
          }
        }
  }

  // The real run follows its schedule: from the spans, each stage's forwards and backwards
  // come in the schedule's order, and each waits for what it needs from its neighbour.
  void pipelineFollowsSchedule_data() {
    QTest::addColumn<QString>("spec");
    for (const char* s :
         {"pp2 gpipe M4", "pp2 1f1b M4", "pp4 gpipe M6", "pp4 1f1b M6", "tp2 pp2 sp 1f1b M3"})
      QTest::newRow(s) << QString(s);
  }
  void pipelineFollowsSchedule() {
    QFETCH(QString, spec);
    const RunConfig c = parse(spec + " B48");
    Trainer t(c);
    t.step();
    const StepMetrics m = t.step();
    QVERIFY(m.bubble && m.bubbleReference);
    QCOMPARE(*m.bubbleReference, bubbleFraction(c.pp, c.microbatches));
    const int P = c.pp, M = c.microbatches, T = c.tp;
    std::vector<MicroSpans> stage;
    for (int s = 0; s < P; ++s) stage.push_back(microSpans(t.spans(s * T).since(2)));  // tp rank 0
    for (int s = 0; s < P; ++s) {
      // Order: F/B by start time equals the schedule's F/B order.
      std::vector<std::pair<int64_t, PipeStep>> seen;
      for (const auto& [key, span] : stage[size_t(s)])
        seen.push_back(
            {span.start, {key.first ? PipeAction::Forward : PipeAction::Backward, key.second}});
      std::sort(seen.begin(), seen.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<PipeStep> expected;
      for (const PipeStep& p : pipelineSchedule(c.schedule, s, P, M))
        if (p.action == PipeAction::Forward || p.action == PipeAction::Backward)
          expected.push_back(p);
      QCOMPARE(int(seen.size()), int(expected.size()));
      for (size_t i = 0; i < expected.size(); ++i) QVERIFY(seen[i].second == expected[i]);
      // Dependencies: forward m after the previous stage's forward m, backward m after the
      // next stage's backward m (the message in between).
      auto at = [&](int st, bool fwd, int mb) {
        return stage[size_t(st)][std::make_pair(fwd, mb)];
      };
      for (int mb = 0; mb < M; ++mb) {
        if (s > 0) QVERIFY(at(s, true, mb).start >= at(s - 1, true, mb).end);
        if (s < P - 1) QVERIFY(at(s, false, mb).start >= at(s + 1, false, mb).end);
      }
    }
    for (const RankMetrics& r : m.ranks) QVERIFY(r.bubble && *r.bubble >= 0 && *r.bubble <= 1);
  }

  // Wall clock: balanced stages (H = 1024: the input projection is 5% of a stage of two
  // blocks), compute dominating; the median over 6 steps of the mean bubble over ranks within
  // 10% of the reference. Timings need the cores to ourselves: on an oversubscribed machine the
  // threads of the stages are descheduled at random and the wall-clock figure means nothing,
  // so this part is skipped there (the structure above does not depend on time).
  void measuredBubbleNearReference_data() {
    QTest::addColumn<QString>("schedule");
    QTest::newRow("gpipe") << "gpipe";
    QTest::newRow("1f1b") << "1f1b";
  }
  void measuredBubbleNearReference() {
    QFETCH(QString, schedule);
    const double load = loadAverage();
    const unsigned cores = std::thread::hardware_concurrency();
    if (load > cores - 1.0 && qEnvironmentVariableIsEmpty("PARALAB_STRICT_TIMING"))
      QSKIP(qPrintable(QString("load average %1 on %2 cores: other work would be timed too")
                           .arg(load)
                           .arg(cores)));
    const RunConfig c = parse("pp2 M4 H1024 L4 B128 " + schedule);
    Trainer t(c);
    t.step();
    t.step();
    std::vector<double> bubble;
    for (int i = 0; i < 6; ++i) bubble.push_back(*t.step().bubble);
    std::sort(bubble.begin(), bubble.end());
    const double median = (bubble[2] + bubble[3]) / 2, ref = bubbleFraction(2, 4);
    qInfo("%s: measured bubble %.3f (median of 6 steps), reference %.3f", qPrintable(schedule),
          median, ref);
    QVERIFY2(std::abs(median - ref) <= 0.1 * ref,
             qPrintable(QString("measured %1, reference %2").arg(median).arg(ref)));
  }

  // [SECTION] Activation memory, measured by the tracking allocator.
  // GPipe holds all M micro-batches at the turn, 1F1B at most P - s: with k in flight, the
  // stage's peak (and what it keeps between steps) is k micro-batches' buffers.
  void pipelineActivationMemory() {
    std::map<std::string, std::vector<int64_t>> peak;
    for (const char* sched : {"gpipe", "1f1b"}) {
      const RunConfig c = parse(QString("pp2 M8 B64 ") + sched);
      Trainer t(c);
      t.step();
      t.step();
      const std::vector<RankHoldings> held = t.holdings();
      for (int s = 0; s < 2; ++s) {
        int64_t micro = 0;
        for (const HeldSlice& h : held[size_t(s)].items)
          if (h.kind == HoldingKind::Activations) micro = h.bytes;  // every micro-batch has 8 rows
        const int k = peakInFlight(pipelineSchedule(sched, s, 2, 8));
        const MemorySnapshot mem = t.memory(s).snapshot();
        const int64_t got = mem.peak[int(MemCategory::Activations)];
        QCOMPARE(got, k * micro);
        QCOMPARE(mem[MemCategory::Activations], got);
        peak[sched].push_back(got);
      }
    }
    for (int s = 0; s < 2; ++s) QVERIFY(peak["1f1b"][size_t(s)] < peak["gpipe"][size_t(s)]);
    qInfo("activation peak per stage, bytes: GPipe %lld %lld, 1F1B %lld %lld (M = 8, P = 2)",
          (long long)peak["gpipe"][0], (long long)peak["gpipe"][1], (long long)peak["1f1b"][0],
          (long long)peak["1f1b"][1]);
  }

  // SP keeps 1/T of the residual stream and LayerNorm statistics.
  void sequenceParallelActivationMemory() {
    int64_t tp = 0, sp = 0;
    for (const bool seq : {false, true}) {
      Trainer t(parse(QString("tp4 B64 H64 L4") + (seq ? " sp" : "")));
      t.step();
      t.step();
      (seq ? sp : tp) = t.memory(0).snapshot().peak[int(MemCategory::Activations)];
    }
    // Floats, one micro-batch of b rows: the input rows; per block the residual a (TP: b rows;
    // SP: b/T), LayerNorm output (b rows: SP gathers it for fc1), its 2 statistics per row
    // (TP: b; SP: b/T), fc1 and GELU outputs (b x 4H/T each); the stage's output a; the
    // classifier's logits and their gradient (b x C each), and SP's gathered residual (b x H).
    const int64_t b = 64, H = 64, L = 4, T = 4, D = 784, C = 10, F = 4 * H / T, local = b / T;
    const int64_t tpExpected =
        4 * (b * D + L * (b * H + b * H + 2 * b + 2 * b * F) + b * H + 2 * b * C);
    const int64_t spExpected = 4 * (b * D + L * (local * H + b * H + 2 * local + 2 * b * F) +
                                    local * H + b * H + 2 * b * C);
    QCOMPARE(tp, tpExpected);
    QCOMPARE(sp, spExpected);
    qInfo("activation peak, tp 4: TP %lld bytes, TP+SP %lld bytes (%.0f%%)", (long long)tp,
          (long long)sp, 100.0 * double(sp) / double(tp));
  }

  // [SECTION] Bad layouts: one line naming the constraint, exit code 2.
  void badLayoutsExit2_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("names");
    QTest::newRow("ranks not divisible") << QStringList{"--ranks", "3", "--tp", "2"} << "ranks:";
    QTest::newRow("tp does not divide H") << QStringList{"--tp", "3", "--hidden", "32"} << "tp:";
    QTest::newRow("tp out of range") << QStringList{"--tp", "0"} << "tp:";
    QTest::newRow("sp without tp") << QStringList{"--ranks", "2", "--sp"} << "sp:";
    QTest::newRow("more stages than blocks") << QStringList{"--pp", "4", "--layers", "2"} << "pp:";
    QTest::newRow("too many micro-batches")
        << QStringList{"--pp", "2", "--batch", "8", "--microbatches", "9"} << "microbatches:";
    QTest::newRow("microbatches 0")
        << QStringList{"--pp", "2", "--microbatches", "0"} << "microbatches:";
    QTest::newRow("schedule") << QStringList{"--pp", "2", "--schedule", "zigzag"} << "schedule:";
    QTest::newRow("dp x tp x pp vs ranks")
        << QStringList{"--ranks", "8", "--dp", "3", "--tp", "2"} << "ranks:";
    QTest::newRow("zero 4 with tp") << QStringList{"--tp", "2", "--zero", "4"} << "zero:";
  }
  void badLayoutsExit2() {
    QFETCH(QStringList, args);
    QFETCH(QString, names);
    QProcess p;
    p.start(PARALAB_RUN, QStringList{"--dataset", "synthetic", "--steps", "1"} + args);
    QVERIFY(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 2);
    QCOMPARE(err.count('\n'), 1);
    QVERIFY2(err.contains(names), qPrintable(err));
  }

  // [SECTION] The same runs under mpirun: MpiComm's collectives and point-to-point give the
  // thread run's losses, bytes and buffers (activations: the schedule's micro-batches in
  // flight), and the bubble reaches rank 0's JSON.
  void mpiRunMatchesThreads_data() {
    QTest::addColumn<QStringList>("args");
    QTest::newRow("tp2 pp2 1f1b M4")
        << QStringList{"--tp", "2", "--pp", "2", "--microbatches", "4"};
    QTest::newRow("tp2 pp2 sp gpipe M3") << QStringList{
        "--tp", "2", "--pp", "2", "--sp", "--microbatches", "3", "--schedule", "gpipe"};
    QTest::newRow("dp2 tp2 sp") << QStringList{"--dp", "2", "--tp", "2", "--sp"};
    // Overlapped tp: its ring steps ordered (even ranks send first) under MPI.
    QTest::newRow("tp4 sp tp-overlap") << QStringList{"--tp", "4", "--sp", "--tp-overlap"};
    QTest::newRow("tp4") << QStringList{"--tp", "4"};
    QTest::newRow("dp2 pp2 zero1 M2")
        << QStringList{"--dp", "2", "--pp", "2", "--zero", "1", "--microbatches", "2"};
    // ZeRO-3 and the bucketed all-reduce on the dp axis (MPI: buckets inline, grad_sync.cpp).
    QTest::newRow("dp2 tp2 zero3") << QStringList{"--dp", "2", "--tp", "2", "--zero", "3"};
    // Context parallelism's ring (send/recv on the cp group) on the GPT.
    QTest::newRow("gpt cp4") << QStringList{"--model", "gpt", "--heads", "2", "--seq", "16",
                                            "--cp", "4"};
    QTest::newRow("gpt cp2 tp2") << QStringList{"--model", "gpt", "--heads", "2", "--seq", "16",
                                                "--cp", "2", "--tp", "2"};
    QTest::newRow("dp2 pp2 1f1b M2 bucket")
        << QStringList{"--dp",         "2",      "--pp",        "2",   "--microbatches", "2",
                       "--dp-version", "bucket", "--bucket-mb", "0.02"};
  }
  void mpiRunMatchesThreads() {
#if defined(PARALAB_MPIEXEC)
    if (qEnvironmentVariableIsEmpty("PARALAB_MP_MPI"))
      QSKIP("runs as the CTest tst_model_parallel_mpi");
    QFETCH(QStringList, args);
    const QStringList common = {
        "--dataset",    "synthetic", "--hidden",       "32",  "--layers",    "4",
        "--batch",      "48",        "--steps",        "4",   "--allreduce", "ring",
        "--eval-every", "4",         "--eval-samples", "500", "--json"};
    auto lines = [](const QString& program, const QStringList& a) {
      return test::runJsonLines(program, a, 5);  // 4 steps and the summary
    };
    const auto mpi = lines(PARALAB_MPIEXEC, QStringList{"--oversubscribe", "-np", "4", PARALAB_RUN,
                                                        "--backend", "mpi"} +
                                                common + args);
    const auto thr = lines(PARALAB_RUN, common + args);
    QCOMPARE(int(mpi.size()), 5);
    QCOMPARE(int(thr.size()), 5);
    for (int s = 0; s < 4; ++s) {
      const auto &a = mpi[size_t(s)], &b = thr[size_t(s)];
      const double la = a["loss"], lb = b["loss"];
      QVERIFY2(std::abs(la - lb) <= 1e-5 * std::abs(lb),
               qPrintable(QString("%1 vs %2").arg(la).arg(lb)));
      QCOMPARE(int(a["ranks"].size()), 4);
      for (int r = 0; r < 4; ++r) {
        const auto &x = a["ranks"][size_t(r)], &y = b["ranks"][size_t(r)];
        QCOMPARE(x["bytes_sent"].get<int64_t>(), y["bytes_sent"].get<int64_t>());
        for (const char* k : {"params", "grads", "optimizer", "activations"})  // same buffers
          QCOMPARE(x["mem"][k].get<int64_t>(), y["mem"][k].get<int64_t>());
      }
      QCOMPARE(a.contains("bubble"), args.contains("--pp"));
      if (a.contains("bubble"))
        QCOMPARE(a["bubble_reference"].get<double>(), b["bubble_reference"].get<double>());
    }
    QVERIFY(std::abs(mpi[3]["test_accuracy"].get<double>() -
                     thr[3]["test_accuracy"].get<double>()) <= 0.004);
#else
    QSKIP("built without MPI");
#endif
  }
};

QTEST_GUILESS_MAIN(TstModelParallel)
#include "tst_model_parallel.moc"
