// startSweep: runSweep on a job's thread (see jobs/sweep_job.h). See tests/engine/tst_jobs.cpp.
#include "jobs/sweep_job.h"

#include <utility>

namespace paralab::jobs {

std::unique_ptr<Job<SweepResult>> startSweep(SweepRequest request, JobCallbacks callbacks) {
  return std::make_unique<Job<SweepResult>>(
      [r = std::move(request)](const ReportProgress& progress) {
        return runSweep(r.base, r.ranks, r.steps, r.warmup, progress);
      },
      std::move(callbacks));
}

}  // namespace paralab::jobs
