// The projection's check on this machine as a job: the machine measured at a run's shapes
// (measureHost, about a second) and the run projected onto it (projectOnHost), on the job's
// thread. See tests/engine/tst_jobs.cpp and tests/app/tst_window_projection.cpp.
#pragma once
#include <memory>

#include "config.h"
#include "jobs/job.h"
#include "projection/host_profile.h"

namespace paralab::jobs {

struct HostCheck {
  projection::HostProfile host;
  projection::Projection projection;
};

// One piece: progress is (1, 1) when it is done. Its error is measureHost's or project's line
// (a model or strategy the projection does not cover).
std::unique_ptr<Job<HostCheck>> startHostCheck(RunConfig config, JobCallbacks callbacks);

}  // namespace paralab::jobs
