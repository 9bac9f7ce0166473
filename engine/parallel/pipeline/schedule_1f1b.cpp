// 1F1B (PipeDream-Flush, Narayanan et al. 2019; Megatron-LM's schedule), `--schedule 1f1b`:
// stage s runs P - s - 1 warm-up forwards, then alternates one forward and one backward, then
// drains the backwards left. A micro-batch's activations are freed by its backward as soon as
// it can run, so a stage holds at most P - s of them: less memory than GPipe, the same bubble.
// See tests/engine/tst_pipeline_schedule.cpp and tst_model_parallel.cpp.
#include <algorithm>
#include <stdexcept>

#include "parallel/pipeline/schedule.h"

namespace paralab {

std::vector<PipeStep> oneFOneBSteps(const PipeShape& shape) {
  if (shape.chunks != 1) throw std::invalid_argument("1f1b: one model chunk per stage");
  const int s = shape.stage, P = shape.stages, M = shape.micros;
  const bool first = s == 0, last = s == P - 1;
  std::vector<PipeStep> out;
  auto add = [&](PipeAction a, int m, bool when = true) {
    if (when) out.push_back({a, m});
  };
  // Where a stage both sends to and receives from one neighbour (Megatron's
  // send_forward_recv_backward and send_backward_recv_forward, done there with non-blocking
  // pairs), the lower stage of the pair sends first and the upper one receives first, so that
  // blocking sends never wait on each other.
  const int warmup = std::min(P - s - 1, M), steady = M - warmup;
  for (int m = 0; m < warmup; ++m) {  // step 1: warm-up forwards
    add(PipeAction::RecvAct, m, !first);
    add(PipeAction::Forward, m);
    add(PipeAction::SendAct, m, !last);
  }
  add(PipeAction::RecvAct, warmup, steady > 0 && !first);
  for (int i = 0; i < steady; ++i) {  // step 2: one forward, one backward
    add(PipeAction::Forward, warmup + i);
    add(PipeAction::SendAct, warmup + i, !last);
    add(PipeAction::RecvGrad, i, !last);
    add(PipeAction::Backward, i);
    if (i + 1 < steady) add(PipeAction::RecvAct, warmup + i + 1, !first);
    add(PipeAction::SendGrad, i, !first);
  }
  for (int m = steady; m < M; ++m) {  // step 3: the backwards left
    add(PipeAction::RecvGrad, m, !last);
    add(PipeAction::Backward, m);
    add(PipeAction::SendGrad, m, !first);
  }
  return out;
}

}  // namespace paralab
