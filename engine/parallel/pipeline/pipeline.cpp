// Pipeline schedules (`--pp P --microbatches M --schedule gpipe|1f1b`) and the bubble.
// Try: paralab-run --pp 2 --layers 4 --microbatches 8 --schedule gpipe --json   (see "bubble")
// See tests/engine/tst_model_parallel.cpp (schedules, bubble, activation memory).
//
// The blocks are cut into P contiguous stages; a micro-batch's residual stream goes forward
// stage to stage (send/recv), its gradient comes back the same way.
//   GPipe (Huang et al. 2019): every micro-batch's forward, then every backward. A stage holds
//     all M micro-batches' activations at the turn.
//   1F1B (PipeDream-Flush, Narayanan et al. 2019; Megatron-LM's schedule): stage s runs
//     P - s - 1 warm-up forwards, then alternates one forward and one backward, then drains the
//     backwards left. A micro-batch's activations are freed by its backward as soon as it can
//     run, so a stage holds at most P - s of them: less memory, the same bubble.
// Both flush at the end of the step: every stage is idle (P-1)/(M+P-1) of the pipeline's time
// when stages are balanced (P - 1 forward and backward slots while the pipe fills and drains).
#include "parallel/pipeline/pipeline.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace paralab {

const char* pipeActionName(PipeAction a) {
  switch (a) {
    case PipeAction::RecvAct:
      return "recv-act";
    case PipeAction::Forward:
      return "forward";
    case PipeAction::SendAct:
      return "send-act";
    case PipeAction::RecvGrad:
      return "recv-grad";
    case PipeAction::Backward:
      return "backward";
    case PipeAction::SendGrad:
      return "send-grad";
  }
  return "?";
}

const char* microSpanLabel(bool forward, int micro) {
  static const auto kLabels = [] {  // built once; the strings live as long as the program
    std::array<std::vector<std::string>, 2> t;
    for (int m = 0; m < 256; ++m) {
      t[0].push_back("backward mb " + std::to_string(m));
      t[1].push_back("forward mb " + std::to_string(m));
    }
    return t;
  }();
  if (micro < 0 || micro >= 256) return forward ? "forward" : "backward";
  return kLabels[forward ? 1 : 0][size_t(micro)].c_str();
}

std::vector<PipeStep> pipelineSchedule(const std::string& schedule, int s, int P, int M) {
  if (P < 1 || s < 0 || s >= P || M < 1)
    throw std::invalid_argument("pipelineSchedule: bad stage or sizes");
  const bool first = s == 0, last = s == P - 1;
  std::vector<PipeStep> out;
  auto add = [&](PipeAction a, int m, bool when = true) {
    if (when) out.push_back({a, m});
  };
  if (schedule == "gpipe") {
    for (int m = 0; m < M; ++m) {  // fill: every forward
      add(PipeAction::RecvAct, m, !first);
      add(PipeAction::Forward, m);
      add(PipeAction::SendAct, m, !last);
    }
    for (int m = M - 1; m >= 0; --m) {  // drain: every backward, last micro-batch first
      add(PipeAction::RecvGrad, m, !last);
      add(PipeAction::Backward, m);
      add(PipeAction::SendGrad, m, !first);
    }
    return out;
  }
  if (schedule != "1f1b")
    throw std::invalid_argument("pipelineSchedule: '" + schedule + "' is not gpipe or 1f1b");
  // 1F1B. Where a stage both sends to and receives from one neighbour (Megatron's
  // send_forward_recv_backward and send_backward_recv_forward, done there with non-blocking
  // pairs), the lower stage of the pair sends first and the upper one receives first, so that
  // blocking sends never wait on each other.
  const int warmup = std::min(P - s - 1, M), steady = M - warmup;
  for (int m = 0; m < warmup; ++m) {  // step 1: warm-up forwards
    add(PipeAction::RecvAct, m, !first);
    add(PipeAction::Forward, m);
    add(PipeAction::SendAct, m, !last);
  }
  add(PipeAction::RecvAct, warmup, steady > 0 && !first);
  for (int i = 0; i < steady; ++i) {  // step 2: one forward, one backward
    add(PipeAction::Forward, warmup + i);
    add(PipeAction::SendAct, warmup + i, !last);
    add(PipeAction::RecvGrad, i, !last);
    add(PipeAction::Backward, i);
    if (i + 1 < steady) add(PipeAction::RecvAct, warmup + i + 1, !first);
    add(PipeAction::SendGrad, i, !first);
  }
  for (int m = steady; m < M; ++m) {  // step 3: the backwards left
    add(PipeAction::RecvGrad, m, !last);
    add(PipeAction::Backward, m);
    add(PipeAction::SendGrad, m, !first);
  }
  return out;
}

