// ProjectionChart: memory per GPU, the step split and a layout sweep, projected (see
// projection_chart.h). See tests/app/tst_window_projection.cpp.
#include "charts/projection_chart.h"

#include <algorithm>
#include <cmath>

#include "charts/chart_colors.h"

namespace paralab {

namespace {

using projection::Projection;
using projection::StepSplit;

constexpr double kGB = 1e9;  // the GPUs' datasheets count memory in GB

struct Part {
  const char* name;  // legend
  const char* column;
  QColor color;
};

// Memory categories in the engine's colours (chart_colors.h).
const Part kMemoryParts[] = {
    {"parameters", "params_GB", chartcolors::kBlue},
    {"gradients", "grads_GB", chartcolors::kCyan},
    {"optimizer state", "optimizer_GB", chartcolors::kPurple},
    {"activations", "activations_GB", chartcolors::kGreen},
    {"workspace", "workspace_GB", chartcolors::kGrey},
};
std::vector<double> memoryValues(const projection::MemoryPerGpu& m) {
  return {m.params / kGB, m.grads / kGB, m.optimizer / kGB, m.activations / kGB, m.workspace / kGB};
}

// Where a step goes; communication in the communication hues, the bubble idle grey.
const Part kStepParts[] = {
    {"compute", "compute_ms", chartcolors::kBlue},
    {"TP comm", "tp_comm_ms", chartcolors::kOrange},
    {"PP bubble", "pp_bubble_ms", chartcolors::kGrey},
    {"exposed DP comm", "dp_comm_exposed_ms", chartcolors::kRed},
    {"other", "other_ms", chartcolors::kOlive},  // PP sends, CP/EP exchanges, the optimizer, the batch
};
std::vector<double> stepValues(const StepSplit& s) {
  return {s.compute * 1e3, s.tpComm * 1e3, s.ppBubble * 1e3, s.dpCommExposed * 1e3,
          (s.ppComm + s.cpComm + s.epComm + s.optimizer + s.data) * 1e3};
}

QString num(double v) { return QString::number(v, 'f', v < 10 ? 2 : 1); }

QString gpuTitle(const Projection& p) {
  return QString::fromStdString(p.cluster.gpu.title.empty() ? p.cluster.gpu.name
                                                            : p.cluster.gpu.title);
}

}  // namespace

ProjectionChart::ProjectionChart(Kind kind, QWidget* parent)
    : Chart(kind == Kind::Memory ? "projection-memory"
            : kind == Kind::Step ? "projection-step"
                                 : "projection-sweep",
            kind == Kind::Memory ? tr("Memory per GPU (projected)")
            : kind == Kind::Step ? tr("Step time split (projected)")
                                 : tr("Layout sweep (projected)"),
            parent),
      m_kind(kind) {
  setTabTitle(kind == Kind::Memory ? tr("Memory") : kind == Kind::Step ? tr("Step") : tr("Sweep"));
  const bool horizontal = kind != Kind::Sweep;
  QCPAxis* key = horizontal ? yAxis : xAxis;
  QCPAxis* value = horizontal ? xAxis : yAxis;
  key->grid()->setVisible(false);
  const auto parts = kind == Kind::Memory
                         ? std::vector<Part>(std::begin(kMemoryParts), std::end(kMemoryParts))
                         : std::vector<Part>(std::begin(kStepParts), std::end(kStepParts));
  for (const Part& part : parts) {
    QCPBars* b = addBars(key, value, tr(part.name), part.color);
    if (!m_bars.isEmpty()) b->moveAbove(m_bars.back());
    m_bars.append(b);
  }
  if (kind == Kind::Memory) {
    m_capacity = new QCPItemStraightLine(this);
    m_capacity->setPen(QPen(chartcolors::kReference, 1.6, Qt::DashLine));
    m_capacity->setVisible(false);
  }
  if (kind == Kind::Memory) {
    m_overRect = new QCPItemRect(this);
    QColor red = chartcolors::kRed;
    red.setAlpha(45);
    m_overRect->setBrush(red);
    m_overRect->setPen(QPen(chartcolors::kRed, 1.4));
    m_overRect->setVisible(false);
    m_overNote = new QCPItemText(this);
    m_overNote->setColor(chartcolors::kRed);
    QFont bold = font();
    bold.setBold(true);
    m_overNote->setFont(bold);
    m_overNote->setVisible(false);
    setAxisLabel(xAxis, tr("memory per GPU (GB, projected)"), tr("GB (projected)"));
    setToolTip(
        tr("<p>Projected, not measured: what one GPU of the stage that needs the most "
           "holds, by category, against the GPU's memory (dashed). Model states follow "
           "ZeRO (Rajbhandari et al. 2020); activations Korthikanti et al. 2022 with "
           "recomputation.</p>"));
  } else if (kind == Kind::Step) {
    setAxisLabel(xAxis, tr("time of one step (ms, projected)"), tr("ms (projected)"));
    setToolTip(
        tr("<p>Projected, not measured: one step of the busiest pipeline stage, by where "
           "its time goes. The parts add up to the step time.</p>"));
  } else {
    yAxis2->setVisible(true);
    m_memLine = addGraph(xAxis, yAxis2);
    m_memLine->setName(tr("memory per GPU (right axis; red: does not fit)"));
    m_memLine->setPen(QPen(chartcolors::kBrown, 2));
    m_memLine->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDisc, chartcolors::kBrown, chartcolors::kBrown, 7));
    m_memOver = addGraph(xAxis, yAxis2);
    m_memOver->setName(tr("does not fit"));
    m_memOver->setLineStyle(QCPGraph::lsNone);
    m_memOver->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDisc, chartcolors::kRed, chartcolors::kRed, 9));
    m_memOver->removeFromLegend();  // the memory line's entry says what red is
    m_capLine = addGraph(xAxis, yAxis2);
    m_capLine->setName(tr("GPU memory (dashed)"));
    m_capLine->setPen(QPen(chartcolors::kReference, 1.6, Qt::DashLine));
    setAxisLabel(yAxis, tr("step time (ms, projected)"), tr("ms (projected)"));
    setAxisLabel(yAxis2, tr("memory per GPU (GB, projected)"), tr("GB (projected)"));
    setLegendColumns(4);
    setToolTip(
        tr("<p>Projected, not measured: one layout axis swept, the rest kept. Bars: the "
           "step time split (stacked); line: memory per GPU against the GPU's (dashed, "
           "right axis), red where it does not fit; over each bar its MFU. A value the "
           "projection refuses keeps its place, marked refused.</p>"));
  }
  if (kind != Kind::Sweep) {
    legend->setVisible(true);
    setLegendColumns(5);
  }
  setLabels({tr("projected: engine/projection (not measured)"),
             tr("validated by: %1").arg(Projection::kValidatedBy)});
  clear();
}

