// Engine jobs (engine/api/jobs/): work on the engine's thread with progress, cancel, a result
// or an error line, and the sweep, benchmark and host-check jobs the window starts.
// Run: ctest -R '^tst_jobs$'.
#include <QtTest>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "capabilities.h"
#include "jobs/bench_job.h"
#include "jobs/bench_settings.h"
#include "jobs/gpu_probe_job.h"
#include "jobs/host_check_job.h"
#include "jobs/sweep_job.h"
#include "train/sweep.h"

using namespace paralab;
using namespace paralab::jobs;

namespace {

// What a job's callbacks saw, from the job's thread.
struct Seen {
  std::mutex mutex;
  std::vector<std::pair<int, int>> progress;
  std::atomic<int> finished{0};
  std::thread::id thread;
  JobCallbacks callbacks() {
    return {.progress =
                [this](int done, int total) {
                  std::lock_guard lock(mutex);
                  progress.push_back({done, total});
                  thread = std::this_thread::get_id();
                },
            .finished = [this] { ++finished; }};
  }
};

}  // namespace

class TestJobs : public QObject {
  Q_OBJECT
 private slots:
  // The work runs off the caller's thread; each report reaches the callback and done()/total();
  // finished() is called back once, after the result is in place.
  void workReportsProgressAndDeliversItsResult() {
    Seen seen;
    Job<int> job(
        [](const ReportProgress& progress) {
          for (int i = 1; i <= 3; ++i) progress(i, 3);
          return 42;
        },
        seen.callbacks());
    job.wait();
    QVERIFY(job.finished());
    QCOMPARE(seen.finished.load(), 1);
    QCOMPARE(job.result().value_or(0), 42);
    QVERIFY(job.error().empty());
    QCOMPARE(job.done(), 3);
    QCOMPARE(job.total(), 3);
    QCOMPARE(seen.progress.size(), size_t(3));
    QCOMPARE(seen.progress.back(), std::make_pair(3, 3));
    QVERIFY(seen.thread != std::this_thread::get_id());
  }

