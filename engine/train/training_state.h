// TrainingState: everything a run needs to go on from where it is under another parallel
// layout — the full parameters and optimizer state in the serial (flat) layout, and how many
// steps were taken. Strategies save into it (gathering their shards) and load from it
// (taking theirs): live reconfiguration, and checkpoints (checkpoint.h). The step is also the
// data position: step s's global batch is drawn from the seed, s and the global batch size
// (BatchSampler), so a run that goes on from `step` takes the batches the uninterrupted run
// would have. See tests/engine/tst_reconfigure.cpp, tst_checkpoint.cpp,
// tst_precision_checkpoint.cpp.
#pragma once
#include <cstdint>
#include <vector>

namespace paralab {

// fp16's dynamic loss scale (train/precision.h's LossScaler) as it stands between steps.
struct LossScaleState {
  double scale = 0;     // the scale the next step runs at; 0: none saved (fp32, bf16)
  int64_t clean = 0;    // clean steps since the last overflow or growth
  int64_t skipped = 0;  // steps skipped on an overflow so far
};

struct TrainingState {
  int64_t step = 0;                // steps done so far
  std::vector<float> params;       // P floats, the flat layout of ParamSet
  std::vector<float> optM, optV;   // momentum buffer / Adam moments, P floats each (or empty)
  int64_t optimizerSteps = 0;      // Adam's t (bias correction)
  // Mixed precision: the fp32 master copy the optimizer updates, P floats in the same layout
  // (empty in fp32, or when not saved: the master is then taken from the 16-bit `params`).
  std::vector<float> master;
  LossScaleState lossScale;
};

}  // namespace paralab
