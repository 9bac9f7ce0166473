// StragglerMark: persistentStraggler over the last K steps shown (straggler_mark.h), said in the
// status bar and at the rank's row of the timeline. See tests/app/tst_window_failures.cpp.
#include "charts/straggler_mark.h"

#include "charts/chart_colors.h"
#include "charts/timeline_chart.h"
#include "metrics/straggler.h"

namespace paralab {

StragglerMark::StragglerMark(QWidget* status, TimelineChart* timeline)
    : QObject(status), m_label(new QLabel(status)), m_timeline(timeline) {
  m_label->setObjectName("stragglerLabel");
  m_label->setStyleSheet("color: #e53935;");
  m_label->setToolTip(
      tr("A rank that computed at least %1 × the median rank's time in most of the last %2 "
         "steps, read from the steps' measured compute (not from the straggler setting). The "
         "others wait for it at every collective.")
          .arg(kStragglerRatio)
          .arg(kSteps));
  m_label->hide();
  if (m_timeline) {
    m_mark = new QCPItemText(m_timeline);
    m_mark->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    m_mark->position->setTypeY(QCPItemPosition::ptPlotCoords);
    m_mark->setPositionAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_mark->setColor(Qt::white);
    m_mark->setBrush(chartcolors::kRed);
    m_mark->setPadding(QMargins(4, 1, 4, 1));
    m_mark->setClipToAxisRect(true);
    m_mark->setVisible(false);
  }
}

void StragglerMark::feed(const std::vector<StepMetrics>& steps) {
  if (steps.empty()) return;
  for (const StepMetrics& m : steps) {
    m_steps.push_back(m);
    if (m_steps.size() > size_t(kSteps)) m_steps.pop_front();
  }
  const std::vector<StepMetrics> last(m_steps.begin(), m_steps.end());
  // Half of a few steps is no majority worth a mark: at least half of K read first.
  m_rank = 2 * int(last.size()) >= kSteps ? persistentStraggler(last) : -1;
  m_named = 0;
  for (const StepMetrics& m : last)
    if (const auto s = slowestRank(m.ranks); s && s->straggler && s->rank == m_rank) ++m_named;
  show();
}

void StragglerMark::clear() {
  m_steps.clear();
  m_rank = -1;
  m_named = 0;
  show();
}

void StragglerMark::show() {
  const bool marked = m_rank >= 0;
  m_label->setVisible(marked);
  if (marked)
    m_label->setText(tr("Straggler: rank %1 (slowest in %2 of the last %3 steps)")
                         .arg(m_rank)
                         .arg(m_named)
                         .arg(stepsRead()));
  if (!m_mark) return;
  const bool was = m_mark->visible();
  m_mark->setVisible(marked);
  if (marked) {
    m_mark->setText(tr("straggler: rank %1").arg(m_rank));
    m_mark->position->setCoords(0.995, TimelineChart::computeRow(m_rank).center());
  }
  if (marked || was) m_timeline->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace paralab