  // cancel() makes the next report return false; the work returns what it has.
  void cancelStopsTheWorkAtItsNextReport() {
    Seen seen;
    std::atomic<bool> started{false};
    Job<int> job(
        [&](const ReportProgress& progress) {
          int done = 0;
          started = true;
          while (done < 1'000'000 && progress(done, 1'000'000)) {
            ++done;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
          return done;
        },
        seen.callbacks());
    while (!started) std::this_thread::yield();
    job.cancel();
    job.wait();
    QVERIFY(job.cancelRequested());
    QVERIFY(job.result().has_value());
    QVERIFY(*job.result() < 1'000'000);
    QCOMPARE(seen.finished.load(), 1);
  }

  // An exception of the work is the job's error line; there is no result.
  void anExceptionIsTheJobsError() {
    Seen seen;
    Job<int> job([](const ReportProgress&) -> int { throw std::invalid_argument("hidden: 0"); },
                 seen.callbacks());
    job.wait();
    QCOMPARE(job.error(), std::string("hidden: 0"));
    QVERIFY(!job.result());
    QCOMPARE(seen.finished.load(), 1);
  }

  // Destroying a job in flight cancels it and waits for its piece to end.
  void destroyingAJobCancelsAndWaits() {
    std::atomic<bool> returned{false}, started{false};
    {
      Job<int> job(
          [&](const ReportProgress& progress) {
            started = true;
            while (progress(0, 1)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            returned = true;
            return 0;
          },
          {});
      while (!started) std::this_thread::yield();
    }
    QVERIFY(returned);
  }

  // A sweep job gives runSweep's points: the 1-rank baseline added, progress per step.
  void sweepJobRunsTheSweep() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 64;
    Seen seen;
    auto job = startSweep({.base = c, .ranks = {2}, .steps = 2, .warmup = 1}, seen.callbacks());
    job->wait();
    QVERIFY2(job->error().empty(), job->error().c_str());
    QVERIFY(job->result());
    QCOMPARE(job->result()->points.size(), size_t(2));
    QCOMPARE(job->result()->points[1].ranks, 2);
    QCOMPARE(seen.progress.back().first, seen.progress.back().second);
    QCOMPARE(seen.finished.load(), 1);
  }

  // A block's keys choose the engine's options; "threads" 0 is every core, at least 2 for
  // false sharing; the roofline's hidden width follows the run settings unless the block gives
  // it; a kind without a benchmark is the job's error.
  void benchRequestChoosesTheOptions() {
    BenchRequest r;
    r.kind = "gemm-ladder";
    r.numbers = {{"size", 64}, {"threads", 0}, {"repeats", 2}};
    const teach::GemmLadderOptions ladder = ladderOptions(r);
    QCOMPARE(ladder.sizes, std::vector<int>{64});
    QCOMPARE(ladder.threads, machineCores());
    QCOMPARE(ladder.repeats, 2);
    r.numbers = {{"threads", 0}, {"increments", 1000}};
    QVERIFY(falseSharingOptions(r).maxThreads >= 2);
    r.numbers = {{"max-batch", 8}};
    QCOMPARE(latencyBatches(r), (std::vector<int>{1, 2, 4, 8}));
    r.kind = "roofline";
    r.numbers = {{"hidden", 64}, {"layers", 1}, {"max-batch", 16}, {"repeats", 1}};
    r.words = {{"precision", "fp32"}};
    r.settings.hidden = 256;
    QCOMPARE(rooflineOptions(r).hidden, 256);
    r.given = {"hidden"};
    QCOMPARE(rooflineOptions(r).hidden, 64);
    r.kind = "no-such-bench";
    auto job = startBench(r, {});
    job->wait();
    QCOMPARE(job->error(), std::string("bench: no benchmark called 'no-such-bench'"));
  }

  // A block's keys are the bench table's rows: each is a schema Setting of owner "bench"; a
  // block with an unknown key, a value out of range, a word not among its choices or a key its
  // kind or model does not use is refused in one line naming the key; a good block has none,
  // and its request holds every key of its kind, given or the row's default.
  void benchSettingsRefuseNamingTheKey() {
    QVERIFY(!benchSettings().empty());
    for (const Setting& s : benchSettings()) QCOMPARE(s.owner, std::string("bench"));
    const Setting* size = findBenchSetting("gemm-ladder", "size");
    QVERIFY(size && size->type == SettingType::Integer);
    QVERIFY(!findBenchSetting("gemm-ladder", "increments"));

    const auto only = [](const std::vector<std::string>& problems, const std::string& part) {
      return problems.size() == 1 && problems[0].find(part) != std::string::npos;
    };
    QVERIFY(benchProblems("gemm-ladder", {{"size", int64_t(256)}}).empty());
    QVERIFY(only(benchProblems("gemm-ladder", {{"sizes", int64_t(256)}}),
                 "unknown key 'sizes' (allowed: kind, size, threads, repeats)"));
    QVERIFY(only(benchProblems("gemm-ladder", {{"size", int64_t(9000)}}),
                 "'size' of gemm-ladder is a whole number 16..2048"));
    QVERIFY(only(benchProblems("gemm-ladder", {{"size", std::string("big")}}),
                 "'size' of gemm-ladder is a whole number"));
    QVERIFY(only(benchProblems("gemm-ladder", {{"hidden", int64_t(64)}}),
                 "'hidden' is a key of latency, roofline, layouts"));
    QVERIFY(only(benchProblems("latency", {{"seq", int64_t(32)}}),
                 "'seq' of latency needs \"model\": \"gpt\""));
    QVERIFY(only(benchProblems("latency", {{"model", std::string("rnn")}}),
                 "'model' of latency is one of mlp, gpt"));
    QVERIFY(
        benchProblems("latency", {{"model", std::string("gpt")}, {"seq", int64_t(32)}}).empty());
    QVERIFY(only(benchProblems("nope", {}), "'kind' is 'nope', not a benchmark"));

    const BenchRequest r = benchRequest("latency", {{"model", std::string("gpt")}});
    QCOMPARE(r.word("model"), std::string("gpt"));
    QCOMPARE(r.number("max-batch"), 1024.0);
    QCOMPARE(r.given, std::set<std::string>{"model"});
    QCOMPARE(r.number("size"), 0.0);  // not a key of latency
  }

  // The host check measures this machine and projects the run onto it, off the caller's thread.
  void hostCheckJobProjectsTheRunOnThisMachine() {
    RunConfig c;
    c.dataset = "synthetic";
    c.hidden = 32;
    c.batch = 64;
    Seen seen;
    auto job = startHostCheck(c, seen.callbacks());
    job->wait();
    QVERIFY2(job->error().empty(), job->error().c_str());
    QVERIFY(job->result());
    QVERIFY(job->result()->host.gemmFlops > 0);
    QVERIFY(job->result()->projection.stepSeconds > 0);
    QCOMPARE(seen.finished.load(), 1);
  }

  // The GPU probe answers off the caller's thread with what gpuAvailability() says here: a
  // count and a name, or none and the reason in words.
  void gpuProbeJobAnswersWhatThisMachineHas() {
    Seen seen;
    auto job = startGpuProbe(seen.callbacks());
    job->wait();
    QVERIFY2(job->error().empty(), job->error().c_str());
    QVERIFY(job->result());
    const GpuAvailability direct = gpuAvailability();
    QCOMPARE(job->result()->count, direct.count);
    QCOMPARE(job->result()->name, direct.name);
    if (direct.count == 0) QVERIFY(!job->result()->reason.empty());
    QCOMPARE(seen.finished.load(), 1);
    QVERIFY(seen.thread != std::this_thread::get_id());
  }
};

QTEST_GUILESS_MAIN(TestJobs)
#include "tst_jobs.moc"