int peakInFlight(const std::vector<PipeStep>& steps) {
  int live = 0, peak = 0;
  for (const PipeStep& p : steps) {
    if (p.action == PipeAction::Forward) peak = std::max(peak, ++live);
    if (p.action == PipeAction::Backward) --live;
  }
  return peak;
}

double bubbleReference(int P, int M) { return double(P - 1) / double(M + P - 1); }

// [SECTION] Measured

StageTimes stageTimes(const std::vector<Span>& spans) {
  StageTimes t;
  for (const Span& s : spans)
    if (s.kind == SpanKind::Forward || s.kind == SpanKind::Backward) {
      t.firstNs = t.any ? std::min(t.firstNs, s.startNs) : s.startNs;
      t.lastNs = t.any ? std::max(t.lastNs, s.endNs) : s.endNs;
      t.any = true;
    }
  if (!t.any) return t;
  auto pointToPoint = [](const char* op) {
    const std::string_view v(op);
    return v.starts_with("send") || v.starts_with("recv");
  };
  // Union of the busy intervals inside [first, last].
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const Span& s : spans) {
    const bool compute = s.kind == SpanKind::Forward || s.kind == SpanKind::Backward;
    const bool collective = s.kind == SpanKind::Comm && !pointToPoint(s.op);
    if (!compute && !collective) continue;
    const int64_t a = std::max(s.startNs, t.firstNs), b = std::min(s.endNs, t.lastNs);
    if (b > a) busy.emplace_back(a, b);
  }
  std::sort(busy.begin(), busy.end());
  int64_t reach = t.firstNs;
  for (const auto& [a, b] : busy) {
    if (b > reach) t.busyNs += b - std::max(a, reach);
    reach = std::max(reach, b);
  }
  return t;
}

std::vector<double> measuredBubble(const std::vector<StageTimes>& stages) {
  int64_t first = 0, last = 0;
  bool any = false;
  for (const StageTimes& t : stages)
    if (t.any) {
      first = any ? std::min(first, t.firstNs) : t.firstNs;
      last = any ? std::max(last, t.lastNs) : t.lastNs;
      any = true;
    }
  std::vector<double> out;
  for (const StageTimes& t : stages)
    out.push_back(any && last > first ? 1.0 - double(t.busyNs) / double(last - first) : 0.0);
  return out;
}

// [SECTION] Modelled

std::optional<std::vector<double>> modelledBubble(const std::string& schedule, int P, int M,
                                                  double tf, double tb) {
  std::vector<std::vector<PipeStep>> steps;
  for (int s = 0; s < P; ++s) steps.push_back(pipelineSchedule(schedule, s, P, M));
  std::vector<size_t> pc(size_t(P), 0);
  std::vector<double> clock(size_t(P), 0), busy(size_t(P), 0), first(size_t(P), -1),
      last(size_t(P), 0);
  // The transfer that meets action a of stage s: its neighbour and the action it must be at.
  auto partner = [](PipeAction a, int s) -> std::pair<int, PipeAction> {
    switch (a) {
      case PipeAction::SendAct:
        return {s + 1, PipeAction::RecvAct};
      case PipeAction::RecvAct:
        return {s - 1, PipeAction::SendAct};
      case PipeAction::SendGrad:
        return {s - 1, PipeAction::RecvGrad};
      default:
        return {s + 1, PipeAction::SendGrad};  // RecvGrad
    }
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < P; ++s)
      while (pc[size_t(s)] < steps[size_t(s)].size()) {
        const PipeStep p = steps[size_t(s)][pc[size_t(s)]];
        if (p.action == PipeAction::Forward || p.action == PipeAction::Backward) {
          const double d = p.action == PipeAction::Forward ? tf : tb;
          if (first[size_t(s)] < 0) first[size_t(s)] = clock[size_t(s)];
          clock[size_t(s)] += d;
          busy[size_t(s)] += d;
          last[size_t(s)] = clock[size_t(s)];
        } else {
          const auto [q, want] = partner(p.action, s);
          const auto& other = steps[size_t(q)];
          if (pc[size_t(q)] >= other.size() || !(other[pc[size_t(q)]] == PipeStep{want, p.micro}))
            break;
          clock[size_t(s)] = clock[size_t(q)] = std::max(clock[size_t(s)], clock[size_t(q)]);
          ++pc[size_t(q)];
        }
        ++pc[size_t(s)];
        moved = true;
      }
  }
  for (int s = 0; s < P; ++s)
    if (pc[size_t(s)] < steps[size_t(s)].size()) return std::nullopt;
  const double start = *std::min_element(first.begin(), first.end());
  const double span = *std::max_element(last.begin(), last.end()) - start;
  std::vector<double> out;
  for (int s = 0; s < P; ++s) out.push_back(1.0 - busy[size_t(s)] / span);
  return out;
}

}  // namespace paralab
