// startGpuProbe: gpuAvailability() on a job's thread (see jobs/gpu_probe_job.h).
// See tests/engine/tst_jobs.cpp.
#include "jobs/gpu_probe_job.h"

#include <utility>

namespace paralab::jobs {

std::unique_ptr<Job<GpuAvailability>> startGpuProbe(JobCallbacks callbacks) {
  return std::make_unique<Job<GpuAvailability>>(
      [](const ReportProgress& progress) {
        GpuAvailability gpus = gpuAvailability();
        if (progress) progress(1, 1);
        return gpus;
      },
      std::move(callbacks));
}

}  // namespace paralab::jobs
