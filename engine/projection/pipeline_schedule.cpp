// The pipeline part of the projection (pipeline_schedule.h), on the engine's schedules and a
// learner's schedule file, played out with the engine's simulator.
// See tests/engine/tst_projection.cpp and tst_projection_schedule_file.cpp.
#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "parallel/pipeline/schedule_file.h"  // pipelineSteps
#include "parallel/pipeline/schedule_play.h"

namespace paralab::projection {

Schedule parseSchedule(const std::string& name) { return pipeScheduleNamed(name).schedule; }

const char* scheduleName(Schedule s) { return pipeSchedule(s).name; }

PipelineTime pipelineTime(const std::vector<double>& slot, int m, int v, double fill) {
  PipelineTime t;
  if (slot.empty()) return t;
  const double busiest = *std::max_element(slot.begin(), slot.end());
  const double sum = std::accumulate(slot.begin(), slot.end(), 0.0);
  t.bubble = fill * (sum - busiest) / std::max(1, v);
  t.total = m * busiest + t.bubble;
  return t;
}

std::vector<std::vector<PipeStep>> schedulePlan(const std::string& schedule, int p, int m,
                                                int chunks) {
  std::vector<std::vector<PipeStep>> plan;
  for (int k = 0; k < p; ++k)
    plan.push_back(
        pipelineSteps(schedule, PipeShape{.stage = k, .stages = p, .micros = m, .chunks = chunks}));
  return plan;
}

ScheduleShape scheduleShape(const std::string& schedule, int p, int m, int v) {
  const int chunks = pipelineChunks(schedule, p, v);
  const auto plan = schedulePlan(schedule, p, m, chunks);
  ScheduleShape shape;
  // A forward 1, B 1 and W 1 on each chunk (PipeTimes: W half the backward): a stage works
  // 3 m chunks, and the plain schedule fills and drains 3 (p - 1) of them. Buffered sends: each
  // compute runs once its input is there; where the engine's blocking sends sit between the
  // computes is its own concern (the projection's sends are timed in the slots).
  if (p > 1) {
    const auto played = playSchedule(plan,
                                     PipeTimes{.forward = std::vector<double>(size_t(p), 1.0),
                                               .backward = std::vector<double>(size_t(p), 2.0),
                                               .sends = PipeSends::Buffered},
                                     pipelinePlacement(schedule));
    if (!played) throw std::logic_error("scheduleShape: the schedule's lists deadlock");
    shape.fill = (played->total() - 3.0 * m * chunks) / (3.0 * (p - 1));
    // In the chunks' own slots; pipelineTime divides by the v an interleaved layout names, so a
    // row with more chunks of its own (zb-v's two halves of a stage) scales here.
    if (chunks > std::max(1, v)) shape.fill /= chunks;
  }
  const bool warmUp = chunks == 1 && v > 1 && schedule != scheduleName(Schedule::GPipe);
  for (int k = 0; k < p; ++k) {
    double held = peakInFlight(plan[size_t(k)]) / double(chunks);
    if (warmUp) held *= 1 + double(p - 1) / (double(p) * v);
    shape.held.push_back(std::min<double>(held, m));
  }
  return shape;
}

double fillShare(Schedule s, int p, int m, int v) {
  return scheduleShape(scheduleName(s), p, m, v).fill;
}

double microBatchesInFlight(Schedule s, int p, int m, int k, int v) {
  return scheduleShape(scheduleName(s), p, m, v).held[size_t(k)];
}

double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m,
                               const std::string& schedule, double cores) {
  const int p = int(forward.size());
  // A row with chunks of its own (zb-v) plays them, each 1/chunks of the stage's times.
  const int chunks = pipelineChunks(schedule, p, 1);
  std::vector<double> f = forward, b = backward;
  for (double& t : f) t /= chunks;
  for (double& t : b) t /= chunks;
  const auto played = playSchedule(
      schedulePlan(schedule, p, m, chunks),
      PipeTimes{.forward = f, .backward = b, .cores = cores, .sends = PipeSends::Buffered},
      pipelinePlacement(schedule));
  if (!played) throw std::logic_error("sharedCoresPipelineTime: the schedule deadlocks");
  return played->end;
}

double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m, Schedule s,
                               double cores) {
  return sharedCoresPipelineTime(forward, backward, m, scheduleName(s), cores);
}

}  // namespace paralab::projection
