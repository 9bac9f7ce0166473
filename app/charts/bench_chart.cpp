// BenchChart: the GEMM ladder and false sharing drawn as bars (see bench_chart.h).
// See tests/app/tst_window.cpp (benchStepDrawsItsChart).
#include "charts/bench_chart.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "charts/chart_colors.h"

namespace paralab {

namespace {

QCPBars* makeBars(QCPAxis* x, QCPAxis* y, const QString& name, const QColor& color) {
  auto* b = new QCPBars(x, y);
  b->setName(name);
  b->setBrush(color);
  b->setPen(QPen(color.darker(130), 1));
  b->setWidth(0.6);
  return b;
}

// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... core SkylakeX" -> "OpenBLAS 0.3.21".
QString shortBlasName(const std::string& name) {
  const QStringList words = QString::fromStdString(name).split(' ', Qt::SkipEmptyParts);
  return words.mid(0, 2).join(' ');
}

QString value(double v) { return QString::number(v, 'f', v < 10 ? 1 : 0); }

// The batch sizes of a latency result along the x axis: those timed, then those a GPT sweep's
// time budget left untimed (they keep their place, without a bar), on either device.
std::vector<int> latencySlots(const BenchResult& r) {
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

}  // namespace

BenchChart::BenchChart(QWidget* parent) : Chart("benchmark", tr("Teaching benchmark"), parent) {
  setTabTitle(tr("Benchmark"));
  using namespace chartcolors;
  xAxis->grid()->setVisible(false);
  m_rungs = makeBars(xAxis, yAxis, tr("ParaLab rungs (measured)"), kBlue);
  m_vendor = makeBars(xAxis, yAxis, tr("OpenBLAS (measured)"), kOrange);
  m_ideal = makeBars(xAxis, yAxis, tr("lanes × the scalar rate (reference formula)"), kReference);
  m_ideal->setBrush(Qt::NoBrush);
  m_ideal->setPen(QPen(kReference, 1.4, Qt::DashLine));
  m_peak = addGraph();
  m_peak->setPen(QPen(kReference, 1.6, Qt::DashLine));
  m_group = new QCPBarsGroup(this);
  m_shared = makeBars(xAxis, yAxis, tr("counters in one cache line"), kRed);
  m_padded = makeBars(xAxis, yAxis, tr("padded: a line each"), kBlue);
  for (QCPBars* b : {m_shared, m_padded}) b->setWidth(0.38), b->setBarsGroup(m_group);
  auto* rates = new QCPBarsGroup(this);
  m_cpuRate = makeBars(xAxis, yAxis, tr("CPU samples/s (bars)"), kBlue);
  m_gpuRate = makeBars(xAxis, yAxis, tr("GPU samples/s (bars)"), kGreen);
  for (QCPBars* b : {m_cpuRate, m_gpuRate}) b->setWidth(0.38), b->setBarsGroup(rates);
  m_cpuLatency = addGraph(xAxis, yAxis2);
  m_cpuLatency->setName(tr("CPU ms per forward (line, right axis)"));
  m_cpuLatency->setPen(QPen(kPurple, 2));
  m_cpuLatency->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kPurple, kPurple, 6));
  m_gpuLatency = addGraph(xAxis, yAxis2);
  m_gpuLatency->setName(tr("GPU ms per forward (line, right axis)"));
  m_gpuLatency->setPen(QPen(kBrown, 2, Qt::DashLine));
  m_gpuLatency->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, kBrown, kBrown, 6));
  setLegendColumns(2);
  setPlaceholderText(
      tr("No benchmark yet: a lesson step with a benchmark (lesson 4) runs one here"));
  setToolTip(
      tr("<p>A teaching benchmark, measured on this machine when its lesson step ran.</p>"
         "<p>GEMM ladder: GFLOP/s = 2n³ / the median seconds per call of each kernel; the "
         "dashed line is a reference formula, the FMA peak of one core (measured by a probe of "
         "independent fused multiply-adds) × the threads.</p><p>SIMD width: the same probe on "
         "one core at 1, 4, 8 and 16 floats per instruction; each dashed outline is lanes × the "
         "scalar rate, a reference formula.</p><p>False sharing: wall time over "
         "the increments each thread did, in ns, with the threads' counters in one 64-byte "
         "cache line or each on its own line.</p>"));
  clear();
}

