// BenchChart: each teaching benchmark drawn as bars (see bench_chart.h).
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
  m_cpuLayers = makeBars(xAxis, yAxis, tr("measured on this CPU"), kBlue);
  m_gpuLayers = makeBars(xAxis, yAxis, tr("measured on the GPU"), kPurple);
  const QColor gpuColors[2] = {kGreen, kOrange};
  for (int g = 0; g < 2; ++g)
    for (int bound = 0; bound < 2; ++bound) {
      QCPBars* b = makeBars(xAxis, yAxis, QString(), gpuColors[g]);
      // Memory-bound: hatched; compute-bound: solid.
      if (bound == 0) b->setBrush(QBrush(gpuColors[g].darker(110), Qt::BDiagPattern));
      m_projected[g][bound] = b;
    }
  // A legend key, no data: how the GPU bars say what bounds them.
  m_boundKey = makeBars(xAxis, yAxis, tr("hatched: memory-bound, solid: compute-bound (roofline)"),
                        kGrey);
  m_boundKey->setBrush(QBrush(kGrey, Qt::BDiagPattern));
  const QColor splitColors[4] = {kBlue, kRed, kGrey, kPurple};
  const QString splitNames[4] = {tr("compute (projected)"), tr("TP communication (projected)"),
                                 tr("pipeline bubble and sends (projected)"),
                                 tr("DP communication, optimizer, other (projected)")};
  for (int i = 0; i < 4; ++i) {
    m_split[i] = makeBars(xAxis, yAxis, splitNames[i], splitColors[i]);
    if (i > 0) m_split[i]->moveAbove(m_split[i - 1]);
  }
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
  for (QCPBars* b : {m_rungs, m_vendor, m_ideal, m_shared, m_padded, m_cpuRate, m_gpuRate,
                     m_cpuLayers, m_gpuLayers, m_projected[0][0], m_projected[0][1],
                     m_projected[1][0], m_projected[1][1], m_split[0], m_split[1], m_split[2],
                     m_split[3], m_boundKey}) {
    b->data()->clear();
    b->removeFromLegend();
    b->setBaseValue(0);
  }
  for (QCPAbstractItem* i : m_items) removeItem(i);
  m_items.clear();
  m_groupNotes.clear();  // their items are among m_labels
  yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  yAxis->setNumberFormat("gbd");  // QCustomPlot's defaults, as the other kinds draw
  yAxis->setNumberPrecision(6);
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
  if (result.roofline) showRoofline(*result.roofline);
  if (result.layouts) showLayouts(*result.layouts);
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

// [SECTION] CPU against GPU, layer by layer (roofline).

// A text at plot x `x`, `yRatio` of the way down the axis rect (0 its top edge).
QCPItemText* BenchChart::addNote(double x, double yRatio, const QString& text,
                                 const QColor& color) {
  auto* t = new QCPItemText(this);
  t->position->setTypeX(QCPItemPosition::ptPlotCoords);
  t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  t->position->setCoords(x, yRatio);
  t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  t->setTextAlignment(Qt::AlignHCenter);
  t->setText(text);
  t->setColor(color);
  t->setFont(legend->font());
  t->setClipToAxisRect(false);
  m_labels << t;
  return t;
}

namespace {
// "0.52 µs", "38.1 ms": a duration in the unit that keeps it readable.
QString duration(double seconds) {
  const double us = seconds * 1e6;
  if (us < 1) return QString::number(us * 1e3, 'f', us < 0.01 ? 1 : 0) + " ns";
  if (us < 1000) return QString::number(us, 'g', 3) + " µs";
  if (us < 1e6) return QString::number(us / 1e3, 'g', 3) + " ms";
  return QString::number(us / 1e6, 'g', 3) + " s";
}
// The tick name of each MLP layer (teach/roofline.h keys).
QString shortLayer(const std::string& key) {
  if (key == "input") return QObject::tr("input");
  if (key == "layernorm") return QObject::tr("LN");
  if (key == "gelu") return QObject::tr("GELU");
  if (key == "residual") return QObject::tr("add");
  return QString::fromStdString(key);
}
}  // namespace

