// False sharing over thread counts (see false_sharing.h), one kernels::false_sharing_experiment
// per count. See tests/engine/tst_teach_bench.cpp and `paralab-bench teach`.
#include "teach/false_sharing.h"

#include <stdexcept>
#include <thread>

#include "cpu/teach.h"

namespace paralab::teach {

FalseSharingSweep runFalseSharing(const FalseSharingOptions& o, const BenchProgress& progress) {
  if (o.maxThreads < 1 || o.maxThreads > 8) throw std::invalid_argument("threads: 1..8");
  if (o.increments < 1) throw std::invalid_argument("increments: 1 or more");
  if (o.repeats < 1) throw std::invalid_argument("repeats: 1 or more");
  FalseSharingSweep s;
  s.increments = o.increments;
  s.cores = int(std::thread::hardware_concurrency());
  for (int t = 1; t <= o.maxThreads; ++t) {
    const kernels::FalseSharingResult r =
        kernels::false_sharing_experiment(o.increments, t, o.repeats);
    s.points.push_back({t, 1e9 * r.packedSeconds / double(o.increments),
                        1e9 * r.paddedSeconds / double(o.increments)});
    if (progress && !progress(t, o.maxThreads)) {
      s.cancelled = t < o.maxThreads;
      break;
    }
  }
  return s;
}

}  // namespace paralab::teach
