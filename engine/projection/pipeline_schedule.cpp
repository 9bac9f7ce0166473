// The pipeline part of the projection (pipeline_schedule.h). See tests/engine/tst_projection.cpp.
#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <numeric>

#include "config.h"  // ConfigError

namespace paralab::projection {

Schedule parseSchedule(const std::string& name) {
  if (name == "gpipe") return Schedule::GPipe;
  if (name == "1f1b") return Schedule::OneFOneB;
  throw ConfigError("schedule: '" + name + "' is not a pipeline schedule (allowed: 1f1b, gpipe)");
}

const char* scheduleName(Schedule s) { return s == Schedule::GPipe ? "gpipe" : "1f1b"; }

double bubbleFraction(int p, int m, int v) {
  const double fill = double(p - 1) / std::max(1, v);
  return fill / (m + fill);
}

PipelineTime pipelineTime(const std::vector<double>& slot, int m, int v) {
  PipelineTime t;
  if (slot.empty()) return t;
  const double busiest = *std::max_element(slot.begin(), slot.end());
  const double sum = std::accumulate(slot.begin(), slot.end(), 0.0);
  t.bubble = (sum - busiest) / std::max(1, v);
  t.total = m * busiest + t.bubble;
  return t;
}

double microBatchesInFlight(Schedule s, int p, int m, int k, int v) {
  if (s == Schedule::GPipe) return m;
  double held = std::min(m, p - k);
  if (v > 1) held *= 1 + double(p - 1) / (double(p) * v);
  return std::min<double>(held, m);
}

}  // namespace paralab::projection