QCPBars* ProjectionChart::addBars(QCPAxis* key, QCPAxis* value, const QString& name,
                                  const QColor& color) {
  auto* b = new QCPBars(key, value);
  b->setName(name);
  b->setBrush(color);
  b->setPen(QPen(color.darker(130), 1));
  b->setWidth(m_kind == Kind::Sweep ? 0.6 : 0.4);
  b->setStackingGap(0);
  return b;
}

QCPItemText* ProjectionChart::addText(const QString& text, bool neutral) {
  auto* t = new QCPItemText(this);
  t->setText(text);
  t->setClipToAxisRect(false);
  t->setColor(palette().color(QPalette::WindowText));
  m_notes.append(t);
  if (neutral) m_neutralNotes.append(t);
  return t;
}

void ProjectionChart::removeNotes() {
  for (QCPItemText* t : m_notes) removeItem(t);
  m_notes.clear();
  m_neutralNotes.clear();
}

void ProjectionChart::applyLook(const QPalette& pal) {
  Chart::applyLook(pal);
  for (QCPItemText* t : m_neutralNotes) t->setColor(pal.color(QPalette::WindowText));
}

void ProjectionChart::clear(const QString& why) {
  m_projection.reset();
  m_points.clear();
  m_overGB = 0;
  removeNotes();
  for (QCPBars* b : m_bars) b->data()->clear();
  if (m_memLine) m_memLine->data()->clear(), m_memOver->data()->clear(), m_capLine->data()->clear();
  if (m_capacity) m_capacity->setVisible(false);
  if (m_overRect) m_overRect->setVisible(false), m_overNote->setVisible(false);
  setPlaceholderText(why.isEmpty() ? tr("Nothing projected yet: pick a GPU, a count and a model")
                                   : why);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}

