// ChangeMarkers: a run's live changes (Session::reconfigure) on a chart whose x axis is the
// step: a dashed vertical line between the last step under the old settings and the first
// under the new, numbered at its top, and a legend entry saying what changed ("1 · after step
// 40: ranks 1 → 2"). The loss, throughput and latency charts each hold one, so the same
// markers are on screen and in every export.
// See tests/app/tst_run_data.cpp (liveChangesAreMarked).
#pragma once
#include <qcustomplot.h>

#include <QList>
#include <QVector>

#include "charts/metric_history.h"

namespace paralab {

class ChangeMarkers {
 public:
  // More changes than this share one legend entry for the earliest ones (summary.md lists all).
  static constexpr int kMaxLegendEntries = 5;

  explicit ChangeMarkers(QCustomPlot* plot) : m_plot(plot) {}
  // Draws `changes` (none: removes every marker). False, and nothing redone, when they are
  // those shown.
  bool show(const QVector<MetricHistory::Change>& changes);
  int count() const { return int(m_shown.size()); }
  // The legend text of each marker, as drawn (for tests and exports).
  QStringList legendTexts() const;
  // After a change of colours or fonts (the print look of an export and back).
  void applyLook(const QColor& text);

 private:
  QCustomPlot* m_plot;
  QVector<MetricHistory::Change> m_shown;
  QList<QCPAbstractItem*> m_items;              // lines and their numbers
  QList<QCPAbstractLegendItem*> m_legendItems;  // owned by the legend
};

}  // namespace paralab
