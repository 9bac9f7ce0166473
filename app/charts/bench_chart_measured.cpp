// BenchChart's measured kinds: the GEMM ladder, SIMD width, false sharing, and latency against
// throughput (the GPT's in tokens/s, its untimed sizes said on the chart). What every kind shares
// is in bench_chart.cpp. See tests/app/tst_charts_bench.cpp (benchChartDrawsEachKind,
// benchChartLabelsTheGpt) and tst_window.cpp (benchStepDrawsItsChart).
#include <algorithm>
#include <thread>

#include "charts/bench_chart.h"
#include "charts/chart_colors.h"

namespace paralab {

namespace {

// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... core SkylakeX" -> "OpenBLAS 0.3.21".
QString shortBlasName(const std::string& name) {
  const QStringList words = QString::fromStdString(name).split(' ', Qt::SkipEmptyParts);
  return words.mid(0, 2).join(' ');
}

QString value(double v) { return QString::number(v, 'f', v < 10 ? 1 : 0); }

}  // namespace

// The batch sizes of a latency result along the x axis: those timed, then those a GPT sweep's
// time budget left untimed (they keep their place, without a bar), on either device.
std::vector<int> BenchChart::latencySlots(const BenchResult& r) {
  std::vector<int> out;
  for (const LatencySweepResult* s : {&*r.latencyCpu, r.latencyGpu ? &*r.latencyGpu : nullptr}) {
    if (!s) continue;
    std::vector<int> batches;
    for (const LatencyPoint& p : s->points) batches.push_back(p.batch);
    batches.insert(batches.end(), s->notTimed.begin(), s->notTimed.end());
    if (batches.size() > out.size()) out = batches;
  }
  return out;
}

void BenchChart::showLadder(const teach::GemmLadderResult& r) {
  using namespace chartcolors;
  const int cores = int(std::thread::hardware_concurrency());
  const int n = r.rungs.empty() ? 0 : r.rungs.front().n;
  QStringList names;
  double top = r.peakGflops;
  int x = 0;
  for (const teach::GemmRung& g : r.rungs) {
    if (g.n != n) continue;  // the first size: a lesson's ladder has one
    ++x;
    const bool vendor = g.kernel == "vendor";
    names << (vendor ? tr("OpenBLAS") : QString::fromStdString(g.kernel));
    if (!g.skipped.empty()) continue;
    (vendor ? m_vendor : m_rungs)->addData(x, g.gflops);
    addValueLabel(x, g.gflops, value(g.gflops), vendor ? kOrange.darker(115) : kBlue);
    top = std::max(top, g.gflops);
  }
  setTickNames(names);
  m_vendor->setName(tr("%1 (measured)").arg(shortBlasName(r.blas)));
  xAxis->setRange(0.4, x + 0.6);
  m_peak->addData(0.4, r.peakGflops);
  m_peak->addData(x + 0.6, r.peakGflops);
  m_peak->setName(tr("FMA peak: %1 GFLOP/s × %2 threads (reference formula)")
                      .arg(value(r.corePeakGflops))
                      .arg(r.threads));
  for (QCPAbstractPlottable* p :
       {static_cast<QCPAbstractPlottable*>(m_rungs), static_cast<QCPAbstractPlottable*>(m_vendor),
        static_cast<QCPAbstractPlottable*>(m_peak)})
    p->addToLegend();
  yAxis->setRange(0, top * 1.15);
  setAxisLabel(xAxis, tr("GEMM kernel, n = %1 (slowest rung first)").arg(n), tr("GEMM kernel"));
  setAxisLabel(yAxis, tr("GFLOP/s (2n³ / median time)"), tr("GFLOP/s"));
  int calls = 0;
  for (const teach::GemmRung& g : r.rungs) calls = std::max(calls, g.calls);
  setSubtitle(tr("GEMM ladder, fp32, %1 × %1 × %1 · median of up to %2 calls · naive and simd "
                 "on 1 thread, threaded, tiled and OpenBLAS on %3 · this machine has %4 cores, "
                 "so no rung can show more than %4 cores' worth")
                  .arg(n)
                  .arg(calls)
                  .arg(r.threads)
                  .arg(cores) +
              (r.cancelled ? tr(" · cancelled before the end") : QString()));
}

void BenchChart::showSimd(const teach::SimdWidthResult& r, int repeats) {
  using namespace chartcolors;
  QStringList names, lacks;
  const double scalar = r.gflopsAt(1);
  double top = 0;
  for (size_t i = 0; i < r.points.size(); ++i) {
    const teach::SimdWidthPoint& p = r.points[i];
    const double x = double(i + 1);
    const QString isa = QString::fromStdString(p.isa);
    names << (p.lanes == 1 ? tr("%1 (1 lane)").arg(isa)
                           : tr("%1 (%2 lanes)").arg(isa).arg(p.lanes));
    if (!p.skipped.empty()) {
      lacks << isa;
      addValueLabel(x, 0, tr("not on this CPU"), kReference);
      continue;
    }
    m_rungs->addData(x, p.gflops);
    if (scalar > 0) m_ideal->addData(x, scalar * p.lanes);
    // Above the bar and its outline, whichever is higher.
    addValueLabel(x, std::max(p.gflops, scalar * p.lanes),
                  scalar > 0 ? tr("%1 (%2×)").arg(value(p.gflops), value(p.gflops / scalar))
                             : value(p.gflops),
                  kBlue);
    top = std::max({top, p.gflops, scalar * p.lanes});
  }
  m_rungs->setName(tr("one core, measured"));
  m_rungs->addToLegend();
  if (m_ideal->dataCount() > 0) m_ideal->addToLegend();
  setTickNames(names);
  xAxis->setRange(0.4, double(r.points.size()) + 0.6);
  yAxis->setRange(0, std::max(1.0, top) * 1.15);
  setAxisLabel(xAxis, tr("SIMD width: floats per FMA instruction"), tr("SIMD width"));
  setAxisLabel(yAxis, tr("GFLOP/s, one core (2 × lanes × FMAs / median time)"), tr("GFLOP/s"));
  setSubtitle(
      tr("SIMD width, fp32: one core, 12 independent FMA chains, the same instruction "
         "count at every width · median of %1 runs")
          .arg(repeats) +
      (lacks.isEmpty() ? QString() : tr(" · not run: this CPU has no %1").arg(lacks.join(", "))) +
      (r.cancelled ? tr(" · cancelled before the end") : QString()));
}

void BenchChart::showFalseSharing(const teach::FalseSharingSweep& s) {
  using namespace chartcolors;
  QStringList names;
  double top = 0;
  for (const teach::FalseSharingPoint& p : s.points) {
    names << QString::number(p.threads);
    m_shared->addData(p.threads, p.sharedNs);
    m_padded->addData(p.threads, p.paddedNs);
    addValueLabel(p.threads - 0.2, p.sharedNs, value(p.sharedNs), kRed);
    addValueLabel(p.threads + 0.2, p.paddedNs, value(p.paddedNs), kBlue);
    top = std::max({top, p.sharedNs, p.paddedNs});
  }
  m_shared->addToLegend();
  m_padded->addToLegend();
  setTickNames(names);
  xAxis->setRange(0.4, double(s.points.size()) + 0.6);
  yAxis->setRange(0, top * 1.15);
  setAxisLabel(xAxis, tr("threads, each bumping its own counter"), tr("threads"));
  setAxisLabel(yAxis, tr("ns per increment (wall time / increments)"), tr("ns per increment"));
  setSubtitle(tr("False sharing: %L1 atomic increments per thread · median of 3 runs · this "
                 "machine has %2 cores: past %2 threads take turns, so it cannot show more "
                 "than %2 threads' worth")
                  .arg(s.increments)
                  .arg(s.cores) +
              (s.cancelled ? tr(" · cancelled before the end") : QString()));
}

void BenchChart::showLatency(const BenchResult& r) {
  using namespace chartcolors;
  // A GPT sample is a window of T characters, T next-character predictions per forward: its
  // bars are tokens/s and its x axis counts windows. T is 0 for the MLP.
  const int T = r.latencyCpu->tokensPerSample;
  m_cpuRate->setName(T > 0 ? tr("CPU tokens/s (bars)") : tr("CPU samples/s (bars)"));
  m_gpuRate->setName(T > 0 ? tr("GPU tokens/s (bars)") : tr("GPU samples/s (bars)"));
  QStringList names;
  for (int batch : latencySlots(r)) names << QString::number(batch);
  double topRate = 0, minMs = 1e300, maxMs = 0;
  int timed = 0;  // the slots with a bar, from the left
  const auto draw = [&](const LatencySweepResult& s, QCPBars* rate, QCPGraph* latency) {
    for (size_t i = 0; i < s.points.size(); ++i) {
      const LatencyPoint& p = s.points[i];
      const double perS = T > 0 ? p.tokensPerS : p.samplesPerS;
      rate->addData(double(i + 1), perS);
      latency->addData(double(i + 1), p.msPerForward);
      topRate = std::max(topRate, perS);
      minMs = std::min(minMs, p.msPerForward), maxMs = std::max(maxMs, p.msPerForward);
    }
    timed = std::max(timed, int(s.points.size()));
    rate->addToLegend();
    latency->addToLegend();
  };
  draw(*r.latencyCpu, m_cpuRate, m_cpuLatency);
  if (r.latencyGpu) draw(*r.latencyGpu, m_gpuRate, m_gpuLatency);
  m_cpuRate->setWidth(r.latencyGpu ? 0.38 : 0.6);
  const int n = int(names.size());
  // Sizes left untimed by the budget are never silently missing: their slots stay empty on the
  // axis, "not timed" is written in the slots that no device timed (fitNotTimed), and the
  // subtitle and the CSV's comment lines say which and why.
  if (timed < n) {
    m_notTimed = new QCPItemText(this);
    m_notTimed->position->setCoords((timed + 1 + n) / 2.0, 0);
    m_notTimed->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    m_notTimed->setPadding(QMargins(0, 0, 0, 3));
    m_notTimed->setColor(kReference);
    m_notTimed->setFont(legend->font());
    m_notTimed->setClipToAxisRect(false);
    m_labels << m_notTimed;
    m_untimedSlots = n - timed;
  }
  setTickNames(names);
  xAxis->setRange(0.4, n + 0.6);
  yAxis->setRange(0, std::max(1.0, topRate) * 1.12);
  // Latency spans decades from batch 1 to the largest: a log axis shows every point.
  yAxis2->setVisible(true);
  yAxis2->setScaleType(QCPAxis::stLogarithmic);
  yAxis2->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  yAxis2->setNumberFormat("gb");
  if (maxMs > 0) yAxis2->setRange(minMs / 2, maxMs * 2);
  if (T > 0) {
    setAxisLabel(xAxis, tr("batch (windows of %1 characters)").arg(T), tr("batch (windows)"));
    setAxisLabel(yAxis, tr("throughput (tokens/s)"), tr("tokens/s"));
  } else {
    setAxisLabel(xAxis, tr("batch size (samples per forward)"), tr("batch size"));
    setAxisLabel(yAxis, tr("throughput (samples/s)"), tr("samples/s"));
  }
  setAxisLabel(yAxis2, tr("latency: ms per forward (log)"), tr("ms (log)"));
  QString untimed;
  QStringList why;
  const QString budget = r.latencyBudgetMs > 0
                             ? tr("over the %1 s budget per size").arg(r.latencyBudgetMs / 1e3)
                             : tr("over the time budget per size");
  const auto sayUntimed = [&](const LatencySweepResult& s, const QString& device) {
    if (s.notTimed.empty()) return;
    const QString sizes = s.notTimed.size() == 1
                              ? QString::number(s.notTimed.front())
                              : tr("%1 to %2").arg(s.notTimed.front()).arg(s.notTimed.back());
    untimed += tr(" · not timed%1: batch %2 (%3)").arg(device, sizes, budget);
    why << tr("not timed%1: %2").arg(device, QString::fromStdString(s.notTimedWhy));
  };
  sayUntimed(*r.latencyCpu, r.latencyGpu ? tr(" on the CPU") : QString());
  if (r.latencyGpu) sayUntimed(*r.latencyGpu, tr(" on the GPU"));
  setLabels(why);
  const int cores = int(std::thread::hardware_concurrency());
  setSubtitle(tr("Latency vs throughput, forward only: %1 · CPU GEMM %2 on %3 thread(s) of "
                 "this machine's %4 cores · %5")
                  .arg(QString::fromStdString(r.latencyModel),
                       QString::fromStdString(r.latencyCpu->kernel))
                  .arg(r.latencyCpu->threads)
                  .arg(cores)
                  .arg(r.latencyGpu ? tr("GPU %1, the batch copied from host memory each forward")
                                          .arg(QString::fromStdString(r.latencyGpu->gpu))
                                    : tr("GPU half not run here (%1)")
                                          .arg(QString::fromStdString(r.gpuNotRun))) +
              untimed + (r.cancelled() ? tr(" · cancelled before the end") : QString()));
}

}  // namespace paralab
