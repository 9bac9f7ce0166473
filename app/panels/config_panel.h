// app/panels: the panels beside the charts (run settings, sweep, export, lessons). Below: the
// run settings panel.
//
// ConfigPanel: every setting of a run as grouped controls, made from the engine's settings
// table (engine/schema.h): each control's kind, range, tooltip and whether it applies (and
// why not) come from there, and its object name is the setting's flag. Reads and writes a
// RunConfig; shows RunConfig::validate()'s line inline.
// See tests/app/tst_window.cpp (everyControlSetsItsField, invalidIsExplainedInline).
#pragma once
#include <QHash>
#include <QWidget>
#include <string>

#include "config.h"
#include "jobs/gpu_probe_job.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace paralab {

class JobFields;
struct Setting;

class ConfigPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigPanel(QWidget* parent = nullptr);
  ~ConfigPanel() override;  // waits for the GPU probe

  // The settings a new window starts with: RunConfig's, with a run long enough to watch.
  static RunConfig defaults();

  // The settings as they take effect: the controls' values over the fields they do not show
  // (data dir, eval samples, ...), with every setting that does not apply at its default.
  // Serial execution gives one rank and the plain synchronous layout whatever the parallel
  // controls hold, so switching back to parallel brings their values back.
  RunConfig config() const;
  void setConfig(const RunConfig& config);
  // The settings checked again as if changed: a file a setting names was edited.
  void refresh() { onChanged(); }
  // validate()'s line for the settings shown ("" when they can run), naming the control.
  QString problem() const;
  bool isValid() const { return problem().isEmpty(); }
  // Ranks as processes (Ranks run as: MPI processes, NCCL): the hosts mpirun uses ("" this
  // machine, a hostfile's path, or a host list), beside the launcher command (job_fields.h).
  QString hosts() const;
  void setHosts(const QString& hosts);
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
  struct Control {
    const Setting* setting = nullptr;
    QWidget* widget = nullptr;
    QString tip;  // the setting's help, before any "not available" reason
  };
  void buildControls();
  QWidget* makeControl(const Setting& s);
  RunConfig shown() const;  // every control's value, applicable or not
  bool serial() const;
  void showValue(const Control& c, const RunConfig& config);
  void fillChoices(const Control& c, const RunConfig& config);
  void onChanged();
  void onExecutionChanged();
  void updateAvailability();
  void showValidation();
  void probeGpu();
  void showGpus();  // the probe's answer: the GPU entries enabled, or greyed with the reason
  void setGpuReason(const QString& reason);
  // Enables `w` (and its label) or disables it with `reason` appended to its tooltip.
  void setAvailable(QWidget* w, const QString& tip, bool available, const QString& reason);

  RunConfig m_base;  // fields without a control come from here
  QList<Control> m_controls;
  QHash<QWidget*, QFormLayout*> m_formOf;       // for labels and row visibility
  QHash<QComboBox*, std::string> m_choicesFor;  // the followed value a combo was filled for
  QComboBox* m_execution = nullptr;             // Serial / Parallel: the window's own switch
  JobFields* m_jobFields = nullptr;             // hosts and launcher command of a job
  QSpinBox* m_ranks = nullptr;
  int m_parallelRanks = 4;  // what Parallel brings back
  QLabel* m_problem;        // validate()'s message, when there is one
  QLabel* m_note;
  QString m_gpuReason;
  QLabel* m_gpuNote = nullptr;  // under Device: why the GPU is not offered, in view
  bool m_gpuProbed = false;
  std::unique_ptr<jobs::Job<GpuAvailability>> m_gpuProbe;  // the engine asks the CUDA runtime
};

}  // namespace paralab
