// A schedule played out in modelled time (schedule_play.h): a discrete-event loop over the
// stages' lists. See tests/engine/tst_pipeline_schedule.cpp and tst_projection_host.cpp.
#include "parallel/pipeline/schedule_play.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

namespace paralab {

namespace {

struct Endpoint {
  int stage;
  PipeStep step;
};

// The transfer on the other side of `p` on stage s of P whose chunks sit as `place` says
// (virtual stage v's activations go to v + 1, its gradient to v - 1): the neighbour and the
// step it must be at; stage -1 where there is no such virtual stage among `chunks` per stage.
Endpoint partner(const PipeStep& p, int s, int P, int chunks, PipePlacement place) {
  const int v = place(s, p.chunk, P);
  const bool up = p.action == PipeAction::SendAct || p.action == PipeAction::RecvGrad;
  const std::optional<PipeSeat> to = pipeSeat(place, up ? v + 1 : v - 1, P, chunks);
  const int chunk = to ? to->chunk : -1, stage = to ? to->stage : -1;
  switch (p.action) {
    case PipeAction::SendAct:
      return {stage, {PipeAction::RecvAct, p.micro, chunk}};
    case PipeAction::RecvAct:
      return {stage, {PipeAction::SendAct, p.micro, chunk}};
    case PipeAction::SendGrad:
      return {stage, {PipeAction::RecvGrad, p.micro, chunk}};
    case PipeAction::RecvGrad:
      return {stage, {PipeAction::SendGrad, p.micro, chunk}};
    default:
      throw std::invalid_argument("partner: not a transfer");
  }
}

}  // namespace

double PipeTimes::of(PipeAction a, size_t k) const {
  const double w = weight.empty() ? backward[k] / 2 : weight[k];
  switch (a) {
    case PipeAction::Forward:
      return forward[k];
    case PipeAction::Backward:
      return backward[k];
    case PipeAction::BackwardInput:
      return backward[k] - w;
    case PipeAction::BackwardWeight:
      return w;
    default:
      throw std::invalid_argument("PipeTimes::of: not a forward or backward");
  }
}

std::vector<double> PipePlayback::bubble() const {
  std::vector<double> out;
  for (double b : busy) out.push_back(end > start ? 1.0 - b / (end - start) : 0.0);
  return out;
}

std::optional<PipePlayback> playSchedule(const std::vector<std::vector<PipeStep>>& plan,
                                         const PipeTimes& times, PipePlacement place) {
  const int P = int(plan.size());
  if (!place) place = megatronPlacement;
  int chunks = 1;  // as many as the plan's steps name
  for (const std::vector<PipeStep>& steps : plan)
    for (const PipeStep& p : steps) chunks = std::max(chunks, p.chunk + 1);
  const auto at = [](int k) { return size_t(k); };
  std::vector<size_t> pc(at(P), 0);
  std::vector<double> left(at(P), -1);  // of the running forward or backward; -1: none started
  // Buffered sends: the messages left and not yet received, as (stage, the receive they meet).
  std::set<std::tuple<int, int, int, int>> posted;
  const auto key = [](int k, const PipeStep& p) {
    return std::make_tuple(k, int(p.action), p.micro, p.chunk);
  };
  const auto current = [&](int k) -> const PipeStep* {
    return pc[at(k)] < plan[at(k)].size() ? &plan[at(k)][pc[at(k)]] : nullptr;
  };
  // Moves stage k through the transfers it can complete now; true when it moved.
  const auto transfer = [&](int k) {
    bool moved = false;
    for (const PipeStep* p = current(k); p && !isCompute(p->action); p = current(k)) {
      const Endpoint e = partner(*p, k, P, chunks, place);
      if (e.stage < 0) break;  // no neighbour: the stage waits for ever
      const bool send = p->action == PipeAction::SendAct || p->action == PipeAction::SendGrad;
      if (times.sends == PipeSends::Buffered) {
        if (send) {
          posted.insert(key(e.stage, e.step));
        } else {
          const auto it = posted.find(key(k, *p));
          if (it == posted.end()) break;
          posted.erase(it);
        }
      } else {
        const PipeStep* q = current(e.stage);
        if (!q || !(*q == e.step)) break;
        ++pc[at(e.stage)];
      }
      ++pc[at(k)];
      moved = true;
    }
    return moved;
  };

  PipePlayback out;
  out.busy.assign(at(P), 0.0);
  bool started = false;
  double t = 0;
  for (;;) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int k = 0; k < P; ++k) moved = transfer(k) || moved;
    }
    std::vector<int> running;  // stages at a forward or backward
    for (int k = 0; k < P; ++k)
      if (current(k) && isCompute(current(k)->action)) running.push_back(k);
    if (running.empty()) break;
    const double rate = std::min(1.0, times.cores / double(running.size()));
    double step = 1e300;  // until the first running forward or backward finishes
    for (int k : running) {
      double& l = left[at(k)];
      if (l < 0) {
        l = times.of(current(k)->action, at(k));
        if (!started) out.start = t;
        started = true;
      }
      step = std::min(step, l / rate);
    }
    t += step;
    for (int k : running) {
      double& l = left[at(k)];
      l -= step * rate;
      if (l <= 1e-15) {
        out.busy[at(k)] += times.of(current(k)->action, at(k));
        out.end = t;
        ++pc[at(k)];
        l = -1;
      }
    }
  }
  for (int k = 0; k < P; ++k)
    if (current(k)) return std::nullopt;
  return out;
}

std::optional<std::vector<double>> modelledBubble(const std::string& schedule, int P, int M,
                                                  double tf, double tb) {
  const PipeTimes times{.forward = std::vector<double>(size_t(P), tf),
                        .backward = std::vector<double>(size_t(P), tb)};
  const auto played = playSchedule(
      pipelinePlan(pipeScheduleNamed(schedule).schedule, P, M, pipelineChunks(schedule, P, 1)),
      times, pipelinePlacement(schedule));
  if (!played) return std::nullopt;
  return played->bubble();
}

}  // namespace paralab
