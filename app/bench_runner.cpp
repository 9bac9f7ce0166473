// BenchRunner: a teaching benchmark on a std::thread, results back through queued calls (see
// bench_runner.h). See tests/app/tst_window.cpp (benchStepDrawsItsChart).
#include "bench_runner.h"

#include <QJsonArray>
#include <algorithm>
#include <filesystem>

#include "capabilities.h"
#include "data/dataset.h"
#include "schema.h"

namespace paralab {

namespace {
int cores() { return std::max(1, int(std::thread::hardware_concurrency())); }
}  // namespace

BenchRunner::BenchRunner(QObject* parent) : QObject(parent) {}

BenchRunner::~BenchRunner() {
  m_cancel = true;
  if (m_thread.joinable()) m_thread.join();
}

teach::GemmLadderOptions BenchRunner::ladderOptions(const lessons::Bench& b) {
  teach::GemmLadderOptions o;
  o.sizes = {int(lessons::benchOption(b, "size"))};
  const int threads = int(lessons::benchOption(b, "threads"));
  o.threads = threads > 0 ? threads : cores();
  o.repeats = int(lessons::benchOption(b, "repeats"));
  return o;
}

teach::FalseSharingOptions BenchRunner::falseSharingOptions(const lessons::Bench& b) {
  teach::FalseSharingOptions o;
  const int threads = int(lessons::benchOption(b, "threads"));
  o.maxThreads = threads > 0 ? threads : std::clamp(cores(), 2, 8);
  o.increments = long(lessons::benchOption(b, "increments"));
  return o;
}

RunConfig BenchRunner::latencyConfig(const lessons::Bench& b) {
  RunConfig c;  // paralab-run's model, so the step and `paralab-run --latency-sweep` agree
  c.hidden = int(lessons::benchOption(b, "hidden"));
  c.layers = int(lessons::benchOption(b, "layers"));
  if (lessons::benchWord(b, "model") == "gpt") {
    c.model = "gpt";
    c.seq = int(lessons::benchOption(b, "seq"));
    c.heads = int(lessons::benchOption(b, "heads"));
    datasetFollowsModel(c);  // its own text, as `paralab-run --model gpt` reads
    // Without Debian's fortunes the synthetic text, as the MLP falls back to synthetic images.
    if (!std::filesystem::is_directory(dataFolder(c))) c.dataset = "synthetic";
    return c;
  }
  c.dataset = missingFashionMnistFile(c.dataDir).empty() ? "fashion-mnist" : "synthetic";
  return c;
}

std::vector<int> BenchRunner::latencyBatches(const lessons::Bench& b) {
  std::vector<int> batches;
  for (int n = 1; n <= int(lessons::benchOption(b, "max-batch")); n *= 2) batches.push_back(n);
  return batches;
}

// The CPU's sweep, then the GPU's where there is one; progress counts the batch sizes of both.
static void runLatency(const lessons::Bench& bench, BenchResult& result,
                       const std::function<bool(int, int)>& progress) {
  const RunConfig cpu = BenchRunner::latencyConfig(bench);
  const std::vector<int> batches = BenchRunner::latencyBatches(bench);
  RunConfig gpu = cpu;
  gpu.device = "cuda";
  const GpuAvailability g = gpuAvailability();
  // With the batches: a GPU too small for the largest is said, not an error of the whole step.
  std::string why = g.count > 0 ? latencySweepProblem(gpu, batches) : g.reason;
  const int n = int(batches.size()), total = why.empty() ? 2 * n : n;
  const LatencySweepOptions options;
  result.latencyBudgetMs = options.maxMsPerSize;
  result.latencyCpu =
      runLatencySweep(cpu, batches, options, [&](int done, int) { return progress(done, total); });
  const qint64 params = result.latencyCpu->parameterCount;
  const QString data = QString::fromStdString(cpu.dataset);
  if (cpu.model == "gpt")
    result.latencyModel = QString("GPT H=%1, L=%2, %3 heads, T=%4, %L5 parameters, %6 test windows")
                              .arg(cpu.hidden)
                              .arg(cpu.layers)
                              .arg(cpu.heads)
                              .arg(cpu.seq)
                              .arg(params)
                              .arg(data);
  else
    result.latencyModel = QString("%1 H=%2, L=%3, %L4 parameters, %5 test samples")
                              .arg(QString::fromStdString(cpu.model))
                              .arg(cpu.hidden)
                              .arg(cpu.layers)
                              .arg(params)
                              .arg(data);
  if (!why.empty() || result.latencyCpu->cancelled) {
    result.gpuNotRun = QString::fromStdString(why.empty() ? "cancelled" : why);
    return;
  }
  result.latencyGpu = runLatencySweep(gpu, batches, options,
                                      [&](int done, int) { return progress(n + done, total); });
}

QJsonObject benchJson(const BenchResult& r) {
  QJsonObject o{{"kind", r.kind}};
  if (r.simd) {
    QJsonArray widths;
    for (const teach::SimdWidthPoint& p : r.simd->points)
      if (p.skipped.empty())
        widths.append(QJsonObject{
            {"lanes", p.lanes}, {"isa", QString::fromStdString(p.isa)}, {"gflops", p.gflops}});
    o.insert("widths", widths);
  }
  if (r.ladder) {
    QJsonArray rungs;
    for (const teach::GemmRung& g : r.ladder->rungs)
      if (g.skipped.empty())
        rungs.append(QJsonObject{
            {"kernel", QString::fromStdString(g.kernel)}, {"n", g.n}, {"gflops", g.gflops}});
    o.insert("rungs", rungs);
    o.insert("peak_gflops", r.ladder->peakGflops);
    o.insert("core_peak_gflops", r.ladder->corePeakGflops);
  }
  if (r.falseSharing) {
    QJsonArray points;
    for (const teach::FalseSharingPoint& p : r.falseSharing->points)
      points.append(QJsonObject{{"threads", p.threads},
                                {"shared_ns", p.sharedNs},
                                {"padded_ns", p.paddedNs},
                                {"slowdown", p.slowdown()}});
    o.insert("false_sharing", points);
  }
  if (r.latencyCpu) {
    QJsonArray points;
    for (const LatencyPoint& p : r.latencyCpu->points) {
      QJsonObject row{
          {"batch", p.batch}, {"ms_per_forward", p.msPerForward}, {"samples_per_s", p.samplesPerS}};
      if (r.latencyCpu->tokensPerSample > 0) row.insert("tokens_per_s", p.tokensPerS);  // the GPT
      points.append(row);
    }
    o.insert("latency", points);
  }
  return o;
}

bool BenchRunner::start(const lessons::Bench& bench) {
  if (m_running || bench.kind.isEmpty()) return false;
  if (m_thread.joinable()) m_thread.join();  // the last benchmark's thread, already at its end
  m_cancel = false;
  m_running = true;
  m_thread = std::thread([this, bench] {
    // Each piece (a GEMM call, a thread count) takes milliseconds or more: no flood to throttle.
    const auto onProgress = [this](int done, int total) {
      QMetaObject::invokeMethod(
          this, [this, done, total] { emit progress(done, total); }, Qt::QueuedConnection);
      return !m_cancel.load();
    };
    BenchResult result;
    result.kind = bench.kind;
    result.repeats = int(lessons::benchOption(bench, "repeats"));
    QString error;
    try {
      if (bench.kind == "gemm-ladder")
        result.ladder = teach::runGemmLadder(ladderOptions(bench), onProgress);
      else if (bench.kind == "simd-width")
        result.simd = teach::runSimdWidth(result.repeats, onProgress);
      else if (bench.kind == "false-sharing")
        result.falseSharing = teach::runFalseSharing(falseSharingOptions(bench), onProgress);
      else if (bench.kind == "latency")
        runLatency(bench, result, onProgress);
      else
        error = tr("bench: no benchmark called '%1'").arg(bench.kind);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this, [this, result, error] { finish(result, error); }, Qt::QueuedConnection);
  });
  return true;
}

void BenchRunner::cancel() { m_cancel = true; }

void BenchRunner::finish(const BenchResult& result, const QString& error) {
  if (m_thread.joinable()) m_thread.join();  // it posted this as its last act
  m_running = false;
  emit finished(result, error);
}

}  // namespace paralab
