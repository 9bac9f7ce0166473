// The pipeline part of the projection (pipeline_schedule.h). See tests/engine/tst_projection.cpp.
#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <numeric>
#include <vector>

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

double sharedCoresPipelineTime(const std::vector<double>& forward,
                               const std::vector<double>& backward, int m, Schedule s,
                               double cores) {
  const int p = int(forward.size());
  // Each stage's work in order: 'F' or 'B' of micro-batch i.
  struct Op {
    bool forward;
    int microBatch;
  };
  const size_t stages = static_cast<size_t>(p), micro = static_cast<size_t>(m);
  std::vector<std::vector<Op>> order(stages);
  for (int k = 0; k < p; ++k) {
    std::vector<Op>& o = order[size_t(k)];
    if (s == Schedule::GPipe) {
      for (int i = 0; i < m; ++i) o.push_back({true, i});
      for (int i = 0; i < m; ++i) o.push_back({false, i});
      continue;
    }
    // 1F1B: p - k - 1 forwards to fill, then one forward and one backward, then the rest.
    int f = std::min(p - k - 1, m), b = 0;
    for (int i = 0; i < f; ++i) o.push_back({true, i});
    while (b < m) {
      if (f < m) o.push_back({true, f++});
      o.push_back({false, b++});
    }
  }
  // done[k][i]: stage k's forward (backward) of micro-batch i has finished.
  std::vector<std::vector<char>> fDone(stages, std::vector<char>(micro)), bDone = fDone;
  std::vector<size_t> next(stages, 0);
  std::vector<double> left(stages, -1);
  const auto ready = [&](int k) {
    if (next[size_t(k)] >= order[size_t(k)].size()) return false;
    const Op op = order[size_t(k)][next[size_t(k)]];
    const size_t i = size_t(op.microBatch);
    if (op.forward) return k == 0 || fDone[size_t(k - 1)][i] != 0;
    return k == p - 1 ? fDone[size_t(k)][i] != 0 : bDone[size_t(k + 1)][i] != 0;
  };
  double t = 0;
  for (;;) {
    std::vector<int> running;
    for (int k = 0; k < p; ++k)
      if (ready(k)) running.push_back(k);
    if (running.empty()) break;  // every stage has done its work
    const double rate = std::min(1.0, cores / double(running.size()));
    double step = 1e300;  // until the first running operation finishes
    for (int k : running) {
      double& l = left[size_t(k)];
      if (l < 0) {
        const Op op = order[size_t(k)][next[size_t(k)]];
        l = op.forward ? forward[size_t(k)] : backward[size_t(k)];
      }
      step = std::min(step, l / rate);
    }
    t += step;
    for (int k : running) {
      double& l = left[size_t(k)];
      l -= step * rate;
      if (l <= 1e-15) {
        const Op op = order[size_t(k)][next[size_t(k)]++];
        (op.forward ? fDone : bDone)[size_t(k)][size_t(op.microBatch)] = 1;
        l = -1;
      }
    }
  }
  return t;
}

}  // namespace paralab::projection