// Per layer, forward + backward, log axis in µs: at each batch the MLP's layers then the whole
// step (the layers, a block's L times), bars side by side: this CPU measured, each GPU projected
// (solid compute-bound, hatched memory-bound), a GPU measured where one answered.
void BenchChart::showRoofline(const teach::RooflineResult& r) {
  using namespace chartcolors;
  const int gpus = std::min<int>(2, int(r.gpus.size()));
  const bool measuredGpu = !r.measuredGpu.empty();
  const int bars = 1 + gpus + (measuredGpu ? 1 : 0);
  const double width = 0.84 / bars;
  const auto offset = [&](int i) { return (i - (bars - 1) / 2.0) * width; };
  for (QCPBars* b : {m_cpuLayers, m_gpuLayers, m_projected[0][0], m_projected[0][1],
                     m_projected[1][0], m_projected[1][1]})
    b->setWidth(width * 0.92);
  QStringList names;
  double lo = 1e300, hi = 0;
  const auto add = [&](QCPBars* b, double x, double seconds) {
    if (seconds <= 0) return;
    b->addData(x, seconds * 1e6);
    lo = std::min(lo, seconds * 1e6), hi = std::max(hi, seconds * 1e6);
  };
  double x = 0;
  for (size_t bi = 0; bi < r.batches.size(); ++bi) {
    const teach::RooflineBatch& b = r.batches[bi];
    if (bi > 0) {  // a gap slot and a dashed line between the batches
      names << QString();
      ++x;
      auto* line = new QCPItemStraightLine(this);
      line->point1->setCoords(x, 1);
      line->point2->setCoords(x, 10);
      line->setPen(QPen(kReference, 1, Qt::DashLine));
      m_items << line;
    }
    const double first = x + 1;
    for (const teach::RooflineLayer& l : b.layers) {
      ++x;
      names << shortLayer(l.key);
      add(m_cpuLayers, x + offset(0), l.cpuSeconds);
      for (int g = 0; g < gpus && g < int(l.projected.size()); ++g)
        add(m_projected[g][l.projected[g].computeBound ? 1 : 0], x + offset(1 + g),
            l.projected[g].seconds);
      if (measuredGpu) add(m_gpuLayers, x + offset(1 + gpus), l.gpuSeconds);
    }
    ++x;
    names << tr("step");
    const double cpuStep = b.cpuStepSeconds();
    add(m_cpuLayers, x + offset(0), cpuStep);
    double projectedStep = 0;
    for (int g = 0; g < gpus; ++g) {
      // The step's bound: that of where most of its projected time goes.
      double computeS = 0, total = 0;
      for (const teach::RooflineLayer& l : b.layers) {
        total += l.count * l.projected[g].seconds;
        if (l.projected[g].computeBound) computeS += l.count * l.projected[g].seconds;
      }
      add(m_projected[g][computeS > 0.5 * total ? 1 : 0], x + offset(1 + g), total);
      if (g == 0) projectedStep = total;
    }
    if (measuredGpu) add(m_gpuLayers, x + offset(1 + gpus), b.gpuStepSeconds());
    // The batch above its group, with the step's figures.
    QString note = tr("batch %L1").arg(b.batch);
    if (cpuStep > 0 && projectedStep > 0)
      note += tr("\nstep: this CPU %1\n%2 %3 (projected)")
                  .arg(duration(cpuStep),
                       QString::fromStdString(r.gpus[0].title).remove("NVIDIA "),
                       duration(projectedStep));
    m_groupNotes << GroupNote{addNote((first + x) / 2, 0.01, note, Qt::black), note,
                              tr("batch %L1").arg(b.batch)};
    m_groupSlots = int(x - first + 1);
  }
  setTickNames(names);
  xAxis->setRange(0.4, x + 0.6);
  yAxis->setScaleType(QCPAxis::stLogarithmic);
  yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  yAxis->setNumberFormat("gbc");
  yAxis->setNumberPrecision(0);
  if (hi > 0) {
    // Room above the tallest bar for the batch names and the step's figures.
    yAxis->setRange(lo / 3, hi * 3000);
    for (QCPBars* b : {m_cpuLayers, m_gpuLayers, m_projected[0][0], m_projected[0][1],
                       m_projected[1][0], m_projected[1][1]})
      b->setBaseValue(lo / 3);
  }
  for (QCPAbstractItem* i : m_items)
    if (auto* line = qobject_cast<QCPItemStraightLine*>(i))
      line->point1->setCoords(line->point1->coords().x(), lo / 3),
          line->point2->setCoords(line->point1->coords().x(), hi * 3000);
  m_cpuLayers->setName(tr("measured on this CPU (fp32, %1 GEMM, %2)")
                           .arg(QString::fromStdString(r.kernel),
                                r.threads == 1 ? tr("1 thread") : tr("%1 threads").arg(r.threads)));
  m_cpuLayers->addToLegend();
  const QString precision = QString::fromStdString(r.precision);
  for (int g = 0; g < gpus; ++g) {
    const QString title = QString::fromStdString(r.gpus[size_t(g)].title);
    m_projected[g][1]->setName(tr("projected for %1 (%2)").arg(title, precision));
    m_projected[g][0]->setName(tr("projected for %1 (%2), memory-bound").arg(title, precision));
    m_projected[g][1]->addToLegend();
  }
  m_boundKey->addToLegend();
  if (measuredGpu) {
    m_gpuLayers->setName(tr("measured on %1 (fp32, cuBLAS)").arg(
        QString::fromStdString(r.measuredGpu)));
    m_gpuLayers->addToLegend();
  }
  setAxisLabel(xAxis,
               tr("layer of the MLP (LN LayerNorm, add the residual add; step: all %1 blocks "
                  "and the ends)")
                   .arg(r.layers),
               tr("layer"));
  setAxisLabel(yAxis, tr("forward + backward time per layer (µs, log)"), tr("µs (log)"));
  QStringList ridges;
  for (int g = 0; g < gpus; ++g)
    ridges << tr("%1 %2")
                  .arg(QString::fromStdString(r.gpus[size_t(g)].title).remove("NVIDIA "))
                  .arg(r.gpus[size_t(g)].ridge, 0, 'f', 1);
  setLabels({tr("projected: each GPU's time per layer from engine/projection/compute_model.h, "
                "the larger of FLOPs at its measured matmul rate and bytes at 90% of its HBM "
                "bandwidth; a GEMM of fewer 256 x 128 tiles than SMs leaves SMs idle; kernel "
                "launches left out"),
             tr("measured: this CPU, the engine's kernels, median per layer")});
  setSubtitle(
      tr("CPU against GPU, layer by layer: MLP H=%1, L=%2, %L3 parameters · this CPU measured "
         "(median) · GPUs projected by the roofline, ridge %4 FLOP/byte · a projection leaves "
         "out kernel launches (µs each) · ")
          .arg(r.hidden)
          .arg(r.layers)
          .arg(r.parameters)
          .arg(ridges.join(tr(", "))) +
      (measuredGpu ? tr("also measured on %1").arg(QString::fromStdString(r.measuredGpu))
                   : tr("no GPU here (%1): nothing ran on a GPU")
                         .arg(QString::fromStdString(r.gpuNotRun))) +
      (r.cancelled ? tr(" · cancelled before the end") : QString()));
}

