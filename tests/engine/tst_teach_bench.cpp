// The teaching benchmarks the lessons run in the window and paralab-bench prints: the GEMM
// ladder, false sharing over thread counts and latency vs throughput at tiny sizes return every
// rung, thread count and batch in order with sane numbers, a cancel stops them early, bad
// options are refused by name.
// (Speeds depend on the machine: printed, never asserted.) Run: ctest -R tst_teach_bench -V
#include <QtTest>
#include <cmath>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "teach/false_sharing.h"
#include "teach/gemm_ladder.h"
#include "teach/simd_width.h"
#include "train/latency_sweep.h"

using namespace paralab::teach;

class TstTeachBench : public QObject {
  Q_OBJECT
 private slots:
  void ladderHasEveryRungInOrder() {
    GemmLadderOptions o;
    o.sizes = {32, 64};
    o.threads = 2;
    o.repeats = 3;
    int lastDone = 0, lastTotal = 0;
    bool monotone = true;  // never back, never past the end
    const GemmLadderResult r = runGemmLadder(o, [&](int done, int total) {
      monotone = monotone && done >= lastDone && done <= total;
      lastDone = done, lastTotal = total;
      return true;
    });
    QVERIFY(monotone);
    QVERIFY(!r.cancelled);
    QCOMPARE(lastDone, lastTotal);
    const auto ladder = paralab::kernels::gemm_kernels();
    QCOMPARE(r.rungs.size(), 2 * ladder.size());
    for (size_t i = 0; i < r.rungs.size(); ++i) {
      const GemmRung& g = r.rungs[i];
      QCOMPARE(g.n, o.sizes[i / ladder.size()]);
      QCOMPARE(QString::fromStdString(g.kernel), QString(ladder[i % ladder.size()].name));
      QVERIFY2(g.skipped.empty(), g.skipped.c_str());
      QCOMPARE(g.calls, 3);
      QVERIFY(std::isfinite(g.gflops) && g.gflops > 0);
      qInfo("n=%d %-8s %8.2f GFLOP/s", g.n, g.kernel.c_str(), g.gflops);
    }
    QCOMPARE(r.vendorGflops(64), r.rungs.back().gflops);
    QCOMPARE(r.threads, 2);
    QVERIFY(r.corePeakGflops > 0);
    QCOMPARE(r.peakGflops, 2 * r.corePeakGflops);
    QVERIFY(!r.blas.empty());
  }

  // The peak's width follows the code that runs: ParaLab's level forced to avx2 measures the
  // AVX2 peak unless OpenBLAS runs AVX-512 kernels; at avx512 the AVX-512 peak.
  void peakIsAtTheWidthThatRuns() {
    using namespace paralab::kernels;
    const SimdLevel was = simdLevel();
    if (setSimdLevel(SimdLevel::Avx2)) QCOMPARE(fmaPeakLanes(), vendor_blas_uses_avx512() ? 16 : 8);
    if (setSimdLevel(SimdLevel::Avx512)) QCOMPARE(fmaPeakLanes(), 16);
    QVERIFY(setSimdLevel(was));
    QVERIFY(measuredFmaPeakGflops() > 0);
  }

  // A rung predicted slower than maxSeconds per call skips the next size, and says why.
  void slowRungsSkipTheNextSize() {
    GemmLadderOptions o;
    o.sizes = {16, 48};
    o.repeats = 1;
    o.maxSeconds = 1e-12;
    const GemmLadderResult r = runGemmLadder(o);
    for (const GemmRung& g : r.rungs) {
      QCOMPARE(g.skipped.empty(), g.n == 16);
      QCOMPARE(g.gflops > 0, g.n == 16);
      if (g.n == 48) QVERIFY(QString::fromStdString(g.skipped).contains("max-seconds"));
    }
  }

