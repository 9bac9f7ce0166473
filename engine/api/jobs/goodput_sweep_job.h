// The goodput sweep as a job: the same run under the same emulated failures at each checkpoint
// interval K (runGoodputSweep, train/goodput_sweep.h) on the job's thread, progress in useful
// steps, cancel between steps. See tests/engine/tst_goodput_sweep.cpp and the window's sweep
// panel (app/sweep_runner.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "jobs/job.h"
#include "train/goodput_sweep.h"

namespace paralab::jobs {

struct GoodputSweepRequest {
  RunConfig base;                    // its mtbfS > 0 and its steps: each run's
  std::vector<int> checkpointEvery;  // the Ks
  int repeats = 3;                   // runs per K, each with its own failure times
  std::string dir;                   // where the checkpoint file is written
};

std::unique_ptr<Job<GoodputSweepResult>> startGoodputSweep(GoodputSweepRequest request,
                                                           JobCallbacks callbacks);

}  // namespace paralab::jobs
