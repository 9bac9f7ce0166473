// The pipeline part of the projection: how long m micro-batches take through p stages under
// GPipe (Huang et al. 2019: all forwards, then all backwards), 1F1B (PipeDream-Flush,
// Narayanan et al. 2021 §2.2.1), interleaved 1F1B over v model chunks per GPU (§2.2.2), ZB-H1
// (Qi et al. 2023) or a learner's schedule file (--schedule FILE), and how many micro-batches'
// activations a stage holds at once. The schedules, the file's checks and the simulator are the
// engine's (parallel/pipeline/schedule.h, schedule_file.h, schedule_play.h): a schedule's fill
// and peaks come from playing the lists the trainer runs. See tests/engine/tst_projection.cpp
// (bubbleIsTheFillAndDrain), tst_projection_schedule_file.cpp and tst_projection_host.cpp.
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
// `fill` scales the fill and drain for a schedule whose bubble is not the plain one
// (ScheduleShape::fill).
PipelineTime pipelineTime(const std::vector<double>& slot, int m, int v = 1, double fill = 1);

// Every stage's list of --schedule `schedule`, a row of the table or a learner's file, for p
// stages, m micro-batches and `chunks` model chunks per stage: pipelineSteps, the lists the
// trainer runs. Throws ConfigError with the file's refusal.
std::vector<std::vector<PipeStep>> schedulePlan(const std::string& schedule, int p, int m,
                                                int chunks);

// A schedule as the projection uses it, from its lists played out in time (playSchedule,
// buffered sends: each compute as soon as its input is there) with one block's forward,
// input-gradient and weight-gradient times in the ratio of their GEMMs' FLOPs, 1 : 1 : 1 (a
// backward twice a forward), on a chunk each:
//  - fill: its fill and drain as a share of the plain schedule's (p - 1)(F + B + W) over its
//    chunks: 1 for GPipe, 1F1B and interleaved 1F1B, (F + B - W)/(F + B + W) = 1/3 for ZB-H1
//    (Qi et al. 2023 §3.1), what the file's order gives for a file;
//  - held[k]: the micro-batches whose activations stage k holds at its peak (peakInFlight of
//    its list, a chunk's forward keeping 1/chunks of a micro-batch's): GPipe m, 1F1B
//    min(p - k, m). A schedule that does not interleave, given v > 1 by a caller of project(),
//    adds Narayanan et al.'s chunks in flight during the warm-up: stage 0 holds
//    p (1 + (p - 1) / (p v)) micro-batches' worth (§2.2.2).
// The built-in schedules and a file go through this one function. Throws ConfigError with a
// file's refusal, std::logic_error when a list cannot be played to its end.
struct ScheduleShape {
  double fill = 1;
  std::vector<double> held;  // per stage
};
ScheduleShape scheduleShape(const std::string& schedule, int p, int m, int v = 1);

// The same for a row of the table.
double fillShare(Schedule s, int p, int m, int v);
double microBatchesInFlight(Schedule s, int p, int m, int k, int v = 1);

// p stages on fewer cores than stages (ranks as threads on a CPU): the schedule's lists played
// out in time (playSchedule, buffered sends as between threads), each stage running its
// forwards and backwards in the schedule's order as soon as their inputs are there, the cores
// shared evenly by the stages that can run. `forward[k]`, `backward[k]`: one micro-batch on
// stage k with a core to itself, seconds. Returns the time from the first forward to the last
// backward; with a core per stage and equal stages, (m + p - 1) slots.
double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m,
                               const std::string& schedule, double cores);
double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m, Schedule s,
                               double cores);

}  // namespace paralab::projection