void BenchChart::clear() {
  m_result.reset();
  for (QCPBars* b : {m_rungs, m_vendor, m_ideal, m_shared, m_padded, m_cpuRate, m_gpuRate}) {
    b->data()->clear();
    b->removeFromLegend();
  }
  for (QCPGraph* g : {m_peak, m_cpuLatency, m_gpuLatency}) {
    g->data()->clear();
    g->removeFromLegend();
  }
  yAxis2->setVisible(false);
  yAxis->setScaleType(QCPAxis::stLinear);
  for (QCPItemText* t : m_labels) removeItem(t);
  m_labels.clear();
  m_notTimed = nullptr;  // one of m_labels
  setLabels({});
  setSubtitle(QString());
  setAxisLabel(xAxis, QString());
  setAxisLabel(yAxis, QString());
  m_tickNames.clear();
  xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  xAxis->setRange(0, 1);
  yAxis->setRange(0, 1);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

void BenchChart::addValueLabel(double x, double y, const QString& text, const QColor& color) {
  auto* label = new QCPItemText(this);
  label->position->setCoords(x, y);
  label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
  label->setPadding(QMargins(0, 0, 0, 3));
  label->setText(text);
  label->setColor(color);
  label->setFont(legend->font());
  label->setClipToAxisRect(false);
  m_labels << label;
}

void BenchChart::showResult(const BenchResult& result) {
  clear();
  m_result = result;
  if (result.ladder) showLadder(*result.ladder);
  if (result.simd) showSimd(*result.simd, result.repeats);
  if (result.falseSharing) showFalseSharing(*result.falseSharing);
  if (result.latencyCpu) showLatency(result);
  fitLegend();
  setPlaceholderVisible(pointCount() == 0);
  replot(rpQueuedReplot);
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
                  .arg(r.latencyModel, QString::fromStdString(r.latencyCpu->kernel))
                  .arg(r.latencyCpu->threads)
                  .arg(cores)
                  .arg(r.latencyGpu ? tr("GPU %1, the batch copied from host memory each forward")
                                          .arg(QString::fromStdString(r.latencyGpu->gpu))
                                    : tr("GPU half not run here (%1)").arg(r.gpuNotRun)) +
              untimed + (r.cancelled() ? tr(" · cancelled before the end") : QString()));
}

void BenchChart::setTickNames(const QStringList& names) {
  m_tickNames = names;
  fitTickNames();
}

void BenchChart::fitTickNames() {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetrics fm(xAxis->tickLabelFont());
  int widest = 0;
  for (const QString& t : m_tickNames) widest = std::max(widest, fm.horizontalAdvance(t));
  // The plot's width before the first layout: the chart less the axes' usual margins.
  const int plot = axisRect()->width() > 0 ? axisRect()->width() : width() - 120;
  const double perTick = m_tickNames.isEmpty() ? 1 : double(plot) / m_tickNames.size();
  const int every = std::max(1, int(std::ceil((widest + 10) / std::max(1.0, perTick))));
  for (int i = 0; i < m_tickNames.size(); ++i)
    ticker->addTick(i + 1, i % every == 0 ? m_tickNames[i] : QString());
  xAxis->setTicker(ticker);
  fitNotTimed(plot);
}

// "not timed" in the empty slots at the right end where it fits across them, on two lines
// where only "timed" fits; hidden where neither does (the subtitle says it anyway).
void BenchChart::fitNotTimed(int plot) {
  if (!m_notTimed || m_tickNames.isEmpty()) return;
  const double room = plot * (m_untimedSlots + 0.2) / (m_tickNames.size() + 0.2);
  const QFontMetrics fm(m_notTimed->font());
  const QString oneLine = tr("not timed"), twoLines = tr("not\ntimed");
  const auto fits = [&](const QString& t) {
    return fm.boundingRect(QRect(), Qt::TextDontClip, t).width() + 8 <= room;
  };
  m_notTimed->setText(fits(oneLine) ? oneLine : twoLines);
  m_notTimed->setVisible(fits(m_notTimed->text()));
}

void BenchChart::resizeEvent(QResizeEvent* event) {
  Chart::resizeEvent(event);
  if (m_tickNames.isEmpty()) return;
  fitTickNames();
  replot(rpQueuedReplot);
}

int BenchChart::pointCount() const {
  return m_rungs->dataCount() + m_vendor->dataCount() + m_shared->dataCount() +
         m_padded->dataCount() + m_cpuRate->dataCount() + m_gpuRate->dataCount();
}

QStringList BenchChart::tickLabels() const { return m_tickNames; }

void BenchChart::writeCsv(QTextStream& out) const {
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
