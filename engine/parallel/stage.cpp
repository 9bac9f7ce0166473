// The stage of a shard, whichever model it is (see stage.h).
#include "parallel/stage.h"

#include <stdexcept>

#include "model/gpt.h"
#include "model/mlp.h"
#include "parallel/gpt_parallel.h"
#include "parallel/tensor_parallel.h"

namespace paralab {

void Stage::reuse(MicroActs& m, int micro, int samples) const {
  if (samples > m.capacity) throw std::logic_error("Stage::reuse: buffers too small");
  m.micro = micro;
  m.r = rowsOf(samples);
}

std::unique_ptr<Stage> makeStage(Model& shard, Communicator& tp, bool sp, Compute& compute,
                                 MemoryTracker* memory, SpanRecorder* spans) {
  if (auto* mlp = dynamic_cast<Mlp*>(&shard))
    return std::make_unique<TensorParallelStage>(*mlp, tp, sp, compute, memory, spans);
  if (auto* gpt = dynamic_cast<Gpt*>(&shard))
    return std::make_unique<GptStage>(*gpt, tp, sp, compute, memory, spans);
  throw std::invalid_argument("makeStage: the model has no pipeline stage");
}

}  // namespace paralab
