// BenchChart's projected kinds: CPU against GPU layer by layer (the roofline: this CPU measured
// beside each GPU projected) and one GPT's layouts on a cluster, stacked by where the step's time
// goes. What every kind shares is in bench_chart.cpp. See tests/app/tst_charts_bench.cpp
// (benchChartDrawsTheRoofline, benchChartDrawsLayouts).
#include <algorithm>

#include "charts/bench_chart.h"
#include "charts/chart_colors.h"

namespace paralab {

// [SECTION] CPU against GPU, layer by layer (roofline).

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
                  .arg(duration(cpuStep), QString::fromStdString(r.gpus[0].title).remove("NVIDIA "),
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
    m_gpuLayers->setName(
        tr("measured on %1 (fp32, cuBLAS)").arg(QString::fromStdString(r.measuredGpu)));
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
                 .arg(pt.tpNodes == 1 ? tr("TP inside a node")
                                      : tr("TP across %1 nodes").arg(pt.tpNodes));
    const double parts[4] = {s.compute, s.tpComm, s.ppBubble + s.ppComm,
                             s.total() - s.compute - s.tpComm - s.ppBubble - s.ppComm};
    for (int i = 0; i < 4; ++i) m_split[i]->addData(x, parts[i]);
    top = std::max(top, s.total());
    addValueLabel(
        x, s.total(),
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
              links.join(" · ") + (refused.isEmpty() ? QString() : " · " + refused.join(" · ")));
}

}  // namespace paralab
