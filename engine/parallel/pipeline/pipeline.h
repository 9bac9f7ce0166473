// Pipeline parallelism measured: the bubble of a real step from its spans, and the span labels
// that name micro-batches. The schedules are data (schedule.h), executed by model_parallel.cpp
// and played out in modelled time by schedule_play.h. See tests/engine/tst_model_parallel.cpp.
#pragma once
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_play.h"

namespace paralab {

// Span labels that name the micro-batch ("forward mb 3"), static as Span::op requires; from
// micro-batch 256 on, plain "forward" / "backward".
const char* microSpanLabel(bool forward, int micro);

// A stage's pipeline work in one step (StageTimes, metrics.h), from its spans (steady clock,
// ns): the first and last forward/backward span, and the time covered by forward/backward spans
// and by collectives between them (tensor-parallel exchanges are part of a stage's work;
// waiting in a send or recv for a neighbour is not).
StageTimes stageTimes(const std::vector<Span>& spans);
// Measured bubble of each stage: the share of the pipeline's time (first forward to last
// backward on any stage) in which it was not busy.
std::vector<double> measuredBubble(const std::vector<StageTimes>& stages);

}  // namespace paralab
