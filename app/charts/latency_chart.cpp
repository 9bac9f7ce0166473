// LatencyChart: the stacked breakdown of rank 0's step (see latency_chart.h). The parts are
// the engine's (engine/metrics/metrics.h, lessons/reference/metrics.md); the stack only adds.
// See tests/app/tst_charts.cpp (latencyStacksTheBreakdown).
#include "charts/latency_chart.h"

#include "charts/chart_colors.h"

#include <tuple>

namespace paralab {

LatencyChart::LatencyChart(QWidget* parent) : Chart("latency", tr("Step latency"), parent) {
  using namespace chartcolors;
  setAxisLabel(xAxis, tr("step"));
  useStepTicks(xAxis);
  setAxisLabel(yAxis, tr("time per step, rank 0 (ms)"), tr("time (ms)"));
  setNotAntialiasedElements(QCP::aeFills);
  yAxis->setRange(0, 10);
  // Stacked in this order, each band from the top of the one before: a band's thickness is
  // its part, its top the running sum.
  const StackBand* below = nullptr;
  for (auto [band, name, kind] :
       {std::tuple{&m_compute, tr("compute (data + forward + backward)"), SpanKind::Forward},
        {&m_optimizer, tr("optimizer"), SpanKind::Optimizer},
        {&m_comm, tr("communication (overlap counted in full)"), SpanKind::Comm},
        {&m_idle, tr("idle (no span)"), SpanKind::Idle}}) {
    *band = new StackBand(xAxis, yAxis, below);
    (*band)->setName(name);
    QColor fill = spanColor(kind);
    fill.setAlpha(255);
    (*band)->setBrush(fill);
    below = *band;
  }
  m_wall = addSeries(tr("step wall time"), "step_ms", yAxis, kRed, 1.6);
  setLegendColumns(3);
  setToolTip(
      tr("<p>Rank 0's step, measured: compute = data + forward + backward spans, then "
         "the optimizer, communication and idle (step time covered by no span) stacked "
         "on top.</p><p>Communication that overlaps backward (bucketed all-reduce) is "
         "drawn in full under communication, so the stack can rise above the step's "
         "wall time (red line) by the overlapped time.</p>"
         "<p>Definitions: lessons/reference/metrics.md.</p>"));
  finishUpdate();
}

void LatencyChart::showHistory(const MetricHistory& history) {
  Parts p;
  for (const auto& r : history.rows()) {
    p.step.push_back(r.step);
    p.compute.push_back(r.dataMs + r.forwardMs + r.backwardMs);
    p.optimizer.push_back(r.optimizerMs);
    p.comm.push_back(r.commMs);
    p.idle.push_back(r.idleMs);
    p.wall.push_back(r.stepMs);
  }
  m_parts = p;
  // The tops of the bands: running sums of the parts.
  QVector<double> top = p.compute;
  double maxTop = 0;
  m_compute->setData(p.step, top);
  for (auto [band, part] :
       {std::pair{m_optimizer, &p.optimizer}, {m_comm, &p.comm}, {m_idle, &p.idle}}) {
    for (int i = 0; i < top.size(); ++i) top[i] += (*part)[i];
    band->setData(p.step, top);
  }
  for (int i = 0; i < top.size(); ++i) maxTop = std::max({maxTop, top[i], p.wall[i]});
  m_wall->setData(p.step, p.wall, true);
  m_steps = history.steps();
  showChanges(history);
  yAxis->setRange(0, maxTop > 0 ? maxTop * 1.1 : 10);
  finishUpdate();
}

void LatencyChart::writeCsv(QTextStream& out) const {
  out << "step,compute_ms,optimizer_ms,comm_ms,idle_ms,step_ms\n";
  setCsvError(m_steps.forEach([&](const MetricHistory::Row& r, const StepMetrics&) {
    out << qlonglong(r.step);
    for (double v :
         {r.dataMs + r.forwardMs + r.backwardMs, r.optimizerMs, r.commMs, r.idleMs, r.stepMs})
      out << ',' << csvNumber(v);
    out << '\n';
  }));
}

}  // namespace paralab
