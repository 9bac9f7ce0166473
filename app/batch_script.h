// The batch script of a Slurm job (Ranks run as: Slurm job): #SBATCH lines for the run's
// partition, nodes, tasks (its ranks), tasks per node and time limit, then mpirun of
// `paralab-run --backend mpi --json --control control` with the run's settings as flags.
// Submitted as `sbatch --parsable job.sbatch` from the job's folder. See
// tests/app/tst_window_slurm.cpp (batchScriptIsShown).
#pragma once
#include <QString>

#include "job_command.h"

namespace paralab {

// What the script names in the folder it is submitted from (a folder the nodes share).
inline constexpr const char* kBatchScriptFile = "job.sbatch";
inline constexpr const char* kControlFile = "control";  // rank 0 obeys the lines appended here
// The job's output (its JSON lines) and error files; %j is Slurm's job id.
inline constexpr const char* kOutputPattern = "paralab-%j.out";
inline constexpr const char* kErrorPattern = "paralab-%j.err";

// The command for a Slurm job of `config` (backend slurm, steps bounded): program sbatch,
// arguments, the script; or why it cannot be submitted, one line naming the field (a setting,
// sbatch not on PATH, paralab-run not found).
JobCommand batchJobCommand(const RunConfig& config, const QString& resumeFrom = {});

// One of Slurm's commands (sbatch, squeue, sacct, scancel) on PATH; "" when not there.
QString slurmProgram(const char* name);

}  // namespace paralab
