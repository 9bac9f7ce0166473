// Which GPUs this machine offers, asked as a job: the CUDA runtime can take a moment to answer
// its first call, so the window asks off its GUI thread. See tests/engine/tst_jobs.cpp and
// app/panels/config_panel.cpp (the GPU entries stay disabled until it answers).
#pragma once
#include <memory>

#include "capabilities.h"
#include "jobs/job.h"

namespace paralab::jobs {

// One piece: gpuAvailability() on the job's thread; progress is (1, 1) when it has answered.
std::unique_ptr<Job<GpuAvailability>> startGpuProbe(JobCallbacks callbacks);

}  // namespace paralab::jobs
