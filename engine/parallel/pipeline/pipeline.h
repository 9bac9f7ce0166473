// Pipeline parallelism's schedules and bubble: in what order a stage runs its micro-batches'
// forwards and backwards and exchanges activations and gradients with its neighbours (GPipe,
// 1F1B), the bubble measured from a step's spans, and the reference formula beside it.
// The code is in pipeline.cpp; model_parallel.cpp runs a schedule. See
// tests/engine/tst_model_parallel.cpp.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/span_recorder.h"

namespace paralab {

enum class PipeAction {
  RecvAct,  // the micro-batch's residual stream from the previous stage
  Forward,
  SendAct,   // to the next stage
  RecvGrad,  // the gradient of this stage's output, from the next stage
  Backward,
  SendGrad,  // the gradient of this stage's input, to the previous stage
};
const char* pipeActionName(PipeAction a);  // "recv-act", "forward", ...

struct PipeStep {
  PipeAction action;
  int micro;
  bool operator==(const PipeStep&) const = default;
};

// Span labels that name the micro-batch ("forward mb 3"), static as Span::op requires; from
// micro-batch 256 on, plain "forward" / "backward".
const char* microSpanLabel(bool forward, int micro);

// Stage `stage` of `stages`, `micros` micro-batches; schedule "gpipe" or "1f1b". Transfers are
// ordered so that blocking sends (MPI's rendezvous) never wait in a cycle.
std::vector<PipeStep> pipelineSchedule(const std::string& schedule, int stage, int stages,
                                       int micros);

// Most micro-batches whose activations the stage holds at once (forward done, backward not):
// GPipe M; 1F1B min(P - stage, M).
int peakInFlight(const std::vector<PipeStep>& steps);

// The bubble, reference: with P balanced stages and M micro-batches each stage is idle
// (P-1)/(M+P-1) of the pipeline's time (Huang et al. 2019), for GPipe and 1F1B alike.
double bubbleReference(int stages, int micros);

// A stage's pipeline work in one step (StageTimes, metrics.h), from its spans (steady clock,
// ns): the first and last forward/backward span, and the time covered by forward/backward spans
// and by collectives between them (tensor-parallel exchanges are part of a stage's work;
// waiting in a send or recv for a neighbour is not).
StageTimes stageTimes(const std::vector<Span>& spans);
// Measured bubble of each stage: the share of the pipeline's time (first forward to last
// backward on any stage) in which it was not busy.
std::vector<double> measuredBubble(const std::vector<StageTimes>& stages);

// Modelled: every stage runs `schedule` with forwards taking tf and backwards tb, a transfer
// waiting until both sides reach it. Per stage, the idle share of the pipeline's time; nothing
// when some stage would wait forever (a schedule whose transfers deadlock).
std::optional<std::vector<double>> modelledBubble(const std::string& schedule, int stages,
                                                  int micros, double tf, double tb);

}  // namespace paralab
