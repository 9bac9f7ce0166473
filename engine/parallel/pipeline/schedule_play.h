// A pipeline schedule played out in modelled time: every stage runs its list (schedule.h) in
// order, each forward and backward taking a given time, each transfer waiting for its
// neighbour. The projection times its pipelines with it; the engine's tests check with it that
// every schedule's blocking transfers run to the end. See tests/engine/tst_pipeline_schedule.cpp.
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace paralab {

enum class PipeSends {
  Blocking,  // a send waits until the neighbour is at the matching receive (MPI's rendezvous)
  Buffered,  // a send leaves its message and goes on; a receive waits for the message
};

struct PipeTimes {
  std::vector<double> forward;   // per stage: one micro-batch's forward on one chunk, at a core
  std::vector<double> backward;  // the same for its backward (B and W)
  // Per stage: the W part of `backward` when a schedule splits it; empty: half of it (the
  // input and the weight gradient are one GEMM each per layer, as the forward is).
  std::vector<double> weight;
  // The time of `a` on stage k: a forward, a backward, or B or W of a split one.
  double of(PipeAction a, size_t k) const;
  // Cores shared evenly by the stages that can run (a stage waiting in a transfer leaves its
  // share to the others); a stage never runs faster than at one core.
  double cores = std::numeric_limits<double>::infinity();
  PipeSends sends = PipeSends::Blocking;
};

struct PipePlayback {
  double start = 0;          // the first forward's start (the times' unit)
  double end = 0;            // the last backward's end
  std::vector<double> busy;  // per stage: its forwards' and backwards' times, at a core
  double total() const { return end - start; }
  // Per stage, the share of [start, end] in which it did not work.
  std::vector<double> bubble() const;
};

// Plays `plan` (every stage's list, stage 0 first) out; nothing when some stage would wait
// forever (transfers that deadlock, or a list that waits on what never comes). `place` says
// which stage each transfer meets (schedule.h; null: Megatron-LM's placement).
std::optional<PipePlayback> playSchedule(const std::vector<std::vector<PipeStep>>& plan,
                                         const PipeTimes& times, PipePlacement place = nullptr);

// Every stage of `schedule` with forwards taking tf and backwards tb, blocking sends, a core
// each: per stage, the idle share of the pipeline's time; nothing when it deadlocks.
std::optional<std::vector<double>> modelledBubble(const std::string& schedule, int stages,
                                                  int micros, double tf, double tb);

}  // namespace paralab
