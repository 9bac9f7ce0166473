// BenchRunner: a teaching benchmark on a std::thread, results back through queued calls (see
// bench_runner.h). See tests/app/tst_window.cpp (benchStepDrawsItsChart).
#include "bench_runner.h"

#include <QJsonArray>
#include <algorithm>
#include <filesystem>

#include "capabilities.h"
#include "config.h"
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

teach::RooflineOptions BenchRunner::rooflineOptions(const lessons::Bench& b,
                                                    const RunConfig& settings) {
  teach::RooflineOptions o;
  const auto given = [&](const char* key, int fallback) {
    return b.options.contains(key) ? int(lessons::benchOption(b, key)) : fallback;
  };
  o.hidden = given("hidden", settings.hidden);
  o.layers = given("layers", settings.layers);
  o.kernel = isGemmKernel("cpu", settings.kernel) ? settings.kernel : "vendor";
  o.batches = {1, int(lessons::benchOption(b, "max-batch"))};
  o.precision = projection::parsePrecision(lessons::benchWord(b, "precision").toStdString());
  o.repeats = int(lessons::benchOption(b, "repeats"));
  return o;
}

teach::LayoutProjectionOptions BenchRunner::layoutOptions(const lessons::Bench& b) {
  teach::LayoutProjectionOptions o;
  const auto n = [&](const char* key) { return int(lessons::benchOption(b, key)); };
  o.gpu = lessons::benchWord(b, "gpu").toStdString();
  o.gpus = n("gpus");
  o.nodeLink = lessons::benchWord(b, "node-link").toStdString();
  o.layers = n("layers"), o.hidden = n("hidden"), o.heads = n("heads");
  o.seq = n("seq"), o.vocab = n("vocab"), o.batch = n("batch"), o.pp = n("pp");
  o.recompute = lessons::benchWord(b, "recompute").toStdString();
  o.tps.clear();
  for (int tp = n("min-tp"); tp <= n("max-tp"); tp *= 2) o.tps.push_back(tp);
  return o;
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
  if (r.roofline) {
    const teach::RooflineResult& f = *r.roofline;
    o.insert("hidden", f.hidden);
    o.insert("layers", f.layers);
    o.insert("precision", QString::fromStdString(f.precision));
    QJsonArray gpus;
    for (const teach::RooflineGpu& g : f.gpus)
      gpus.append(QJsonObject{{"gpu", QString::fromStdString(g.name)},
                              {"title", QString::fromStdString(g.title)},
                              {"gemm_tflops", g.gemmTflops},
                              {"memory_gbps", g.memoryGBps},
                              {"ridge_flops_per_byte", g.ridge}});
    o.insert("gpus", gpus);
    QJsonArray batches;
    for (const teach::RooflineBatch& b : f.batches) {
      QJsonArray layers;
      for (const teach::RooflineLayer& l : b.layers) {
        QJsonArray projected;
        for (size_t g = 0; g < l.projected.size() && g < f.gpus.size(); ++g)
          projected.append(QJsonObject{{"gpu", QString::fromStdString(f.gpus[g].name)},
                                       {"ms", l.projected[g].seconds * 1e3},
                                       {"compute_bound", l.projected[g].computeBound},
                                       {"sm_busy", l.projected[g].smBusy}});
        QJsonObject row{{"layer", QString::fromStdString(l.key)},
                        {"count", l.count},
                        {"cpu_ms", l.cpuSeconds * 1e3},
                        {"projected", projected}};
        if (!l.projected.empty()) {
          row.insert("flops", l.projected[0].flops);
          row.insert("bytes", l.projected[0].bytes);
          row.insert("flops_per_byte", l.projected[0].intensity());
        }
        if (l.gpuSeconds > 0) row.insert("gpu_ms", l.gpuSeconds * 1e3);
        layers.append(row);
      }
      QJsonObject batch{{"batch", b.batch}, {"cpu_step_ms", b.cpuStepSeconds() * 1e3},
                        {"layers", layers}};
      for (size_t g = 0; g < f.gpus.size(); ++g)
        batch.insert(QString::fromStdString(f.gpus[g].name) + "_step_ms",
                     b.projectedStepSeconds(g) * 1e3);
      if (b.gpuStepSeconds() > 0) batch.insert("gpu_step_ms", b.gpuStepSeconds() * 1e3);
      batches.append(batch);
    }
    o.insert("batches", batches);
  }
  if (r.layouts) {
    QJsonArray layouts;
    for (const teach::LayoutPoint& p : r.layouts->points) {
      if (!p.projected) continue;
      const projection::Projection& q = p.projection;
      const projection::StepSplit& s = q.split;
      layouts.append(QJsonObject{{"tp", p.tp},
                                 {"pp", q.layout.pp},
                                 {"dp", q.layout.dp},
                                 {"tp_nodes", p.tpNodes},
                                 {"step_ms", q.stepSeconds * 1e3},
                                 {"compute_ms", s.compute * 1e3},
                                 {"tp_comm_ms", s.tpComm * 1e3},
                                 {"tp_share", p.tpShare()},
                                 {"tp_allreduce_ms", p.tpAllReduceSeconds * 1e3},
                                 {"tp_link_gbps", q.tpLink.bytesPerS / 1e9},
                                 {"mfu", q.mfu},
                                 {"tokens_per_s", q.tokensPerS}});
    }
    o.insert("layouts", layouts);
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

bool BenchRunner::start(const lessons::Bench& bench, const RunConfig& settings) {
  if (m_running || bench.kind.isEmpty()) return false;
  if (m_thread.joinable()) m_thread.join();  // the last benchmark's thread, already at its end
  m_cancel = false;
  m_running = true;
  m_thread = std::thread([this, bench, settings] {
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
      else if (bench.kind == "roofline")
        result.roofline = teach::runRoofline(rooflineOptions(bench, settings), onProgress);
      else if (bench.kind == "layouts") {
        const teach::LayoutProjectionOptions options = layoutOptions(bench);
        if (options.tps.empty()) throw std::invalid_argument("bench: min-tp is above max-tp");
        result.layouts = teach::runLayoutProjection(options);
      }
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
