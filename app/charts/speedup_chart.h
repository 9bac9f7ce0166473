// SpeedupChart: a scaling sweep's measured speedup against the rank count, beside the ideal
// S = N and the law fitted to the points (Amdahl for strong scaling, Gustafson for weak),
// the fits labelled as references, a fit outside 0..1 said in words and not drawn.
// See tests/app/tst_charts.cpp (speedupDrawsTheSweep, fitOutsideItsRangeIsSaidInWords).
#pragma once
#include "charts/chart.h"
#include "train/sweep.h"

namespace paralab {

class SpeedupChart : public Chart {
  Q_OBJECT
 public:
  explicit SpeedupChart(QWidget* parent = nullptr);
  // Per-step history does not change a sweep, nor does a run's start or reset.
  void showHistory(const MetricHistory& history) override;
  bool followsRun() const override { return false; }
  // One row per measured rank count (ranks are whole): the measured speedup, its efficiency
  // S/N, the ideal N and the fitted law at that N. The fit's finer samples are for drawing.
  void writeCsv(QTextStream& out) const override;
  // Draws `sweep`; `subtitle` describes the settings it measured (not the run shown).
  void showSweep(const SweepResult& sweep, const QString& subtitle = QString());
  void clear();

  QCPGraph* measured() const { return m_measured; }
  QCPGraph* ideal() const { return m_ideal; }
  QCPGraph* fit() const { return m_fit; }  // Amdahl (strong) or Gustafson (weak)
  // The dotted line at the machine's core count, drawn when the sweep went beyond it (ranks
  // there took turns on the cores); nullptr otherwise.
  QCPItemStraightLine* coresLine() const { return m_coresLine; }
  // The fitted law's legend entry: its fraction and R² as a reference, or, where the fraction
  // lies outside 0..1, in words that it does not fit (no number to trust).
  static QString fitName(const SweepResult& sweep);

 private:
  void placeLabels();  // after each layout: each label where it fits, or left out

  QCPGraph* m_measured;
  QCPGraph* m_ideal;
  QCPGraph* m_fit;
  QList<QCPItemText*> m_labels;  // efficiency beside each point
  QCPItemStraightLine* m_coresLine = nullptr;
  QCPItemText* m_coresLabel = nullptr;
};

}  // namespace paralab
