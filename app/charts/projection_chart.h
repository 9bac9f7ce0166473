// ProjectionChart: the "Project to a cluster" panel's charts (panels/projection_panel.h), each
// a figure of engine/projection/projection.h, never of a measurement, and labelled "projected"
// in its title, axes, legend and CSV:
//   Memory — one GPU's memory by category (parameters, gradients, optimizer state, activations,
//            workspace) as one stacked bar against the GPU's capacity (a dashed line); a layout
//            that does not fit is drawn red past the capacity, with how much over.
//   Step   — one step's time split: compute, TP communication, PP bubble, exposed DP
//            communication and the rest (PP sends, CP and EP exchanges, the optimizer).
//   Sweep  — one layout axis swept (tp 1, 2, 4, 8 or pp): the step split as stacked bars per
//            value, memory per GPU as a line on the right axis against the capacity, MFU over
//            each bar; a value the projection refuses keeps its slot, marked "refused".
// Exports like every chart (PNG, PDF, SVG, CSV). See tests/app/tst_window_projection.cpp.
#pragma once
#include <QList>
#include <optional>
#include <vector>

#include "charts/chart.h"
#include "projection/projection.h"

namespace paralab {

class ProjectionChart : public Chart {
  Q_OBJECT
 public:
  enum class Kind { Memory, Step, Sweep };
  explicit ProjectionChart(Kind kind, QWidget* parent = nullptr);

  void showHistory(const MetricHistory&) override {}
  bool followsRun() const override { return false; }  // a projection, not the run shown
  void showProjection(const projection::Projection& p);
  // `axis` names the x axis ("tp", "pp").
  void showSweep(const std::vector<projection::SweepPoint>& points, const QString& axis);
  void clear(const QString& why = QString());

  Kind kind() const { return m_kind; }
  int pointCount() const override;
  void writeCsv(QTextStream& out) const override;
  void applyLook(const QPalette& palette) override;

  // What is drawn, for tests: the bars in stacking order (bottom first), their values in the
  // chart's units (GB for memory, ms for time).
  const QList<QCPBars*>& bars() const { return m_bars; }
  // Memory: GB past the GPU's capacity (0 when it fits), and the red note saying so (null when
  // it fits).
  double overGB() const { return m_overGB; }
  const QCPItemText* overNote() const { return m_overGB > 0 ? m_overNote : nullptr; }
  // Sweep: the memory line (right axis) and the x values with the reasons refused ones got.
  QCPGraph* memoryLine() const { return m_memLine; }
  const std::vector<projection::SweepPoint>& sweepPoints() const { return m_points; }

 private:
  QCPBars* addBars(QCPAxis* key, QCPAxis* value, const QString& name, const QColor& color);
  QCPItemText* addText(const QString& text, bool neutral = true);
  void removeNotes();

  Kind m_kind;
  QList<QCPBars*> m_bars;
  QList<QCPItemText*> m_notes;         // cleared on each show
  QList<QCPItemText*> m_neutralNotes;  // drawn in the palette's text colour
  QCPItemStraightLine* m_capacity = nullptr;
  QCPItemRect* m_overRect = nullptr;
  QCPItemText* m_overNote = nullptr;
  QCPGraph* m_memLine = nullptr;
  QCPGraph* m_memOver = nullptr;
  QCPGraph* m_capLine = nullptr;  // sweep: the GPU's memory, dashed on the right axis
  std::optional<projection::Projection> m_projection;
  std::vector<projection::SweepPoint> m_points;
  QString m_axis;
  double m_overGB = 0;
};

}  // namespace paralab
