// startHostCheck: measureHost and projectOnHost on a job's thread (see jobs/host_check_job.h).
// See tests/engine/tst_jobs.cpp.
#include "jobs/host_check_job.h"

#include <utility>

namespace paralab::jobs {

std::unique_ptr<Job<HostCheck>> startHostCheck(RunConfig config, JobCallbacks callbacks) {
  return std::make_unique<Job<HostCheck>>(
      [c = std::move(config)](const ReportProgress& progress) {
        HostCheck check;
        check.host = projection::measureHost(c);
        check.projection = projection::projectOnHost(c, check.host);
        if (progress) progress(1, 1);
        return check;
      },
      std::move(callbacks));
}

}  // namespace paralab::jobs
