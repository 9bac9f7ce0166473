// BenchChart's CSV: one table per kind, the numbers the bars show (the GPT's untimed sizes as
// empty cells). See tests/app/tst_charts_bench.cpp (each test reads the chart's CSV).
#include "charts/bench_chart.h"

namespace paralab {

void BenchChart::writeCsv(QTextStream& out) const {
  if (m_result && m_result->gpuCounts) {
    // Counted by executing the kernel source, not timed: one row per kernel.
    out << "kernel,stride,active_lane_percent,paths_per_warp,lines_per_load,sectors_per_load,"
           "global_loads,loads_per_output,bank_conflicts,worst_passes\n";
    for (const teach::GpuCountRow& k : m_result->gpuCounts->rows)
      out << k.key.c_str() << ',' << k.stride << ',' << csvNumber(k.activeLanePercent) << ','
          << csvNumber(k.pathsPerWarp) << ',' << csvNumber(k.linesPerLoad) << ','
          << csvNumber(k.sectorsPerLoad) << ',' << k.globalLoads << ','
          << csvNumber(k.loadsPerOutput) << ',' << k.bankConflicts << ',' << k.worstPasses
          << '\n';
    return;
  }
  if (m_result && m_result->gil) {
    out << "workers,threads_s,processes_s,threads_speedup,processes_speedup,cores\n";
    for (const teach::GilPoint& p : m_result->gil->points)
      out << p.workers << ',' << csvNumber(p.threadsSeconds) << ','
          << csvNumber(p.processesSeconds) << ',' << csvNumber(p.threadsSpeedup) << ','
          << csvNumber(p.processesSpeedup) << ',' << m_result->gil->cores << '\n';
    return;
  }
  if (m_result && m_result->roofline) {
    // A row per batch and layer: measured on this CPU (and a GPU), projected per GPU.
    const teach::RooflineResult& r = *m_result->roofline;
    out << "batch,layer,count,flops,bytes,cpu_measured_us,gpu_measured_us";
    for (const teach::RooflineGpu& g : r.gpus)
      out << ',' << g.name.c_str() << "_projected_us," << g.name.c_str() << "_bound";
    out << '\n';
    for (const teach::RooflineBatch& b : r.batches)
      for (const teach::RooflineLayer& l : b.layers) {
        out << b.batch << ',' << l.key.c_str() << ',' << l.count << ','
            << (l.projected.empty() ? QString() : csvNumber(l.projected[0].flops)) << ','
            << (l.projected.empty() ? QString() : csvNumber(l.projected[0].bytes)) << ','
            << csvNumber(l.cpuSeconds * 1e6) << ','
            << (l.gpuSeconds > 0 ? csvNumber(l.gpuSeconds * 1e6) : QString());
        for (const teach::ProjectedLayer& p : l.projected)
          out << ',' << csvNumber(p.seconds * 1e6) << ','
              << (p.computeBound ? "compute" : "memory");
        out << '\n';
      }
    return;
  }
  if (m_result && m_result->layouts) {
    out << "tp,pp,dp,tp_nodes,projected_step_s,compute_s,tp_comm_s,pp_bubble_s,pp_comm_s,"
           "dp_comm_exposed_s,optimizer_s,tp_share,tp_link_gbps,mfu,refused\n";
    for (const teach::LayoutPoint& p : m_result->layouts->points) {
      if (!p.projected) {
        out << p.tp << ",,,,,,,,,,,,,," << QString::fromStdString(p.refused) << '\n';
        continue;
      }
      const projection::Projection& q = p.projection;
      const projection::StepSplit& s = q.split;
      out << p.tp << ',' << q.layout.pp << ',' << q.layout.dp << ',' << p.tpNodes << ','
          << csvNumber(q.stepSeconds) << ',' << csvNumber(s.compute) << ',' << csvNumber(s.tpComm)
          << ',' << csvNumber(s.ppBubble) << ',' << csvNumber(s.ppComm) << ','
          << csvNumber(s.dpCommExposed) << ',' << csvNumber(s.optimizer) << ','
          << csvNumber(p.tpShare()) << ',' << csvNumber(q.tpLink.bytesPerS / 1e9) << ','
          << csvNumber(q.mfu) << ",\n";
    }
    return;
  }
  if (m_result && m_result->latencyCpu && m_result->latencyCpu->tokensPerSample > 0) {
    // The GPT: a row per batch size on the x axis, a size left untimed with empty cells (the
    // comment lines above the table say why).
    const int T = m_result->latencyCpu->tokensPerSample;
    out << "batch,tokens_per_forward,cpu_ms_per_forward,cpu_tokens_per_s,gpu_ms_per_forward,"
           "gpu_tokens_per_s\n";
    const std::vector<int> batches = latencySlots(*m_result);
    const auto cells = [&](const std::optional<LatencySweepResult>& s, size_t i) {
      if (s && i < s->points.size())
        out << csvNumber(s->points[i].msPerForward) << ',' << csvNumber(s->points[i].tokensPerS);
      else
        out << ',';
    };
    for (size_t i = 0; i < batches.size(); ++i) {
      out << batches[i] << ',' << qint64(batches[i]) * T << ',';
      cells(m_result->latencyCpu, i);
      out << ',';
      cells(m_result->latencyGpu, i);
      out << '\n';
    }
    return;
  }
  if (m_result && m_result->latencyCpu) {
    out << "batch,cpu_ms_per_forward,cpu_samples_per_s,gpu_ms_per_forward,gpu_samples_per_s\n";
    const auto& cpu = m_result->latencyCpu->points;
    for (size_t i = 0; i < cpu.size(); ++i) {
      out << cpu[i].batch << ',' << csvNumber(cpu[i].msPerForward) << ','
          << csvNumber(cpu[i].samplesPerS) << ',';
      if (m_result->latencyGpu && i < m_result->latencyGpu->points.size())
        out << csvNumber(m_result->latencyGpu->points[i].msPerForward) << ','
            << csvNumber(m_result->latencyGpu->points[i].samplesPerS);
      else
        out << ',';
      out << '\n';
    }
    return;
  }
  if (m_result && m_result->simd) {
    out << "isa,lanes,gflops,lanes_times_scalar_gflops_reference,skipped\n";
    const double scalar = m_result->simd->gflopsAt(1);
    for (const teach::SimdWidthPoint& p : m_result->simd->points) {
      const bool ran = p.skipped.empty();
      out << p.isa.c_str() << ',' << p.lanes << ',' << (ran ? csvNumber(p.gflops) : QString())
          << ',' << (ran && scalar > 0 ? csvNumber(scalar * p.lanes) : QString()) << ','
          << QString::fromStdString(p.skipped) << '\n';
    }
    return;
  }
  if (m_result && m_result->falseSharing) {
    out << "threads,shared_line_ns_per_increment,padded_ns_per_increment,slowdown\n";
    for (const teach::FalseSharingPoint& p : m_result->falseSharing->points)
      out << p.threads << ',' << csvNumber(p.sharedNs) << ',' << csvNumber(p.paddedNs) << ','
          << csvNumber(p.slowdown()) << '\n';
    return;
  }
  out << "kernel,n,threads,gflops,calls,skipped,fma_peak_gflops_reference\n";
  if (!m_result || !m_result->ladder) return;
  const teach::GemmLadderResult& r = *m_result->ladder;
  for (const teach::GemmRung& g : r.rungs) {
    const bool oneThread = g.kernel == "naive" || g.kernel == "simd";
    out << g.kernel.c_str() << ',' << g.n << ',' << (oneThread ? 1 : r.threads) << ','
        << (g.skipped.empty() ? csvNumber(g.gflops) : QString()) << ',' << g.calls << ','
        << QString::fromStdString(g.skipped) << ',' << csvNumber(r.peakGflops) << '\n';
  }
}

}  // namespace paralab
