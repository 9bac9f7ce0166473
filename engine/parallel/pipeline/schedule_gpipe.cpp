// GPipe (Huang et al. 2019), `--schedule gpipe`: every micro-batch's forward, then every
// backward, last micro-batch first. A stage holds all M micro-batches' activations at the turn.
// Try: paralab-run --pp 2 --layers 4 --microbatches 8 --schedule gpipe --json   (see "bubble")
// See tests/engine/tst_pipeline_schedule.cpp and tst_model_parallel.cpp.
#include <stdexcept>

#include "parallel/pipeline/schedule.h"

namespace paralab {

std::vector<PipeStep> gpipeSteps(const PipeShape& shape) {
  if (shape.chunks != 1) throw std::invalid_argument("gpipe: one model chunk per stage");
  const int s = shape.stage, P = shape.stages, M = shape.micros;
  const bool first = s == 0, last = s == P - 1;
  std::vector<PipeStep> out;
  auto add = [&](PipeAction a, int m, bool when = true) {
    if (when) out.push_back({a, m});
  };
  for (int m = 0; m < M; ++m) {  // fill: every forward
    add(PipeAction::RecvAct, m, !first);
    add(PipeAction::Forward, m);
    add(PipeAction::SendAct, m, !last);
  }
  for (int m = M - 1; m >= 0; --m) {  // drain: every backward, last micro-batch first
    add(PipeAction::RecvGrad, m, !last);
    add(PipeAction::Backward, m);
    add(PipeAction::SendGrad, m, !first);
  }
  return out;
}

}  // namespace paralab
