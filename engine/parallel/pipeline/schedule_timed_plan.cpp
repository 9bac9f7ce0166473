// Every stage's list from its compute order alone, what the timed schedules share (interleaved
// 1F1B, ZB-H1): the computes are played out, and each transfer is placed where it costs nothing,
// in one global order, so that blocking sends never wait in a cycle.
// See tests/engine/tst_pipeline_interleaved.cpp and tst_pipeline_zero_bubble.cpp.
#include "parallel/pipeline/schedule_timed_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace paralab {

std::vector<std::vector<PipeStep>> timedPlan(const std::vector<std::vector<PipeStep>>& orders,
                                             int chunks,
                                             int (*virtualOf)(int stage, int chunk, int stages)) {
  const int P = int(orders.size()), last = P * chunks - 1;
  std::map<int, std::pair<int, int>> placed;  // virtual stage -> (stage, chunk)
  for (int s = 0; s < P; ++s)
    for (int c = 0; c < chunks; ++c) placed[virtualOf(s, c, P)] = {s, c};
  const auto vOf = [&](int s, int c) { return virtualOf(s, c, P); };
  struct Timed {
    double start, end;
    PipeStep op;
  };
  // [SECTION] The computes' times. done: (action, micro-batch, virtual stage) -> its end.
  std::map<std::tuple<PipeAction, int, int>, double> done;
  std::vector<std::vector<Timed>> timed(static_cast<size_t>(P));
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < P; ++s) {
      std::vector<Timed>& t = timed[size_t(s)];
      while (t.size() < orders[size_t(s)].size()) {
        const PipeStep o = orders[size_t(s)][t.size()];
        const int v = vOf(s, o.chunk);
        double ready = t.empty() ? 0 : t.back().end;
        std::optional<std::tuple<PipeAction, int, int>> input;
        if (o.action == PipeAction::Forward && v > 0) input = {PipeAction::Forward, o.micro, v - 1};
        if (o.action == PipeAction::Backward || o.action == PipeAction::BackwardInput)
          input = v < last ? std::tuple{o.action, o.micro, v + 1}
                           : std::tuple{PipeAction::Forward, o.micro, v};
        if (input) {
          const auto in = done.find(*input);
          if (in == done.end()) break;
          ready = std::max(ready, in->second);
        }
        t.push_back({ready, ready + (o.action == PipeAction::Backward ? 2 : 1), o});
        done[{o.action, o.micro, v}] = t.back().end;
        moved = true;
      }
    }
  }
  for (int s = 0; s < P; ++s)
    if (timed[size_t(s)].size() < orders[size_t(s)].size())
      throw std::logic_error("timed plan: the compute orders wait on each other");
  // The end of the compute stage s is inside at time x, or x where it is at none.
  const auto freeAt = [&](int s, double x) {
    for (const Timed& c : timed[size_t(s)])
      if (c.start < x && x < c.end) return c.end;
    return x;
  };
  // [SECTION] Every step with its time; transfers before computes that start with them.
  struct Event {
    double time;
    int kind;  // 0 transfer, 1 compute
    int seq;   // the order they were made in, for equal times
    int from, to;
    PipeStep step, other;  // a transfer: the sender's step and the receiver's
  };
  std::vector<Event> events;
  for (int s = 0; s < P; ++s)
    for (const Timed& c : timed[size_t(s)]) {
      const PipeStep& o = c.op;
      events.push_back({c.start, 1, int(events.size()), s, s, o, {}});
      const bool forward = o.action == PipeAction::Forward;
      const int v = vOf(s, o.chunk);
      if (o.action == PipeAction::BackwardWeight || (forward ? v == last : v == 0)) continue;
      const auto [to, toChunk] = placed.at(forward ? v + 1 : v - 1);
      if (to == s) continue;  // the next chunk on this stage: no transfer
      double consume = 0;
      for (const Timed& d : timed[size_t(to)])
        if (d.op == PipeStep{o.action, o.micro, toChunk}) consume = d.start;
      // The first time in [produced, consumed] where both are between computes; else the end
      // that keeps the other waiting least.
      std::vector<double> candidates{c.end};
      for (int k : {s, to})
        for (const Timed& d : timed[size_t(k)])
          if (d.end >= c.end && d.end <= consume) candidates.push_back(d.end);
      candidates.push_back(consume);
      std::sort(candidates.begin(), candidates.end());
      double when = -1;
      for (double x : candidates)
        if (freeAt(s, x) == x && freeAt(to, x) == x) {
          when = x;
          break;
        }
      if (when < 0)
        when = freeAt(to, c.end) - c.end <= freeAt(s, consume) - consume ? c.end : consume;
      const PipeAction send = forward ? PipeAction::SendAct : PipeAction::SendGrad;
      const PipeAction recv = forward ? PipeAction::RecvAct : PipeAction::RecvGrad;
      events.push_back(
          {when, 0, int(events.size()), s, to, {send, o.micro, o.chunk}, {recv, o.micro, toChunk}});
    }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.kind, a.seq) < std::tie(b.time, b.kind, b.seq);
  });
  std::vector<std::vector<PipeStep>> plan(static_cast<size_t>(P));
  for (const Event& e : events) {
    plan[size_t(e.from)].push_back(e.step);
    if (e.kind == 0) plan[size_t(e.to)].push_back(e.other);
  }
  return plan;
}

}  // namespace paralab
