// A scaling sweep as a job: the same run at each rank count (runSweep, train/sweep.h) on the
// job's thread, progress per step run, cancel between steps. See tests/engine/tst_jobs.cpp and
// the window's sweep panel (app/sweep_runner.h).
#pragma once
#include <memory>
#include <vector>

#include "config.h"
#include "jobs/job.h"
#include "train/sweep.h"

namespace paralab::jobs {

struct SweepRequest {
  RunConfig base;
  std::vector<int> ranks;  // 1, 2, 4, ...: each a run of `base` at that many ranks
  int steps = 10;          // timed steps per point (median)
  int warmup = 2;          // untimed steps before them
};

std::unique_ptr<Job<SweepResult>> startSweep(SweepRequest request, JobCallbacks callbacks);

}  // namespace paralab::jobs
