// SweepPanel: the "Run scaling sweep" dock: which rank counts, how many steps each, a progress
// bar with Cancel, and the measured table (step time, samples/s, speedup, efficiency, the
// Amdahl or Gustafson fit). The result also goes to the speedup chart. Swept over the checkpoint
// interval K instead, under emulated failures of the MTBF given: goodput per K beside
// Young/Daly's optimum (train/goodput_sweep.h), for the goodput chart.
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#pragma once
#include <QWidget>
#include <functional>
#include <optional>

#include "config.h"
#include "train/goodput_sweep.h"
#include "train/sweep.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace paralab {

class SweepRunner;

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  // `baseConfig` gives the run settings to sweep (the settings panel's, at the time of Run).
  explicit SweepPanel(std::function<RunConfig()> baseConfig, QWidget* parent = nullptr);

  // Starts a sweep with the settings shown; "" or why it cannot start (also shown inline).
  QString run();
  void cancel();
  bool isRunning() const;
  const std::optional<SweepResult>& result() const { return m_result; }
  // The settings the last sweep started measured (the panel's base at the time of Run).
  const RunConfig& sweptConfig() const { return m_swept; }
  // Called on the GUI thread just before a sweep starts, so the window can give the sweep the
  // cores (pause a training run); what it returns is said in the panel's status line.
  void setBeforeRun(std::function<QString()> hook) { m_beforeRun = std::move(hook); }
  // The rank counts asked for ("1, 2, 4, 8"); setRanks() for tests and --config.
  void setRanks(const QString& list);
  void setSteps(int steps, int warmup);
  // What is swept: rank counts, or the checkpoint interval K (with failures every `mtbfS` s on
  // average, emulated); the values then are Ks ("1, 2, 4, 8").
  enum class Over { Ranks, CheckpointInterval };
  void setOver(Over over, double mtbfS = 0);
  const std::optional<GoodputSweepResult>& goodputResult() const { return m_goodput; }
  // Takes the last result off show (its table and fit), saying `why` in the status line.
  void clearResult(const QString& why);

 signals:
  void sweepFinished(const paralab::SweepResult& result);
  void runningChanged(bool running);
  void goodputSweepFinished(const paralab::GoodputSweepResult& result);

 private:
  void onFinished(const SweepResult& result, const QString& error);
  void showTable(const SweepResult& result);
  QString runGoodput(const RunConfig& base);
  void onGoodputFinished(const GoodputSweepResult& result, const QString& error);

  std::function<RunConfig()> m_baseConfig;
  std::function<QString()> m_beforeRun;
  RunConfig m_swept;
  QString m_beforeNote;  // what m_beforeRun said, kept in the status after the sweep
  SweepRunner* m_runner;
  QLineEdit* m_ranks;
  QSpinBox* m_steps;
  QSpinBox* m_warmup;
  QPushButton* m_runButton;
  QPushButton* m_cancelButton;
  QProgressBar* m_progress;
  QLabel* m_status;
  QTableWidget* m_table;
  std::optional<SweepResult> m_result;
  QComboBox* m_over;
  QDoubleSpinBox* m_mtbf;
  QLabel *m_valuesLabel, *m_stepsLabel;
  std::optional<GoodputSweepResult> m_goodput;
};

}  // namespace paralab
