// startGoodputSweep: runGoodputSweep on a job's thread (see jobs/goodput_sweep_job.h).
// See tests/engine/tst_goodput_sweep.cpp.
#include "jobs/goodput_sweep_job.h"

#include <utility>

namespace paralab::jobs {

std::unique_ptr<Job<GoodputSweepResult>> startGoodputSweep(GoodputSweepRequest request,
                                                           JobCallbacks callbacks) {
  return std::make_unique<Job<GoodputSweepResult>>(
      [r = std::move(request)](const ReportProgress& progress) {
        return runGoodputSweep(r.base, r.checkpointEvery, r.repeats, r.dir, progress);
      },
      std::move(callbacks));
}

}  // namespace paralab::jobs