  void ladderCancelStopsEarly() {
    GemmLadderOptions o;
    o.sizes = {64, 128};
    int calls = 0;
    const GemmLadderResult r = runGemmLadder(o, [&](int, int) { return ++calls < 3; });
    QVERIFY(r.cancelled);
    QCOMPARE(calls, 3);        // no call measured after the cancel
    QVERIFY(r.rungs.empty());  // a size half measured is not returned
  }

  void falseSharingHasEveryThreadCount() {
    FalseSharingOptions o;
    o.maxThreads = 3;
    o.increments = 100'000;
    o.repeats = 1;
    QList<int> seen;
    const FalseSharingSweep s = runFalseSharing(o, [&](int done, int total) {
      seen << done;
      return total == 3;
    });
    QVERIFY(!s.cancelled);
    QCOMPARE(seen, QList<int>({1, 2, 3}));
    QCOMPARE(int(s.points.size()), 3);
    QCOMPARE(s.increments, 100'000L);
    QVERIFY(s.cores >= 1);
    for (int i = 0; i < 3; ++i) {
      const FalseSharingPoint& p = s.points[size_t(i)];
      QCOMPARE(p.threads, i + 1);
      QVERIFY(p.sharedNs > 0 && p.paddedNs > 0 && std::isfinite(p.slowdown()));
      qInfo("%d thread(s): shared %.2f ns, padded %.2f ns per increment", p.threads, p.sharedNs,
            p.paddedNs);
    }
  }

  void falseSharingCancelStopsEarly() {
    FalseSharingOptions o;
    o.maxThreads = 4;
    o.increments = 10'000;
    o.repeats = 1;
    const FalseSharingSweep s = runFalseSharing(o, [](int done, int) { return done < 2; });
    QVERIFY(s.cancelled);
    QCOMPARE(int(s.points.size()), 2);
  }

  // SIMD width: the four widths narrowest first, each measured where the CPU has its
  // instructions and otherwise skipped saying which it lacks; a cancel keeps what was measured.
  void simdWidthHasEveryWidthInOrder() {
    const SimdWidthResult r = runSimdWidth(1);
    QVERIFY(!r.cancelled);
    QCOMPARE(int(r.points.size()), 4);
    const int lanes[] = {1, 4, 8, 16};
    const char* isa[] = {"scalar", "SSE", "AVX2", "AVX-512"};
    __builtin_cpu_init();
    const bool has[] = {bool(__builtin_cpu_supports("fma")), bool(__builtin_cpu_supports("fma")),
                        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                        bool(__builtin_cpu_supports("avx512f"))};
    for (int i = 0; i < 4; ++i) {
      const SimdWidthPoint& p = r.points[size_t(i)];
      QCOMPARE(p.lanes, lanes[i]);
      QCOMPARE(QString::fromStdString(p.isa), QString(isa[i]));
      QCOMPARE(p.skipped.empty(), has[i]);
      QCOMPARE(p.gflops > 0, has[i]);
      QCOMPARE(r.gflopsAt(p.lanes), p.gflops);
      if (!has[i]) QVERIFY(p.skipped.find(isa[i]) != std::string::npos);
      qInfo("%-8s %2d lanes: %.1f GFLOP/s %s", p.isa.c_str(), p.lanes, p.gflops, p.skipped.c_str());
    }
    const SimdWidthResult part = runSimdWidth(1, [](int done, int) { return done < 2; });
    QVERIFY(part.cancelled);
    QCOMPARE(int(part.points.size()), 2);
    QCOMPARE(r.gflopsAt(3), 0.0);  // no such width
  }

  // Latency vs throughput (engine/train/latency_sweep.h), as the lesson's latency step runs
  // it: every batch size in order, or those before a cancel.
  void latencySweepReportsAndCancels() {
    paralab::RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 16;
    c.layers = 1;
    const paralab::LatencySweepOptions o{.warmup = 1, .repeats = 1, .minRepeatMs = 0.1};
    const paralab::LatencySweepResult all = paralab::runLatencySweep(c, {1, 2, 4}, o);
    QVERIFY(!all.cancelled);
    QCOMPARE(int(all.points.size()), 3);
    for (size_t i = 0; i < 3; ++i) {
      const paralab::LatencyPoint& p = all.points[i];
      QCOMPARE(p.batch, 1 << i);
      QVERIFY(p.msPerForward > 0);
      QCOMPARE(p.samplesPerS, p.batch / (p.msPerForward * 1e-3));
    }
    const paralab::LatencySweepResult part =
        paralab::runLatencySweep(c, {1, 2, 4, 8}, o, [](int done, int) { return done < 2; });
    QVERIFY(part.cancelled);
    QCOMPARE(int(part.points.size()), 2);
  }

  // The GPT through the same sweep: its dataset follows the model (text windows, not the
  // default images), a point per batch size with tokens/s = windows/s x T, and sizes over the
  // time budget left untimed and named, with the larger ones; the MLP has no budget.
  void latencySweepGptTokensAndBudget() {
    paralab::RunConfig c;
    c.model = paralab::ModelKind::Gpt;
    c.dataset = "synthetic";  // the generated text under --model gpt
    c.hidden = 16, c.heads = 2, c.seq = 8, c.layers = 1;
    const paralab::LatencySweepOptions o{.warmup = 1, .repeats = 1, .minRepeatMs = 0.1};
    const paralab::LatencySweepResult r = paralab::runLatencySweep(c, {1, 2, 4}, o);
    QCOMPARE(r.tokensPerSample, 8);
    QCOMPARE(int(r.points.size()), 3);
    QVERIFY(r.notTimed.empty());
    for (size_t i = 0; i < 3; ++i) {
      const paralab::LatencyPoint& p = r.points[i];
      QCOMPARE(p.batch, 1 << i);
      QVERIFY(p.msPerForward > 0);
      QCOMPARE(p.tokensPerS, p.samplesPerS * 8);
    }
    paralab::LatencySweepOptions none = o;
    none.maxMsPerSize = 0;  // no size fits
    int reported = -1;
    const paralab::LatencySweepResult skipped = paralab::runLatencySweep(
        c, {1, 2, 4}, none, [&](int done, int total) { return reported = done, total > 0; });
    QVERIFY(skipped.points.empty() && !skipped.cancelled);
    QCOMPARE(skipped.notTimed, std::vector<int>({1, 2, 4}));
    QVERIFY2(skipped.notTimedWhy.find("one forward at batch 1 (8 tokens)") != std::string::npos,
             skipped.notTimedWhy.c_str());
    QCOMPARE(reported, 3);  // progress ends full
    c.model = paralab::ModelKind::Mlp;
    const paralab::LatencySweepResult mlp = paralab::runLatencySweep(c, {1, 2}, none);
    QCOMPARE(int(mlp.points.size()), 2);
    QCOMPARE(mlp.tokensPerSample, 0);
    QCOMPARE(mlp.points[0].tokensPerS, 0.0);
  }

  void badOptionsNameTheField() {
    auto message = [](auto f) {
      try {
        f();
      } catch (const std::invalid_argument& e) {
        return QString(e.what());
      }
      return QString();
    };
    QVERIFY(message([] { runGemmLadder({.sizes = {}}); }).startsWith("sizes:"));
    QVERIFY(message([] { runGemmLadder({.sizes = {0}}); }).startsWith("sizes:"));
    QVERIFY(message([] { runGemmLadder({.threads = 0}); }).startsWith("threads:"));
    QVERIFY(message([] { runFalseSharing({.maxThreads = 9}); }).startsWith("threads:"));
    QVERIFY(message([] { runFalseSharing({.increments = 0}); }).startsWith("increments:"));
    QVERIFY(message([] { runSimdWidth(0); }).startsWith("repeats:"));
  }
};

QTEST_GUILESS_MAIN(TstTeachBench)
#include "tst_teach_bench.moc"
