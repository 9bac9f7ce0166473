// LossChart: training loss per step (nats) with its running mean, the test-accuracy points
// on a second axis (%), and up to kMaxOverlays earlier runs' mean loss kept faded underneath
// for comparison (serial against sync DP, Hogwild drifting ...), each named by its configuration.
// The run's live changes are marked. Its CSV holds every step of the run and of the kept runs
// (their run files), whatever is drawn.
// See tests/app/tst_app.cpp (startPauseStepReset) and tests/app/tst_charts.cpp (lossOverlays).
#pragma once
#include "charts/chart.h"
#include "charts/metric_history.h"
#include "config.h"

namespace paralab {

class LossChart : public Chart {
  Q_OBJECT
 public:
  static constexpr int kMaxOverlays = 5;

  explicit LossChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;
  void writeCsv(QTextStream& out) const override;

  // Keeps the run now drawn (its mean loss) as a faded overlay named `label`; beyond
  // kMaxOverlays the oldest goes. Nothing is kept from a run without points.
  void keepAsOverlay(const QString& label);
  int overlayCount() const { return int(m_overlays.size()); }
  QCPGraph* overlay(int i) const { return m_overlays.at(i).graph; }
  // A short name for a run's overlay: "serial", "sync · 4 ranks · ZeRO-2", "hogwild · 4 ranks".
  // Without `withRanks` (a sweep, which varies them): "sync · ZeRO-2".
  static QString runLabel(const RunConfig& config, bool withRanks = true);
  // Names what the accuracy series measures for the run's model: the label of a test image
  // (the MLP, the MoE) or the next character of held-out text (the GPT).
  void describeAccuracy(const RunConfig& config);

 public slots:
  void clearOverlays();

 private:
  void fitValueAxis();

  QCPGraph* m_loss;
  QCPGraph* m_lossMean;
  QCPGraph* m_accuracy;
  QCPGraph* m_testLoss;  // held-out loss, one point per evaluation
  // An earlier run kept: its mean loss as drawn, and every step of it for the CSV.
  struct Overlay {
    QCPGraph* graph = nullptr;
    QString column;  // CSV column
    MetricHistory::Steps steps;
  };
  MetricHistory::Steps m_steps;
  QList<Overlay> m_overlays;    // oldest first
  int m_kept = 0;               // overlays ever kept: picks the next colour
};

}  // namespace paralab
