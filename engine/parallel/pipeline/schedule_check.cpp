// The checker of a learner's schedule table (schedule_file.h) and the derivation of its sends
// and receives, which the checker and the model-parallel runner share. Each fault names the
// first action at fault: its rank, its slot (1-based, as a spreadsheet counts columns), why.
// See tests/engine/tst_schedule_file.cpp.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "parallel/pipeline/schedule_file.h"
#include "parallel/pipeline/schedule_play.h"

namespace paralab {

namespace {

struct Op {
  PipeStep step;  // Forward, Backward, BackwardInput or BackwardWeight
  int slot;       // its column in the table, from 0
};

std::string n(int v) { return std::to_string(v); }

// Every rank's computes, B resolved: the input half where the rank holds W of that micro-batch
// and chunk, else the whole backward.
std::vector<std::vector<Op>> computes(const ScheduleGrid& grid) {
  std::vector<std::vector<Op>> out;
  for (const auto& row : grid) {
    std::vector<Op>& ops = out.emplace_back();
    const auto holdsW = [&](const ScheduleCell& c) {
      return std::any_of(row.begin(), row.end(), [&](const ScheduleCell& o) {
        return o.kind == 'W' && o.micro == c.micro && o.chunk == c.chunk;
      });
    };
    for (size_t j = 0; j < row.size(); ++j) {
      const ScheduleCell& c = row[j];
      PipeAction a = PipeAction::Forward;
      switch (c.kind) {
        case 0:
          continue;
        case 'B':
          a = holdsW(c) ? PipeAction::BackwardInput : PipeAction::Backward;
          break;
        case 'I':
          a = PipeAction::BackwardInput;
          break;
        case 'W':
          a = PipeAction::BackwardWeight;
          break;
      }
      ops.push_back({{a, c.micro, c.chunk}, int(j)});
    }
  }
  return out;
}

bool backwardOfInput(PipeAction a) {
  return a == PipeAction::Backward || a == PipeAction::BackwardInput;
}

// "rank 1, action 3 (W2)": where a fault is, in the table's words.
std::string at(int rank, const ScheduleCell& c, int slot, int chunks) {
  return "rank " + n(rank) + ", action " + n(slot + 1) + " (" + scheduleCellText(c, chunks) + ")";
}
// "rank 2" or "rank 2 chunk 1".
std::string rankChunk(int rank, int chunk, int chunks) {
  return "rank " + n(rank) + (chunks > 1 ? " chunk " + n(chunk) : "");
}

// [SECTION] The counts and the order on each rank
std::optional<std::string> orderFault(const ScheduleGrid& grid, const PipeShape& shape) {
  const int P = shape.stages, M = shape.micros, V = shape.chunks;
  for (int r = 0; r < P; ++r) {
    const auto& row = grid[size_t(r)];
    // First slot of each (kind, micro, chunk), B and I counted as one kind.
    std::map<std::tuple<char, int, int>, int> first;
    const auto kindOf = [](char k) { return k == 'I' ? 'B' : k; };
    for (size_t j = 0; j < row.size(); ++j) {
      const ScheduleCell& c = row[j];
      if (c.empty()) continue;
      if (c.micro < 0 || c.micro >= M)
        return at(r, c, int(j), V) + ": micro-batch " + n(c.micro) +
               " is out of range (--microbatches " + n(M) + ": 0.." + n(M - 1) + ")";
      if (c.chunk < 0 || c.chunk >= V)
        return at(r, c, int(j), V) + ": chunk " + n(c.chunk) + " is out of range (" +
               (V == 1 ? std::string("one chunk per rank without --virtual-stages")
                       : "--virtual-stages " + n(V) + ": 0.." + n(V - 1)) +
               ")";
      first.try_emplace({kindOf(c.kind), c.micro, c.chunk}, int(j));
    }
    std::set<std::tuple<char, int, int>> seen;
    for (size_t j = 0; j < row.size(); ++j) {
      const ScheduleCell& c = row[j];
      if (c.empty()) continue;
      const std::string here = at(r, c, int(j), V);
      const char k = kindOf(c.kind);
      const ScheduleCell f{'F', c.micro, c.chunk}, b{'B', c.micro, c.chunk},
          w{'W', c.micro, c.chunk};
      const auto where = [&](char kind) -> std::optional<int> {
        const auto it = first.find({kind, c.micro, c.chunk});
        if (it == first.end()) return std::nullopt;
        return it->second;
      };
      if (seen.count({k, c.micro, c.chunk}))
        return here + ": a second " + std::string(1, k) + " of micro-batch " + n(c.micro) +
               " (the first is at action " + n(*where(k) + 1) + ")";
      if (k == 'B' && !seen.count({'F', c.micro, c.chunk}))
        return here + ": B before its F" +
               (where('F')
                    ? " (" + scheduleCellText(f, V) + " is at action " + n(*where('F') + 1) + ")"
                    : " (this rank has no " + scheduleCellText(f, V) + ")");
      if (k == 'W' && !seen.count({'B', c.micro, c.chunk}))
        return here + ": W before its B" +
               (where('B')
                    ? " (" + scheduleCellText(b, V) + " is at action " + n(*where('B') + 1) + ")"
                    : " (this rank has no " + scheduleCellText(b, V) + ")");
      if (c.kind == 'I' && !where('W'))
        return here + ": I is the input half of a split backward, and this rank has no " +
               scheduleCellText(w, V);
      seen.insert({k, c.micro, c.chunk});
    }
  }
  return std::nullopt;
}

// [SECTION] Every transfer has its other end on the neighbour
std::optional<std::string> transferFault(const ScheduleGrid& grid, const PipeShape& shape) {
  const int P = shape.stages, V = shape.chunks, last = P * V - 1;
  std::vector<std::set<std::tuple<char, int, int>>> holds(
      static_cast<size_t>(P));  // (F|B, micro, chunk)
  for (int r = 0; r < P; ++r)
    for (const ScheduleCell& c : grid[size_t(r)])
      if (!c.empty() && c.kind != 'W')
        holds[size_t(r)].insert({c.kind == 'F' ? 'F' : 'B', c.micro, c.chunk});
  for (int r = 0; r < P; ++r) {
    const auto& row = grid[size_t(r)];
    for (size_t j = 0; j < row.size(); ++j) {
      const ScheduleCell& c = row[j];
      if (c.empty() || c.kind == 'W') continue;
      const bool fwd = c.kind == 'F';
      const char k = fwd ? 'F' : 'B';
      const int v = c.chunk * P + r;
      const ScheduleCell same{k, c.micro, 0};
      // Forward: in from v - 1, out to v + 1. Backward: in from v + 1, out to v - 1.
      for (const int to : {v - 1, v + 1}) {
        if (to < 0 || to > last) continue;
        const int q = to % P, qc = to / P;
        if (holds[size_t(q)].count({k, c.micro, qc})) continue;
        const bool sends = fwd == (to == v + 1);
        const std::string what = fwd ? "activation" : "gradient";
        return at(r, c, int(j), V) +
               (sends ? ": its " + what + " goes to " : ": it needs the " + what + " of ") +
               rankChunk(q, qc, V) + ", which has no " + scheduleCellText(same, 1) +
               (sends ? " to receive it" : " to send it");
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> missingFault(const ScheduleGrid& grid, const PipeShape& shape) {
  const int P = shape.stages, M = shape.micros, V = shape.chunks;
  for (int r = 0; r < P; ++r)
    for (int c = 0; c < V; ++c)
      for (int m = 0; m < M; ++m)
        for (char k : {'F', 'B'}) {
          const auto& row = grid[size_t(r)];
          const bool found = std::any_of(row.begin(), row.end(), [&](const ScheduleCell& x) {
            return (x.kind == k || (k == 'B' && x.kind == 'I')) && x.micro == m && x.chunk == c;
          });
          if (!found)
            return "rank " + n(r) + ": no " + scheduleCellText({k, m, c}, V) +
                   " (each rank runs one F and one B of every micro-batch 0.." + n(M - 1) +
                   (V > 1 ? " on each of its " + n(V) + " chunks)" : ")");
        }
  return std::nullopt;
}

}  // namespace

// [SECTION] The derivation of the transfers
std::optional<std::vector<std::vector<PipeStep>>> deriveTransfers(const ScheduleGrid& grid,
                                                                  const PipeShape& shape,
                                                                  std::string* why) {
  const int P = shape.stages, V = shape.chunks, last = P * V - 1;
  const std::vector<std::vector<Op>> ops = computes(grid);
  std::vector<size_t> next(static_cast<size_t>(P), 0);
  std::vector<std::vector<PipeStep>> plan(static_cast<size_t>(P));
  // What op on rank r waits for: the neighbour's compute of the same micro-batch, or nothing.
  const auto input = [&](const Op& o, int r) -> std::optional<std::tuple<bool, int, int>> {
    const int v = o.step.chunk * P + r;
    if (o.step.action == PipeAction::Forward && v > 0) return std::tuple{true, o.step.micro, v - 1};
    if (backwardOfInput(o.step.action) && v < last) return std::tuple{false, o.step.micro, v + 1};
    return std::nullopt;
  };
  // A transfer waits until the rank receiving it is at the compute that needs it, so a rank
  // takes a micro-batch's buffers where its computes say (the peak is peakInFlight's).
  struct Transfer {
    std::tuple<bool, int, int> what;  // (forward?, micro, the producing virtual stage)
    int from, to;
    PipeStep send, recv;
  };
  std::vector<Transfer> waiting;
  std::set<std::tuple<bool, int, int>> delivered;
  const auto needs = [&](int r, const Transfer& t) {
    if (next[size_t(r)] >= ops[size_t(r)].size()) return false;
    const PipeStep& s = ops[size_t(r)][next[size_t(r)]].step;
    return s.micro == t.recv.micro && s.chunk == t.recv.chunk &&
           (t.recv.action == PipeAction::RecvAct ? s.action == PipeAction::Forward
                                                 : backwardOfInput(s.action));
  };
  for (;;) {
    for (auto t = waiting.begin(); t != waiting.end();) {
      if (!needs(t->to, *t)) {
        ++t;
        continue;
      }
      plan[size_t(t->from)].push_back(t->send);
      plan[size_t(t->to)].push_back(t->recv);
      delivered.insert(t->what);
      t = waiting.erase(t);
    }
    int pick = -1;
    for (int r = 0; r < P; ++r) {
      if (next[size_t(r)] >= ops[size_t(r)].size()) continue;
      const Op& o = ops[size_t(r)][next[size_t(r)]];
      if (const auto in = input(o, r); in && !delivered.count(*in)) continue;
      if (pick < 0 || o.slot < ops[size_t(pick)][next[size_t(pick)]].slot) pick = r;
    }
    if (pick < 0) break;
    const Op& o = ops[size_t(pick)][next[size_t(pick)]++];
    const PipeStep& s = o.step;
    plan[size_t(pick)].push_back(s);
    if (s.action == PipeAction::BackwardWeight) continue;
    const bool fwd = s.action == PipeAction::Forward;
    const int v = s.chunk * P + pick;
    const int to = fwd ? v + 1 : v - 1;
    if (to < 0 || to > last) continue;
    waiting.push_back({{fwd, s.micro, v},
                       pick,
                       to % P,
                       {fwd ? PipeAction::SendAct : PipeAction::SendGrad, s.micro, s.chunk},
                       {fwd ? PipeAction::RecvAct : PipeAction::RecvGrad, s.micro, to / P}});
  }
  // Stuck: the pending compute in the lowest slot, and where the rank it waits on stands.
  int stuck = -1;
  for (int r = 0; r < P; ++r)
    if (next[size_t(r)] < ops[size_t(r)].size() &&
        (stuck < 0 ||
         ops[size_t(r)][next[size_t(r)]].slot < ops[size_t(stuck)][next[size_t(stuck)]].slot))
      stuck = r;
  if (stuck < 0) return plan;
  if (why) {
    const auto cell = [&](const Op& o) {
      const char k = o.step.action == PipeAction::Forward          ? 'F'
                     : o.step.action == PipeAction::BackwardWeight ? 'W'
                                                                   : 'B';
      return ScheduleCell{k, o.step.micro, o.step.chunk};
    };
    const Op& o = ops[size_t(stuck)][next[size_t(stuck)]];
    const auto [fwd, m, v] = *input(o, stuck);
    const int q = v % P;
    std::string other = "which has run its row";
    if (next[size_t(q)] < ops[size_t(q)].size()) {
      const Op& w = ops[size_t(q)][next[size_t(q)]];
      other =
          "which waits at its action " + n(w.slot + 1) + " (" + scheduleCellText(cell(w), V) + ")";
    }
    *why = at(stuck, cell(o), o.slot, V) + ": deadlock: it waits for the " +
           (fwd ? "activation" : "gradient") + " of " +
           scheduleCellText({fwd ? 'F' : 'B', m, 0}, 1) + " from " + rankChunk(q, v / P, V) + ", " +
           other;
  }
  return std::nullopt;
}

ScheduleCheck checkSchedule(const ScheduleGrid& grid, const PipeShape& shape) {
  ScheduleCheck out;
  const int P = shape.stages;
  if (P < 2) {
    out.fault = "a schedule file runs a pipeline (--pp 2 or more), not --pp " + n(P);
    return out;
  }
  if (int(grid.size()) != P) {
    out.fault = n(int(grid.size())) + " rows, one per rank, but --pp is " + n(P);
    return out;
  }
  if ((out.fault = orderFault(grid, shape))) return out;
  if ((out.fault = transferFault(grid, shape))) return out;
  if ((out.fault = missingFault(grid, shape))) return out;
  std::string why;
  auto plan = deriveTransfers(grid, shape, &why);
  if (!plan) {
    out.fault = why;
    return out;
  }
  // Played with blocking sends, a forward taking 1 and a backward 2 (B and W 1 each).
  const auto played = playSchedule(*plan, PipeTimes{.forward = std::vector<double>(size_t(P), 1.0),
                                                    .backward = std::vector<double>(size_t(P), 2.0),
                                                    .weight = {}});
  if (!played) {
    out.fault = "its transfers wait on each other with blocking sends";
    return out;
  }
  out.bubble = played->bubble();
  for (const auto& steps : *plan) {
    out.peak.push_back(peakInFlight(steps));
    for (const PipeStep& p : steps)
      out.splitsBackward = out.splitsBackward || p.action == PipeAction::BackwardInput ||
                           p.action == PipeAction::BackwardWeight;
  }
  out.plan = std::move(*plan);
  return out;
}

}  // namespace paralab
