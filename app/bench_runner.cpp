// BenchRunner: a bench job's callbacks posted to the GUI thread, and the measured values as
// the metric paths of a step's comparison (see bench_runner.h). See tests/app/tst_window.cpp
// (benchStepDrawsItsChart).
#include "bench_runner.h"

#include <QJsonArray>

namespace paralab {

BenchRunner::BenchRunner(QObject* parent) : QObject(parent) {}

BenchRunner::~BenchRunner() = default;  // the job cancels and waits

jobs::BenchRequest BenchRunner::request(const lessons::Bench& bench, const RunConfig& settings) {
  return jobs::benchRequest(bench.kind.toStdString(), lessons::benchValues(bench), settings);
}

RunConfig BenchRunner::latencyConfig(const lessons::Bench& bench) {
  return jobs::latencyConfig(request(bench));
}

std::vector<int> BenchRunner::latencyBatches(const lessons::Bench& bench) {
  return jobs::latencyBatches(request(bench));
}

QJsonObject benchJson(const BenchResult& r) {
  QJsonObject o{{"kind", QString::fromStdString(r.kind)}};
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
  if (r.gpuCounts) {
    QJsonArray counts;
    for (const teach::GpuCountRow& k : r.gpuCounts->rows)
      counts.append(QJsonObject{{"kernel", QString::fromStdString(k.key)},
                                {"stride", k.stride},
                                {"active_lane_percent", k.activeLanePercent},
                                {"paths_per_warp", k.pathsPerWarp},
                                {"lines_per_load", k.linesPerLoad},
                                {"sectors_per_load", k.sectorsPerLoad},
                                {"global_loads", double(k.globalLoads)},
                                {"loads_per_output", k.loadsPerOutput},
                                {"bank_conflicts", double(k.bankConflicts)},
                                {"worst_passes", double(k.worstPasses)}});
    o.insert("counts", counts);
  }
  if (r.gil) {
    QJsonArray points;
    for (const teach::GilPoint& p : r.gil->points)
      points.append(QJsonObject{{"workers", p.workers},
                                {"threads_s", p.threadsSeconds},
                                {"processes_s", p.processesSeconds},
                                {"threads_speedup", p.threadsSpeedup},
                                {"processes_speedup", p.processesSpeedup}});
    o.insert("gil", points);
    o.insert("cores", r.gil->cores);
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
  if (m_job || bench.kind.isEmpty()) return false;
  jobs::JobCallbacks callbacks;
  // Each piece (a GEMM call, a thread count) takes milliseconds or more: no flood to throttle.
  callbacks.progress = [this](int done, int total) {
    QMetaObject::invokeMethod(
        this, [this, done, total] { emit progress(done, total); }, Qt::QueuedConnection);
  };
  callbacks.finished = [this] {
    QMetaObject::invokeMethod(this, [this] { finish(); }, Qt::QueuedConnection);
  };
  m_job = jobs::startBench(request(bench, settings), std::move(callbacks));
  return true;
}

void BenchRunner::cancel() {
  if (m_job) m_job->cancel();
}

void BenchRunner::finish() {
  if (!m_job) return;
  m_job->wait();  // it posted this as its last act
  const std::unique_ptr<jobs::Job<BenchResult>> job = std::move(m_job);
  emit finished(job->result().value_or(BenchResult{}), QString::fromStdString(job->error()));
}

}  // namespace paralab
