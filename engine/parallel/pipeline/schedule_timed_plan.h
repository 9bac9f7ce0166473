// Every stage's list of a schedule from its compute orders (schedule_timed_plan.cpp): what the
// schedules built from a compute order share (interleaved 1F1B, ZB-H1).
// See tests/engine/tst_pipeline_interleaved.cpp and tst_pipeline_zero_bubble.cpp.
#pragma once
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace paralab {

// Every stage's list from `orders`: each stage's forwards and backwards (Backward, or B and W)
// in the order it runs them. `virtualOf(stage, chunk, stages)` places the model: which of the
// stages x chunks virtual stages a stage's chunk holds. A micro-batch's forward on virtual
// stage v waits for its forward on v - 1, its backward (or B) for the same on v + 1 (the last
// virtual stage's for its forward there), its W for its B (the stage's order has it after).
// The orders are played out as soon as their inputs are there, a forward, a B and a W each
// taking 1 and a whole backward 2; then each transfer between two stages gets a time between
// its producer's end and its consumer's start where neither stage is inside a compute if there
// is one, else where the wait is shortest; a step from one chunk into another on the same stage
// needs none. All steps, in the order of their times, go into the stages' lists at once: the
// lists follow one global order, so blocking sends, which wait for their receive, never wait
// in a cycle (Megatron-LM pairs its transfers in non-blocking batches instead).
std::vector<std::vector<PipeStep>> timedPlan(const std::vector<std::vector<PipeStep>>& orders,
                                             int chunks,
                                             int (*virtualOf)(int stage, int chunk, int stages));

}  // namespace paralab
