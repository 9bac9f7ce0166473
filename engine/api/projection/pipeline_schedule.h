// The pipeline part of the projection: how long m micro-batches take through p stages under
// GPipe (Huang et al. 2019: all forwards, then all backwards) or 1F1B (PipeDream-Flush,
// Narayanan et al. 2021 §2.2.1), optionally interleaved over v model chunks per GPU (§2.2.2),
// and how many micro-batches' activations a stage holds at once. The schedules, the bubble
// formula and the simulator are the engine's (parallel/pipeline/schedule.h, schedule_play.h).
// See tests/engine/tst_projection.cpp (bubbleIsTheFillAndDrain) and tst_projection_host.cpp.
#pragma once
#include <string>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace paralab::projection {

using Schedule = PipeSchedule;
Schedule parseSchedule(const std::string& name);  // "gpipe" | "1f1b"; throws ConfigError
const char* scheduleName(Schedule s);

// The bubble's share of the step for equal stages (schedule.h).
using paralab::bubbleFraction;

struct PipelineTime {
  double total = 0;   // seconds from the first forward to the last backward
  double bubble = 0;  // of which the busiest stage idles
};
// `slot[k]`: stage k's forward and backward of one micro-batch (seconds, its communication on
// the critical path included). The busiest stage works m slots; the others' fill and drain add
// (sum - max) / v: total = m max + (sum - max) / v, which for p equal slots is
// (m + (p - 1) / v) slot.
// `fill` scales the fill and drain for a schedule whose bubble is not the plain one (fillShare).
PipelineTime pipelineTime(const std::vector<double>& slot, int m, int v = 1, double fill = 1);
// A schedule's fill and drain as a share of 1F1B's (interleaved over v: its own), from its
// row's bubble formula (schedule.h: equal forward, B and W times): ZB-H1 fills (P - 1)/3 slots
// where 1F1B fills P - 1, a third; 1 for the schedules whose bubble is the plain one.
double fillShare(Schedule s, int p, int m, int v);

// p stages on fewer cores than stages (ranks as threads on a CPU): the schedule's lists played
// out in time (playSchedule, buffered sends as between threads), each stage running its
// forwards and backwards in the schedule's order as soon as their inputs are there, the cores
// shared evenly by the stages that can run. `forward[k]`, `backward[k]`: one micro-batch on
// stage k with a core to itself, seconds. Returns the time from the first forward to the last
// backward; with a core per stage and equal stages, (m + p - 1) slots.
double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m, Schedule s,
                               double cores);

// Micro-batches whose activations stage k (0-based) of p holds at its peak: the schedule's
// peakInFlight (GPipe all m, 1F1B at most p - k); interleaving adds the chunks in flight during
// warm-up: stage 0 holds p (1 + (p - 1) / (p v)) micro-batches' worth (Narayanan et al. 2021
// §2.2.2), spread over its v chunks.
double microBatchesInFlight(Schedule s, int p, int m, int k, int v = 1);

}  // namespace paralab::projection
