// TrainingState: everything a run needs to go on from where it is under another parallel
// layout — the full parameters and optimizer state in the serial (flat) layout, and how many
// steps were taken. Strategies save into it (gathering their shards) and load from it
// (taking theirs): live reconfiguration, and checkpoints (checkpoint.h). The step is also the
// data position: step s's global batch is drawn from the seed, s and the global batch size
// (BatchSampler), so a run that goes on from `step` takes the batches the uninterrupted run
// would have. See tests/engine/tst_reconfigure.cpp, tst_checkpoint.cpp.
#pragma once
#include <cstdint>
#include <vector>

namespace paralab {

struct TrainingState {
  int64_t step = 0;                // steps done so far
  std::vector<float> params;       // P floats, the flat layout of ParamSet
  std::vector<float> optM, optV;   // momentum buffer / Adam moments, P floats each (or empty)
  int64_t optimizerSteps = 0;      // Adam's t (bias correction)
};

}  // namespace paralab