// [SECTION] Layouts of one model projected on a cluster.

// One GPT's projected step at each tensor-parallel degree, stacked by where the time goes, with
// TP communication's share above each bar.
void BenchChart::showLayouts(const teach::LayoutProjection& p) {
  using namespace chartcolors;
  QStringList names, refused, links;
  double top = 0;
  int x = 0;
  for (const teach::LayoutPoint& pt : p.points) {
    ++x;
    if (!pt.projected) {
      names << tr("tp %1").arg(pt.tp);
      refused << tr("tp %1: %2").arg(pt.tp).arg(QString::fromStdString(pt.refused));
      continue;
    }
    const projection::Projection& q = pt.projection;
    const projection::StepSplit& s = q.split;
    names << tr("tp %1 × pp %2 × dp %3\n%4")
                 .arg(pt.tp)
                 .arg(q.layout.pp)
                 .arg(q.layout.dp)
                 .arg(pt.tpNodes == 1 ? tr("TP inside a node") : tr("TP across %1 nodes").arg(pt.tpNodes));
    const double parts[4] = {s.compute, s.tpComm, s.ppBubble + s.ppComm,
                             s.total() - s.compute - s.tpComm - s.ppBubble - s.ppComm};
    for (int i = 0; i < 4; ++i) m_split[i]->addData(x, parts[i]);
    top = std::max(top, s.total());
    addValueLabel(x, s.total(),
                  tr("%1 s a step\nTP comm %2%").arg(s.total(), 0, 'f', 2).arg(100 * pt.tpShare(), 0, 'f', 1),
                  kRed.darker(120));
    links << tr("tp %1 over %2, %3 GB/s per GPU, one all-reduce of a micro-batch %4")
                 .arg(pt.tp)
                 .arg(QString::fromStdString(q.tpLink.title))
                 .arg(q.tpLink.bytesPerS / 1e9, 0, 'f', 0)
                 .arg(duration(pt.tpAllReduceSeconds));
  }
  for (QCPBars* b : m_split) b->setWidth(0.5), b->addToLegend();
  setTickNames(names);
  xAxis->setRange(0.4, x + 0.6);
  yAxis->setRange(0, std::max(1e-3, top) * 1.3);
  setAxisLabel(xAxis, tr("layout (tensor × pipeline × data parallel)"), tr("layout"));
  setAxisLabel(yAxis, tr("seconds per step (projected)"), tr("s per step"));
  const projection::Cluster& c = p.cluster;
  setLabels(links + refused);
  setSubtitle(tr("Projected, not measured: %1 on %2 × %3, %4 per node, nodes joined by %5 · "
                 "global batch %6 sequences · ")
                  .arg(QString::fromStdString(p.model.describe()))
                  .arg(c.gpus)
                  .arg(QString::fromStdString(c.gpu.title))
                  .arg(c.gpusPerNode)
                  .arg(QString::fromStdString(projection::nodeLinkName(c.nodeLink)))
                  .arg(p.points.empty() || !p.points[0].projected
                           ? 0
                           : p.points[0].projection.layout.globalBatch) +
              links.join(" · ") +
              (refused.isEmpty() ? QString() : " · " + refused.join(" · ")));
}

