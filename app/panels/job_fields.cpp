// The hosts and launcher-command rows of an MPI or NCCL run, the batch script of a Slurm job
// (see job_fields.h). See tests/app/tst_window_jobs.cpp and tst_window_slurm.cpp.
#include "panels/job_fields.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "job_command.h"

namespace paralab {

JobFields::JobFields(QWidget* parent) : QWidget(parent) {
  m_hosts = new QLineEdit;
  m_hosts->setObjectName("hosts");
  m_hosts->setPlaceholderText(tr("this machine"));
  m_hosts->setToolTip(
      tr("Where mpirun starts the processes: empty for this machine, a hostfile's path (one "
         "line per machine: \"node1 slots=4\"), or a list \"node1:4,node2:4\". Every machine "
         "needs paralab-run at the same path and mpirun's ssh access; the window talks to rank "
         "0 through mpirun's standard input and opens no network port."));
  m_command = new QLineEdit;
  m_command->setObjectName("launchCommand");
  m_command->setReadOnly(true);
  m_command->setToolTip(tr("The command Start runs for these settings: copy it to run the same "
                           "job yourself, in a terminal or a batch script"));
  m_copy = new QPushButton(tr("Copy"));
  m_copy->setObjectName("copyLaunchCommand");
  m_copy->setToolTip(tr("Copy the launcher command to the clipboard"));
  connect(m_copy, &QPushButton::clicked, this,
          [this] { QApplication::clipboard()->setText(m_command->text()); });
  connect(m_hosts, &QLineEdit::editingFinished, this, &JobFields::hostsChanged);

  m_script = new QPlainTextEdit;
  m_script->setObjectName("batchScript");
  m_script->setReadOnly(true);
  m_script->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_script->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_script->setFixedHeight(m_script->fontMetrics().lineSpacing() * 9);
  auto* copyScript = new QPushButton(tr("Copy"));
  copyScript->setObjectName("copyBatchScript");
  copyScript->setToolTip(tr("Copy the batch script to the clipboard"));
  connect(copyScript, &QPushButton::clicked, this,
          [this] { QApplication::clipboard()->setText(m_script->toPlainText()); });

  m_commandRow = new QWidget;
  auto* commandRow = new QHBoxLayout(m_commandRow);
  commandRow->setContentsMargins(0, 0, 0, 0);
  commandRow->addWidget(m_command, 1);
  commandRow->addWidget(m_copy);
  m_scriptRow = new QWidget;
  auto* scriptRow = new QVBoxLayout(m_scriptRow);
  scriptRow->setContentsMargins(0, 0, 0, 0);
  scriptRow->addWidget(m_script);
  scriptRow->addWidget(copyScript, 0, Qt::AlignRight);
  m_form = new QFormLayout(this);
  m_form->setContentsMargins(0, 0, 0, 0);
  m_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_form->addRow(tr("Hosts"), m_hosts);
  m_form->addRow(tr("Command"), m_commandRow);
  m_form->addRow(tr("Batch script"), m_scriptRow);
  m_form->setRowVisible(m_scriptRow, false);
}

QString JobFields::hosts() const { return m_hosts->text().trimmed(); }

void JobFields::setHosts(const QString& hosts) {
  m_hosts->setText(hosts);
  emit hostsChanged();
}

void JobFields::showCommand(const RunConfig& config) {
  const JobCommand c = jobCommand(config, hosts());
  // A Slurm job: Slurm picks the hosts; the script is what Start submits (sbatch job.sbatch).
  const bool batch = config.backend == Backend::Slurm;
  m_form->setRowVisible(m_hosts, !batch);
  m_form->setRowVisible(m_scriptRow, batch);
  if (batch) {
    if (m_script->toPlainText() != c.script) m_script->setPlainText(c.script);
    m_script->setStyleSheet(c.error.isEmpty() ? QString() : "color: #c62828;");
    m_script->setToolTip(c.error.isEmpty()
                             ? tr("The batch script Start submits with sbatch (%1), from the "
                                  "job's folder: copy it to submit the same job yourself")
                                   .arg(c.text())
                             : tr("Cannot submit: %1").arg(c.error));
  }
  // The command even when it cannot run yet (the learner sees its shape), and why not beside it.
  m_command->setText(c.text());
  m_command->setCursorPosition(0);
  m_command->setStyleSheet(c.error.isEmpty() ? QString() : "color: #c62828;");
  m_command->setToolTip(c.error.isEmpty()
                            ? tr("The command Start runs for these settings: copy it to run the "
                                 "same job yourself, in a terminal or a batch script")
                            : tr("Cannot launch: %1").arg(c.error));
  m_hosts->setStyleSheet(hostsProblem(hosts()).isEmpty() ? QString() : "color: #c62828;");
}

QString JobFields::commandText() const { return m_command->text(); }
QString JobFields::scriptText() const {
  return m_scriptRow->isVisibleTo(this) ? m_script->toPlainText() : QString();
}

}  // namespace paralab
