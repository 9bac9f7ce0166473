// The batch script of a Slurm job (see batch_script.h). Inside the job the ranks start with
// mpirun, not srun: Open MPI's mpirun reads the allocation Slurm gives (SLURM_* in its
// environment) and starts its daemons on the other nodes through Slurm itself, so it needs no
// ssh and no MPI plugin of Slurm's (srun --mpi=pmix needs one built against the same PMIx as
// Open MPI); it is also the launcher the mpirun job uses, so both run the same command.
// See tests/app/tst_window_slurm.cpp.
#include "batch_script.h"

#include <QObject>
#include <QStandardPaths>

#include "schema.h"

namespace paralab {

namespace {

SettingValue valueOf(const RunConfig& c, const char* key) { return findSetting(key)->get(c); }

}  // namespace

QString slurmProgram(const char* name) { return QStandardPaths::findExecutable(name); }

JobCommand batchJobCommand(const RunConfig& config, const QString& resumeFrom) {
  JobCommand c;
  c.program = slurmProgram("sbatch");
  c.arguments << "--parsable" << kBatchScriptFile;
  const QString partition =
      QString::fromStdString(std::get<std::string>(valueOf(config, "partition")));
  const int64_t nodes = std::get<int64_t>(valueOf(config, "nodes"));
  const int64_t perNode = std::get<int64_t>(valueOf(config, "tasks-per-node"));
  const QString time = QString::fromStdString(std::get<std::string>(valueOf(config, "time-limit")));
  // What paralab-run checks of the same settings under --backend mpi (a GPU run, say).
  RunConfig inside = config;
  inside.backend = Backend::Mpi;
  for (const char* key : {"partition", "nodes", "tasks-per-node", "time-limit"})
    findSetting(key)->reset(inside);
  if (auto err = config.validate())
    c.error = QString::fromStdString(*err);
  else if (auto why = inside.validate())
    c.error = QString::fromStdString(*why);
  else if (perNode > 0 && perNode * nodes < config.ranks)
    c.error = QObject::tr(
                  "tasks-per-node: %1 on %2 node(s) hold fewer than the %3 ranks "
                  "(allowed: 0, or at least %4)")
                  .arg(perNode)
                  .arg(nodes)
                  .arg(config.ranks)
                  .arg((config.ranks + nodes - 1) / nodes);
  else if (c.program.isEmpty())
    c.error = QObject::tr(
        "backend: sbatch was not found on PATH (install Slurm's client "
        "commands, or choose MPI processes)");
  else if (paralabRunProgram().isEmpty())
    c.error = QObject::tr("backend: paralab-run was not found beside paralab or on PATH");

  QStringList s;
  s << "#!/bin/bash"
    << QObject::tr("# A ParaLab run as a Slurm job: %1 ranks, MPI processes of paralab-run.")
           .arg(config.ranks)
    << QObject::tr("# Submit it from a folder every node shares: sbatch %1").arg(kBatchScriptFile)
    << QObject::tr("# Its JSON lines go to %1; rank 0 obeys the commands appended to ./%2")
           .arg(kOutputPattern, kControlFile)
    << QObject::tr("# (pause, resume, step, stop, save FILE), read every 100 ms.")
    << "#SBATCH --job-name=paralab";
  if (partition != "default") s << "#SBATCH --partition=" + partition;
  s << QString("#SBATCH --nodes=%1").arg(nodes) << QString("#SBATCH --ntasks=%1").arg(config.ranks);
  if (perNode > 0) s << QString("#SBATCH --ntasks-per-node=%1").arg(perNode);
  s << "#SBATCH --time=" + time << QString("#SBATCH --output=%1").arg(kOutputPattern)
    << QString("#SBATCH --error=%1").arg(kErrorPattern) << QString("touch %1").arg(kControlFile)
    << shellLine(QStringList{"mpirun"} + rootFlag() +
                 QStringList{"-np", QString::number(config.ranks)} +
                 paralabRunWords(config, kControlFile, resumeFrom));
  c.script = s.join('\n') + '\n';
  return c;
}

}  // namespace paralab
