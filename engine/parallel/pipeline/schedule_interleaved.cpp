// Interleaved 1F1B (Narayanan et al. 2021 §2.2.2; Megatron-LM's interleaved schedule),
// `--schedule interleaved --virtual-stages V`: each stage holds V model chunks (virtual stage
// c·P + s), so a micro-batch crosses every stage V times and the fill and drain shrink V-fold.
// Try: paralab-run --pp 2 --layers 4 --microbatches 4 --schedule interleaved --virtual-stages 2
// See tests/engine/tst_pipeline_interleaved.cpp.
#include <algorithm>
#include <stdexcept>

#include "parallel/pipeline/schedule_timed_plan.h"

namespace paralab {

namespace {

// Stage s's forwards and backwards in Megatron-LM's order: the chunks taken P micro-batches at
// a time (chunk 0 for micro-batches 0..P-1, then chunk 1 for them, ...), backwards from the
// last chunk; 2(P - s - 1) + (V - 1)P warm-up forwards (all of them when M = P), then one
// forward and one backward, then the backwards left.
std::vector<PipeStep> computeOrder(int s, int P, int M, int V) {
  const int total = M * V;
  const int warmup = M == P ? total : std::min(total, 2 * (P - s - 1) + (V - 1) * P);
  const auto op = [&](int k, bool forward) {
    const int c = (k % (P * V)) / P;
    return PipeStep{forward ? PipeAction::Forward : PipeAction::Backward,
                    (k / (P * V)) * P + k % P, forward ? c : V - 1 - c};
  };
  std::vector<PipeStep> out;
  for (int k = 0; k < warmup; ++k) out.push_back(op(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(op(warmup + k, true));
    out.push_back(op(k, false));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(op(k, false));
  return out;
}

// Megatron-LM's placement: chunk c of stage s is virtual stage c·P + s.
int megatronVirtual(int stage, int chunk, int stages) { return chunk * stages + stage; }

// Every stage's list: the compute orders timed, the transfers placed in one global order
// (schedule_timed_plan.h).
std::vector<std::vector<PipeStep>> interleavedPlan(int P, int M, int V) {
  std::vector<std::vector<PipeStep>> orders;
  for (int s = 0; s < P; ++s) orders.push_back(computeOrder(s, P, M, V));
  return timedPlan(orders, V, megatronVirtual);
}

}  // namespace

std::vector<PipeStep> oneFOneBSteps(const PipeShape& shape);  // schedule_1f1b.cpp

std::vector<PipeStep> interleavedSteps(const PipeShape& shape) {
  if (shape.chunks == 1) return oneFOneBSteps(shape);  // one chunk: interleaving nothing
  if (shape.chunks > 1 && shape.micros % shape.stages != 0)
    throw std::invalid_argument("interleaved: micro-batches must be a multiple of the stages");
  return interleavedPlan(shape.stages, shape.micros, shape.chunks)[size_t(shape.stage)];
}

std::optional<std::string> interleavedRefusal(const PipeShape& shape) {
  if (shape.chunks < 2 || shape.micros % shape.stages == 0) return std::nullopt;
  return "microbatches: the interleaved schedule needs a multiple of pp = " +
         std::to_string(shape.stages) + " micro-batches (Narayanan et al. 2021 §2.2.2), not " +
         std::to_string(shape.micros);
}

}  // namespace paralab
