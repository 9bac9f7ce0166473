// The pipeline part of the projection (pipeline_schedule.h), on the engine's schedules.
// See tests/engine/tst_projection.cpp and tst_projection_host.cpp.
#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "parallel/pipeline/schedule_play.h"

namespace paralab::projection {

Schedule parseSchedule(const std::string& name) { return pipeScheduleNamed(name).schedule; }

const char* scheduleName(Schedule s) { return pipeSchedule(s).name; }

double fillShare(Schedule s, int p, int m, int v) {
  const double plain = bubbleFraction(p, m, v), own = scheduleBubble(scheduleName(s), p, m, v);
  if (plain <= 0 || plain >= 1 || own >= 1) return 1;
  // A bubble fraction b of m slots of work is a fill of m b / (1 - b) slots.
  return (own / (1 - own)) / (plain / (1 - plain));
}

PipelineTime pipelineTime(const std::vector<double>& slot, int m, int v, double fill) {
  PipelineTime t;
  if (slot.empty()) return t;
  const double busiest = *std::max_element(slot.begin(), slot.end());
  const double sum = std::accumulate(slot.begin(), slot.end(), 0.0);
  t.bubble = fill * (sum - busiest) / std::max(1, v);
  t.total = m * busiest + t.bubble;
  return t;
}

double microBatchesInFlight(Schedule s, int p, int m, int k, int v) {
  // A schedule that interleaves is played with its v chunks, each forward keeping a chunk's
  // activations: 1/v of a micro-batch's. Otherwise v chunks add Narayanan et al.'s share of the
  // chunks in flight during the warm-up to the plain schedule's peak.
  // A row with chunks of its own (zb-v: two in a V) is played with them, whatever v says.
  const int chunks =
      pipeSchedule(s).interleaves ? std::max(1, v) : std::max(1, pipeSchedule(s).chunks);
  double held = peakInFlight(pipelineSchedule(
                    s, PipeShape{.stage = k, .stages = p, .micros = m, .chunks = chunks})) /
                double(chunks);
  if (chunks == 1 && v > 1 && s != Schedule::GPipe) held *= 1 + double(p - 1) / (double(p) * v);
  return std::min<double>(held, m);
}

double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m, Schedule s,
                               double cores) {
  const int p = int(forward.size());
  // A row with chunks of its own (zb-v) plays them, each 1/chunks of the stage's times.
  const PipeScheduleRow& row = pipeSchedule(s);
  const double chunks = std::max(1, row.chunks);
  std::vector<double> f = forward, b = backward;
  for (double& t : f) t /= chunks;
  for (double& t : b) t /= chunks;
  const auto played = playSchedule(
      pipelinePlan(s, p, m, int(chunks)),
      PipeTimes{.forward = f, .backward = b, .cores = cores, .sends = PipeSends::Buffered},
      row.place);
  if (!played) throw std::logic_error("sharedCoresPipelineTime: the schedule deadlocks");
  return played->end;
}

}  // namespace paralab::projection
