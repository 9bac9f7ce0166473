// The launcher command of a run whose ranks are processes (Execution: MPI processes or NCCL):
//   mpirun [--allow-run-as-root] --oversubscribe -np N [--hostfile F | --host a,b]
//          paralab-run --backend mpi --json --control stdin <the run's settings as flags>
// What JobRunner starts, and what the window shows the learner to copy and run themselves.
// See tests/app/tst_window_jobs.cpp (launcherCommand).
#pragma once
#include <QString>
#include <QStringList>

#include "config.h"

namespace paralab {

struct JobCommand {
  QString program;  // mpirun
  QStringList arguments;
  QString error;  // why it cannot be launched, one line naming the field ("" when it can)
  // The command as one shell line, arguments quoted where a shell would split them.
  QString text() const;
};

// `hosts`: "" (this machine), a hostfile's path (--hostfile), or a host list "a,b" or
// "a:2,b:2" (--host). `resumeFrom`: a checkpoint the job goes on from (--resume).
JobCommand jobCommand(const RunConfig& config, const QString& hosts,
                      const QString& resumeFrom = {});
// Why `hosts` is neither a hostfile nor a host list ("" when it is one, or empty).
QString hostsProblem(const QString& hosts);

// The programs: mpirun (on PATH, else the one ParaLab was built against) and paralab-run
// (beside this program, in the build tree, else on PATH); "" when not found.
QString mpirunProgram();
QString paralabRunProgram();

}  // namespace paralab
