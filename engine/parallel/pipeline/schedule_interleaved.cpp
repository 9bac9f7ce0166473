// Interleaved 1F1B (Narayanan et al. 2021 §2.2.2; Megatron-LM's interleaved schedule),
// `--schedule interleaved --virtual-stages V`: each stage holds V model chunks (virtual stage
// c·P + s), so a micro-batch crosses every stage V times and the fill and drain shrink V-fold.
// Try: paralab-run --pp 2 --layers 4 --microbatches 4 --schedule interleaved --virtual-stages 2
// See tests/engine/tst_pipeline_interleaved.cpp.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "parallel/pipeline/schedule.h"

namespace paralab {

namespace {

struct ChunkOp {
  bool forward;
  int micro, chunk;
};

// Stage s's forwards and backwards in Megatron-LM's order: the chunks taken P micro-batches at
// a time (chunk 0 for micro-batches 0..P-1, then chunk 1 for them, ...), backwards from the
// last chunk; 2(P - s - 1) + (V - 1)P warm-up forwards (all of them when M = P), then one
// forward and one backward, then the backwards left.
std::vector<ChunkOp> computeOrder(int s, int P, int M, int V) {
  const int total = M * V;
  const int warmup = M == P ? total : std::min(total, 2 * (P - s - 1) + (V - 1) * P);
  const auto op = [&](int k, bool forward) {
    const int c = (k % (P * V)) / P;
    return ChunkOp{forward, (k / (P * V)) * P + k % P, forward ? c : V - 1 - c};
  };
  std::vector<ChunkOp> out;
  for (int k = 0; k < warmup; ++k) out.push_back(op(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(op(warmup + k, true));
    out.push_back(op(k, false));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(op(k, false));
  return out;
}

// Every stage's list. The compute orders are played out as soon as their inputs are there (a
// forward taking 1, a backward 2), which gives each forward and backward its time; then each
// transfer gets a time between its producer's end and its consumer's start, where neither
// stage is inside a compute if there is one, else where the wait is shortest. All steps, in
// the order of their times, go into the stages' lists at once: the lists follow one global
// order, so blocking sends, which wait for their receive, never wait in a cycle (Megatron-LM
// pairs its transfers in non-blocking batches instead).
std::vector<std::vector<PipeStep>> interleavedPlan(int P, int M, int V) {
  const int last = P * V - 1;
  struct Timed {
    double start, end;
    ChunkOp op;
  };
  std::vector<std::vector<ChunkOp>> orders;
  for (int s = 0; s < P; ++s) orders.push_back(computeOrder(s, P, M, V));
  // [SECTION] The computes' times. done: (forward?, micro-batch, virtual stage) -> its end.
  std::map<std::tuple<bool, int, int>, double> done;
  std::vector<std::vector<Timed>> timed(static_cast<size_t>(P));
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < P; ++s) {
      std::vector<Timed>& t = timed[size_t(s)];
      while (t.size() < orders[size_t(s)].size()) {
        const ChunkOp o = orders[size_t(s)][t.size()];
        const int v = o.chunk * P + s;
        double ready = t.empty() ? 0 : t.back().end;
        if (o.forward ? v > 0 : v < last) {  // its input comes from a neighbour
          const auto in = done.find({o.forward, o.micro, o.forward ? v - 1 : v + 1});
          if (in == done.end()) break;
          ready = std::max(ready, in->second);
        }
        t.push_back({ready, ready + (o.forward ? 1 : 2), o});
        done[{o.forward, o.micro, v}] = t.back().end;
        moved = true;
      }
    }
  }
  for (int s = 0; s < P; ++s)
    if (timed[size_t(s)].size() < orders[size_t(s)].size())
      throw std::logic_error("interleaved: the compute orders wait on each other");
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
      const ChunkOp& o = c.op;
      events.push_back({c.start,
                        1,
                        int(events.size()),
                        s,
                        s,
                        {o.forward ? PipeAction::Forward : PipeAction::Backward, o.micro, o.chunk},
                        {}});
      const int v = o.chunk * P + s;
      if (o.forward ? v == last : v == 0) continue;  // nothing to send on
      const int w = o.forward ? v + 1 : v - 1, to = w % P;
      double consume = 0;
      for (const Timed& d : timed[size_t(to)])
        if (d.op.forward == o.forward && d.op.micro == o.micro && d.op.chunk == w / P)
          consume = d.start;
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
      const PipeAction send = o.forward ? PipeAction::SendAct : PipeAction::SendGrad;
      const PipeAction recv = o.forward ? PipeAction::RecvAct : PipeAction::RecvGrad;
      events.push_back(
          {when, 0, int(events.size()), s, to, {send, o.micro, o.chunk}, {recv, o.micro, w / P}});
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

}  // namespace

std::vector<PipeStep> oneFOneBSteps(const PipeShape& shape);  // schedule_1f1b.cpp

std::vector<PipeStep> interleavedSteps(const PipeShape& shape) {
  if (shape.chunks == 1) return oneFOneBSteps(shape);  // one chunk: interleaving nothing
  if (shape.chunks > 1 && shape.micros % shape.stages != 0)
    throw std::invalid_argument("interleaved: micro-batches must be a multiple of the stages");
  return interleavedPlan(shape.stages, shape.micros, shape.chunks)[size_t(shape.stage)];
}

std::optional<std::string> interleavedRefusal(const PipeShape& shape) {
  if (shape.chunks < 2 || shape.micros % shape.stages == 0) return std::nullopt;
  return "microbatches: the interleaved schedule needs a multiple of pp = " +
         std::to_string(shape.stages) + " micro-batches (Narayanan et al. 2021 §2.2.2), not " +
         std::to_string(shape.micros);
}

}  // namespace paralab