void ProjectionChart::showProjection(const Projection& p) {
  if (m_kind == Kind::Sweep) return;
  clear();
  m_projection = p;
  const std::vector<double> values =
      m_kind == Kind::Memory ? memoryValues(p.memory) : stepValues(p.split);
  for (int i = 0; i < m_bars.size(); ++i) m_bars[i]->setData({1.0}, {values[size_t(i)]});
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->addTick(1, m_kind == Kind::Memory ? tr("per GPU") : tr("step"));
  yAxis->setTicker(ticker);
  yAxis->setRange(0.4, 1.6);
  const double total = m_kind == Kind::Memory ? p.memory.total() / kGB : p.stepSeconds * 1e3;
  const QString gpus = tr("%1 × %2").arg(p.cluster.gpus).arg(gpuTitle(p));
  if (m_kind == Kind::Memory) {
    const double cap = p.memoryCapacity / kGB;
    m_overGB = std::max(0.0, total - cap);
    xAxis->setRange(0, std::max(total, cap) * 1.12);
    m_capacity->point1->setCoords(cap, 0);
    m_capacity->point2->setCoords(cap, 1);
    m_capacity->setVisible(true);
    QCPItemText* capText = addText(tr("%1: %2 GB").arg(gpuTitle(p), num(cap)));
    // Above the bar (which spans 0.8 to 1.2), the notes below it.
    capText->position->setCoords(cap, 1.24);
    // Left of the dashed line, or right of it where the line stands near the axis.
    const bool leftOfLine = cap > xAxis->range().upper * 0.35;
    capText->setPositionAlignment((leftOfLine ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
    capText->setPadding(leftOfLine ? QMargins(0, 0, 6, 0) : QMargins(6, 0, 0, 0));
    if (m_overGB > 0) {
      m_overRect->topLeft->setCoords(cap, 1.23);
      m_overRect->bottomRight->setCoords(total, 0.77);
      m_overRect->setVisible(true);
      m_overNote->setText(tr("does not fit: %1 GB over").arg(num(m_overGB)));
      m_overNote->position->setCoords(total, 0.76);
      m_overNote->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
      m_overNote->setVisible(true);
      for (QCPBars* b : m_bars) b->setPen(QPen(chartcolors::kRed, 1.6));
    } else {
      for (int i = 0; i < m_bars.size(); ++i)
        m_bars[i]->setPen(QPen(kMemoryParts[i].color.darker(130), 1));
      QCPItemText* fits = addText(tr("fits: %1 of %2 GB").arg(num(total), num(cap)));
      fits->position->setCoords(total, 0.76);
      fits->setPositionAlignment((total > cap * 0.6 ? Qt::AlignRight : Qt::AlignLeft) |
                                 Qt::AlignTop);
    }
    setSubtitle(tr("Projected for %1 · %2").arg(gpus, QString::fromStdString(p.model.describe())));
  } else {
    xAxis->setRange(0, total * 1.12);
    QCPItemText* t = addText(tr("%1 ms").arg(num(total)));
    t->position->setCoords(total, 1);
    t->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    t->setPadding(QMargins(4, 0, 0, 0));
    setSubtitle(tr("Projected for %1 · MFU %2% · %3 %4")
                    .arg(gpus)
                    .arg(p.mfu * 100, 0, 'f', 1)
                    .arg(QLocale().toString(p.throughput(), 'f', 0), p.throughputUnit()));
  }
  setPlaceholderVisible(false);
  fitLegend();
  replot(rpQueuedReplot);
}

void ProjectionChart::showSweep(const std::vector<projection::SweepPoint>& points,
                                const QString& axis) {
  if (m_kind != Kind::Sweep) return;
  clear();
  m_points = points;
  m_axis = axis;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double maxMs = 0, maxGB = 0, cap = 0;
  QVector<double> memKeys, memValues, overKeys, overValues;
  std::vector<QVector<double>> values(size_t(m_bars.size()));
  QVector<double> keys;
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = double(i + 1);
    ticker->addTick(x, tr("%1 %2").arg(axis).arg(points[i].value));
    if (!points[i].projection) continue;
    const Projection& p = *points[i].projection;
    keys.append(x);
    const std::vector<double> v = stepValues(p.split);
    for (size_t k = 0; k < v.size(); ++k) values[k].append(v[k]);
    maxMs = std::max(maxMs, p.stepSeconds * 1e3);
    const double gb = p.memory.total() / kGB;
    cap = p.memoryCapacity / kGB;
    maxGB = std::max(maxGB, gb);
    memKeys.append(x), memValues.append(gb);
    if (!p.fits()) overKeys.append(x), overValues.append(gb);
  }
  for (int k = 0; k < m_bars.size(); ++k) m_bars[k]->setData(keys, values[size_t(k)]);
  m_memLine->setData(memKeys, memValues);
  m_memOver->setData(overKeys, overValues);
  xAxis->setTicker(ticker);
  xAxis->setRange(0.4, double(points.size()) + 0.6);
  yAxis->setRange(0, std::max(maxMs, 1e-9) * 1.22);
  yAxis2->setRange(0, std::max(maxGB, cap) * 1.15);
  if (cap > 0) {
    m_capLine->setData({0.4, double(points.size()) + 0.6}, {cap, cap});
    m_capLine->setName(tr("GPU memory, %1 GB (dashed)").arg(num(cap)));
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = double(i + 1);
    if (!points[i].projection) {
      QCPItemText* t = addText(tr("refused"));
      t->position->setCoords(x, maxMs * 0.08);
      t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
      t->setColor(chartcolors::kRed);
      m_neutralNotes.removeOne(t);
      continue;
    }
    const Projection& p = *points[i].projection;
    // MFU in the foot of its bar, clear of the memory line above.
    QCPItemText* t = addText(tr("MFU %1%").arg(p.mfu * 100, 0, 'f', 0), false);
    t->position->setCoords(x, 0);
    t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    t->setPadding(QMargins(0, 0, 0, 5));
    t->setColor(Qt::white);
    QFont bold = font();
    bold.setBold(true);
    t->setFont(bold);
  }
  if (!points.empty()) {
    if (const auto& first =
            std::find_if(points.begin(), points.end(), [](const auto& p) { return p.projection; });
        first != points.end())
      setSubtitle(tr("Projected for %1 × %2 · %3 · the rest of the layout kept")
                      .arg(first->projection->cluster.gpus)
                      .arg(gpuTitle(*first->projection))
                      .arg(QString::fromStdString(first->projection->model.name.empty()
                                                      ? first->projection->model.describe()
                                                      : first->projection->model.name)));
  }
  setPlaceholderVisible(keys.isEmpty());
  if (keys.isEmpty()) setPlaceholderText(tr("Every value of %1 was refused").arg(axis));
  fitLegend();
  replot(rpQueuedReplot);
}

int ProjectionChart::pointCount() const {
  if (m_kind == Kind::Sweep) return int(m_points.size());
  return m_projection ? m_bars.size() : 0;
}

void ProjectionChart::writeCsv(QTextStream& out) const {
  if (m_kind == Kind::Memory) {
    out << "category,GB_per_gpu_projected\n";
    if (!m_projection) return;
    const std::vector<double> v = memoryValues(m_projection->memory);
    for (size_t i = 0; i < v.size(); ++i)
      out << QString(kMemoryParts[i].column).chopped(3) << ',' << csvNumber(v[i]) << '\n';
    out << "total," << csvNumber(m_projection->memory.total() / kGB) << '\n';
    out << "gpu_capacity," << csvNumber(m_projection->memoryCapacity / kGB) << '\n';
    out << "over," << csvNumber(m_overGB) << '\n';
    return;
  }
  if (m_kind == Kind::Step) {
    out << "part,ms_projected\n";
    if (!m_projection) return;
    const std::vector<double> v = stepValues(m_projection->split);
    for (size_t i = 0; i < v.size(); ++i)
      out << QString(kStepParts[i].column).chopped(3) << ',' << csvNumber(v[i]) << '\n';
    out << "step," << csvNumber(m_projection->stepSeconds * 1e3) << '\n';
    return;
  }
  out << (m_axis.isEmpty() ? QString("value") : m_axis)
      << ",step_ms,compute_ms,tp_comm_ms,pp_bubble_ms,dp_comm_exposed_ms,other_ms,"
         "mem_per_gpu_GB,gpu_capacity_GB,fits,mfu,tokens_per_s,tflops_per_gpu,refused\n";
  for (const projection::SweepPoint& pt : m_points) {
    out << pt.value << ',';
    if (!pt.projection) {
      QString why = QString::fromStdString(pt.refused);
      why.replace('"', "'");
      out << ",,,,,,,,,,,," << '"' << why << "\"\n";
      continue;
    }
    const Projection& p = *pt.projection;
    out << csvNumber(p.stepSeconds * 1e3);
    for (double v : stepValues(p.split)) out << ',' << csvNumber(v);
    out << ',' << csvNumber(p.memory.total() / kGB) << ',' << csvNumber(p.memoryCapacity / kGB)
        << ',' << (p.fits() ? "yes" : "no") << ',' << csvNumber(p.mfu) << ','
        << csvNumber(p.tokensPerS) << ',' << csvNumber(p.tflopsPerGpu) << ",\n";
  }
}

}  // namespace paralab
