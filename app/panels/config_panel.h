// app/panels: the panels beside the charts (run settings, sweep, export, lessons). Below: the
// run settings panel.
//
// ConfigPanel: every setting of a run as grouped controls (execution, parallelism, model
// parallelism, interconnect and kernels, model, data, training), each with a tooltip saying
// what it does. Reads and writes a RunConfig; shows RunConfig::validate()'s line inline and
// disables what cannot apply, with the reason in the tooltip.
// See tests/app/tst_window.cpp (everyControlSetsItsField, invalidIsExplainedInline).
#pragma once
#include <QHash>
#include <QWidget>
#include <string>
#include <thread>

#include "config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace paralab {

class ConfigPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigPanel(QWidget* parent = nullptr);
  ~ConfigPanel() override;  // joins the GPU probe

  // The settings a new window starts with: RunConfig's, with a run long enough to watch.
  static RunConfig defaults();

  // The controls' values over the fields they do not show (data dir, eval samples, ...).
  // Serial execution gives one rank and the plain synchronous layout whatever the parallel
  // controls hold, so switching back to parallel brings their values back.
  RunConfig config() const;
  void setConfig(const RunConfig& config);
  // validate()'s line for the settings shown ("" when they can run).
  QString problem() const;
  bool isValid() const { return problem().isEmpty(); }
  // A note under the controls, e.g. what live reconfiguration did ("" hides it).
  void setNote(const QString& note, bool warning = false);
  QString note() const;
  // How changes reach a run in progress: the tooltip of every group and of the note.
  void setLiveHint(const QString& hint);

  // Why the GPU choice is unavailable ("" until the probe has answered, and when a GPU is).
  QString gpuReason() const { return m_gpuReason; }

 signals:
  void configChanged();

 private:
  // Which of the parallelism controls apply to the settings shown. One answer for both what
  // is enabled and what config() reads: a disabled control gives its neutral value (ZeRO 0,
  // tp 1, strategy sync ...), so a setting the learner cannot reach never blocks a run.
  struct Applies {
    bool parallel = false, moe = false;
    bool strategy = false, zero = false, modelParallel = false;  // tp and pp
    bool sp = false, pipeline = false, ep = false, dp = false;
    int tp = 1, pp = 1;  // as applied
  };
  Applies applies() const;
  void buildControls();
  void onChanged();
  void updateAvailability();
  void showValidation();
  void probeGpu();
  void setGpuReason(const QString& reason);
  void fillGemm(const std::string& device);
  // Enables `w` (and its label) or disables it with `reason` appended to its tooltip.
  void setAvailable(QWidget* w, bool available, const QString& reason = QString());
  void setRowShown(QWidget* w, bool shown);

  RunConfig m_base;                        // fields without a control come from here
  QHash<QWidget*, QFormLayout*> m_formOf;  // for labels and row visibility
  // Execution
  QComboBox* m_execution;
  QComboBox* m_device;
  QSpinBox* m_ranks;
  // Parallelism (data-parallel family)
  QComboBox* m_strategy;
  QComboBox* m_zero;
  QComboBox* m_dpVersion;
  QSpinBox* m_servers;
  QSpinBox* m_syncEvery;
  QComboBox* m_topology;
  QComboBox* m_scaling;
  // Model parallelism
  QSpinBox* m_dp;
  QSpinBox* m_tp;
  QCheckBox* m_sp;
  QSpinBox* m_pp;
  QSpinBox* m_microbatches;
  QComboBox* m_schedule;
  QSpinBox* m_ep;
  // Interconnect and kernels
  QComboBox* m_link;
  QComboBox* m_gemm;
  std::string m_gemmDevice;  // whose ladder m_gemm lists
  // Model, data, training
  QComboBox* m_model;
  QSpinBox* m_hidden;
  QSpinBox* m_layers;
  QSpinBox* m_experts;
  QSpinBox* m_topk;
  QComboBox* m_dataset;
  QSpinBox* m_batch;
  QDoubleSpinBox* m_lr;
  QComboBox* m_optimizer;
  QSpinBox* m_steps;
  QSpinBox* m_evalEvery;
  QSpinBox* m_seed;

  QLabel* m_problem;  // validate()'s message, when there is one
  QLabel* m_note;
  QString m_gpuReason;
  bool m_hasModelParallel = false, m_hasMoe = false;  // rows of the engine's strategy table
  std::thread m_gpuProbe;
};

}  // namespace paralab
