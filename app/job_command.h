// The launcher command of a run whose ranks are processes (Execution: MPI processes or NCCL):
//   mpirun [--allow-run-as-root] --oversubscribe -np N [--hostfile F | --host a,b]
//          paralab-run --backend mpi --json --control stdin <the run's settings as flags>
// or, for a Slurm job, `sbatch --parsable job.sbatch` with the batch script (batch_script.h).
// What JobRunner starts, and what the window shows the learner to copy and run themselves.
// See tests/app/tst_window_jobs.cpp (launcherCommand) and tst_window_slurm.cpp.
#pragma once
#include <QString>
#include <QStringList>

#include "config.h"

namespace paralab {

struct JobCommand {
  QString program;  // mpirun, or sbatch
  QStringList arguments;
  QString script;  // a Slurm job's batch script, submitted as job.sbatch ("" for mpirun)
  QString error;  // why it cannot be launched, one line naming the field ("" when it can)
  // The command as one shell line, arguments quoted where a shell would split them.
  QString text() const;
};

// `hosts`: "" (this machine), a hostfile's path (--hostfile), or a host list "a,b" or
// "a:2,b:2" (--host). `resumeFrom`: a checkpoint the job goes on from (--resume).
// `checkpoint`: where an --elastic job with --checkpoint-every saves (--save, which paralab-run
// requires of it under mpirun); "" for kElasticCheckpoint in the folder the command runs from.
JobCommand jobCommand(const RunConfig& config, const QString& hosts, const QString& resumeFrom = {},
                      const QString& checkpoint = {});
// The file an elastic job's command saves to when given none: a copied command runs as pasted.
inline constexpr const char* kElasticCheckpoint = "paralab-elastic.ckpt";
// Why `hosts` is neither a hostfile nor a host list ("" when it is one, or empty).
QString hostsProblem(const QString& hosts);

// paralab-run's words in a launcher's command: its path, --backend mpi|nccl --json --control
// `control`, the run's settings that differ from the defaults as flags (not the ranks, the
// backend or the job's own settings: the launcher's), then --resume `resumeFrom` if given, and
// an elastic job's --save `checkpoint` (jobCommand's).
QStringList paralabRunWords(const RunConfig& config, const QString& control,
                            const QString& resumeFrom, const QString& checkpoint = {});
// --allow-run-as-root when this program runs as root (mpirun refuses root unless asked; a job
// runs as whoever submitted it).
QStringList rootFlag();
// `words` as one shell line, each quoted where a shell would split it.
QString shellLine(const QStringList& words);

// The programs: mpirun (on PATH, else the one ParaLab was built against) and paralab-run
// (beside this program, in the build tree, else on PATH); "" when not found.
QString mpirunProgram();
QString paralabRunProgram();

}  // namespace paralab
