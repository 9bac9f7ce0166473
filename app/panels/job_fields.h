// JobFields: the run settings' rows for ranks as processes (Ranks run as: MPI processes or
// NCCL): the hosts the job runs on, and the launcher command the window will run, read-only and
// copyable, so a learner can run it themselves (job_command.h); for a Slurm job, the batch
// script Start submits instead (batch_script.h), as copyable. Shown by ConfigPanel under its
// Execution group. See tests/app/tst_window_jobs.cpp (launcherCommandIsShown) and
// tst_window_slurm.cpp (batchScriptIsShown).
#pragma once
#include <QWidget>

#include "config.h"

class QFormLayout;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace paralab {

class JobFields : public QWidget {
  Q_OBJECT
 public:
  explicit JobFields(QWidget* parent = nullptr);

  QString hosts() const;  // "" (this machine), a hostfile's path or a host list
  void setHosts(const QString& hosts);
  // The command for `config` on hosts(), or why it cannot run.
  void showCommand(const RunConfig& config);
  QString commandText() const;
  QString scriptText() const;  // the batch script shown ("" unless a Slurm job)

 signals:
  void hostsChanged();

 private:
  QLineEdit* m_hosts;
  QLineEdit* m_command;
  QPushButton* m_copy;
  QPlainTextEdit* m_script;
  QWidget* m_commandRow;
  QWidget* m_scriptRow;
  QFormLayout* m_form;
};

}  // namespace paralab