QStringList BenchChart::plotTexts() const {
  QStringList out;
  for (const QCPItemText* t : m_labels)
    if (t->visible()) out << t->text();
  return out;
}

void BenchChart::setTickNames(const QStringList& names) {
  m_tickNames = names;
  fitTickNames();
}

void BenchChart::fitTickNames() {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetrics fm(xAxis->tickLabelFont());
  int widest = 0;
  for (const QString& t : m_tickNames)
    for (const QString& line : t.split('\n'))  // a name may take two lines
      widest = std::max(widest, fm.horizontalAdvance(line));
  // The plot's width before the first layout: the chart less the axes' usual margins.
  const int plot = axisRect()->width() > 0 ? axisRect()->width() : width() - 120;
  const double perTick = m_tickNames.isEmpty() ? 1 : double(plot) / m_tickNames.size();
  const int every = std::max(1, int(std::ceil((widest + 10) / std::max(1.0, perTick))));
  for (int i = 0; i < m_tickNames.size(); ++i)
    ticker->addTick(i + 1, i % every == 0 ? m_tickNames[i] : QString());
  xAxis->setTicker(ticker);
  fitNotTimed(plot);
  fitNotes(plot);
}

// A group's note in full where its lines fit over the group's slots, else the batch alone.
void BenchChart::fitNotes(int plot) {
  if (m_groupNotes.isEmpty() || m_tickNames.isEmpty()) return;
  const double room = double(plot) * m_groupSlots / (m_tickNames.size() + 0.2);
  for (GroupNote& n : m_groupNotes) {
    const QFontMetrics fm(n.item->font());
    const int wide = fm.boundingRect(QRect(), Qt::TextDontClip, n.full).width();
    n.item->setText(wide + 12 <= room ? n.full : n.brief);
  }
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
         m_padded->dataCount() + m_cpuRate->dataCount() + m_gpuRate->dataCount() +
         m_cpuLayers->dataCount() + m_split[0]->dataCount();
}

QStringList BenchChart::tickLabels() const { return m_tickNames; }

void BenchChart::writeCsv(QTextStream& out) const {
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
          << csvNumber(q.stepSeconds) << ',' << csvNumber(s.compute) << ','
          << csvNumber(s.tpComm) << ',' << csvNumber(s.ppBubble) << ',' << csvNumber(s.ppComm)
          << ',' << csvNumber(s.dpCommExposed) << ',' << csvNumber(s.optimizer) << ','
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
