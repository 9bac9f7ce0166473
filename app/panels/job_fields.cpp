// The hosts and launcher-command rows of an MPI or NCCL run (see job_fields.h).
// See tests/app/tst_window_jobs.cpp.
#include "panels/job_fields.h"

#include <QApplication>
#include <QClipboard>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>

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

  auto* commandRow = new QHBoxLayout;
  commandRow->setContentsMargins(0, 0, 0, 0);
  commandRow->addWidget(m_command, 1);
  commandRow->addWidget(m_copy);
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->addRow(tr("Hosts"), m_hosts);
  form->addRow(tr("Command"), commandRow);
}

QString JobFields::hosts() const { return m_hosts->text().trimmed(); }

void JobFields::setHosts(const QString& hosts) {
  m_hosts->setText(hosts);
  emit hostsChanged();
}

void JobFields::showCommand(const RunConfig& config) {
  const JobCommand c = jobCommand(config, hosts());
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

}  // namespace paralab
