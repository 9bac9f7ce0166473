// LossChart: training loss per step (nats) with its running mean, the test-accuracy points
// on a second axis (%), and up to kMaxOverlays earlier runs' mean loss kept faded underneath
// for comparison (serial against sync DP, Hogwild drifting ...), each named by its configuration:
// only runs of the run's own model and data set (one loss scale), and a run that diverged drawn
// without setting the axis. The run's live changes are marked. Its CSV holds every step of the run and of the kept runs
// (their run files), whatever is drawn.
// See tests/app/tst_app.cpp (startPauseStepReset) and tests/app/tst_charts.cpp (lossOverlays).
#pragma once
#include "charts/chart.h"
#include "charts/metric_history.h"
#include <optional>

#include "config.h"

namespace paralab {

class LossChart : public Chart {
  Q_OBJECT
 public:
  static constexpr int kMaxOverlays = 5;
  // An earlier run whose mean loss rose past this multiple of its first value (or was not
  // finite) diverged: it is drawn, named so, but the axis is not stretched to hold it.
  static constexpr double kDivergedFactor = 4;

  explicit LossChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;
  void writeCsv(QTextStream& out) const override;

  // Keeps the run now drawn (its mean loss) as a faded overlay named `label`; beyond
  // kMaxOverlays the oldest goes. Nothing is kept from a run without points. `of`, the kept
  // run's settings: it is shown only beside runs of the same model and data set.
  void keepAsOverlay(const QString& label, std::optional<RunConfig> of = std::nullopt);
  bool overlayDiverged(int i) const { return m_overlays.at(i).diverged; }
  int overlayCount() const { return int(m_overlays.size()); }
  QCPGraph* overlay(int i) const { return m_overlays.at(i).graph; }
  // A short name for a run's overlay: "serial", "sync · 4 ranks · ZeRO-2", "hogwild · 4 ranks".
  // Without `withRanks` (a sweep, which varies them): "sync · ZeRO-2".
  static QString runLabel(const RunConfig& config, bool withRanks = true);
  // Names what the accuracy series measures for the run's model: the label of a test image
  // (the MLP, the MoE) or the next character of held-out text (the GPT).
  void describeAccuracy(const RunConfig& config);
  // A new run (or a recorded one) is drawn: its series named for its model, and the kept runs
  // of another model or data set let go (their loss is in other units or on another scale).
  // `settingsKnown` false (a file without its settings): every kept run stays.
  void showRunOf(const RunConfig& config, bool settingsKnown = true);

 public slots:
  void clearOverlays();

 protected:
  // The kept runs, oldest first: where the legend has no room they go unnamed before the run's.
  QList<QCPAbstractPlottable*> legendOptional() const override;

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
    std::optional<RunConfig> of;  // its settings, where known
    bool diverged = false;        // its values do not set the axis
  };
  MetricHistory::Steps m_steps;
  QList<Overlay> m_overlays;    // oldest first
  int m_kept = 0;               // overlays ever kept: picks the next colour
  bool m_evaluates = true;      // the run evaluates (eval-every > 0): held-out series and axis
};

}  // namespace paralab
