// An --elastic run under mpirun (train/elastic.h): rank 0 writes a checkpoint every
// --checkpoint-every steps to --save FILE, and when a replica of this process fails the job
// ends with one line and kRelaunchExitCode, for its launcher (the window's JobRunner) to start
// it again on the survivors with --resume FILE. See tests/app/tst_window_elastic.cpp and
// `mpirun -np 4 paralab-run --backend mpi --elastic --checkpoint-every 5 --save a --fail 3@10`.
#pragma once
#include <optional>
#include <string>

#include "config.h"
#include "metrics/metrics.h"

namespace paralab {

class Trainer;

class ElasticJob {
 public:
  // Why the run cannot go this way (one line naming the field), or nothing. Only an --elastic
  // run of processes (`mpiJob`) is one; it needs the checkpoints to relaunch from.
  static std::optional<std::string> problem(const RunConfig& c, bool mpiJob,
                                            const std::string& saveFile);
  // `resumedAt`: the step the run starts from (its --resume checkpoint's, or 0).
  ElasticJob(const RunConfig& c, bool mpiJob, std::string saveFile, int64_t resumedAt);

  // One step of `t` on every process, then the checkpoint when one is due (collective). A
  // failure of this process's replica does not return: the job ends for a relaunch.
  StepMetrics step(Trainer& t);

 private:
  bool m_on = false;
  int m_every = 0;
  std::string m_file;
  int64_t m_saved = 0;  // the step of the last checkpoint written (or resumed from)
};

}  // namespace paralab
