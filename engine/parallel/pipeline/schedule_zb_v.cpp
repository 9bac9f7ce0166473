// ZB-V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"; §6 of their "Zero Bubble
// Pipeline Parallelism"; torch.distributed.pipelining's ScheduleZBVZeroBubble), --schedule zb-v:
// two chunks per stage in a V (stage s holds virtual stages s and 2P-1-s), B and W apart. Try:
// paralab-run --pp 4 --layers 8 --microbatches 8 --schedule zb-v --json. See tst_pipeline_zb_v.
#include <algorithm>
#include <stdexcept>

#include "parallel/pipeline/schedule_timed_plan.h"

namespace paralab {

namespace {

// Stage r of P's forwards, B's and W's on chunk 0 (the V's way down) and chunk 1 (its way
// back), as the source orders them for N >= 2P - 1 micro-batches:
//   warm-up: 2(P - r) - 1 forwards of chunk 0; r times a forward of chunk 1 then of chunk 0;
//            P - r times a forward, B and W of chunk 1;
//   steady:  a forward of chunk 0 (while any are left), B and W of chunk 0, then a forward, B
//            and W of chunk 1, until both chunks have run every forward;
//   drain:   r times a B of chunk 0 then one of chunk 1 (their W's held back); P - r times a B
//            of chunk 0 then its oldest W; then the W's left, chunk 1's first.
// With fewer micro-batches the order for 2P - 1 is kept without those past M, as the source
// does: what is left still waits only on what comes before it.
std::vector<PipeStep> computeOrder(int r, int P, int M) {
  const int N = std::max(M, 2 * P - 1);
  int f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};  // per chunk: the next micro-batch of each
  std::vector<PipeStep> out;
  const auto add = [&](PipeAction a, int& next, int chunk) {
    if (next < M) out.push_back({a, next, chunk});
    ++next;
  };
  const auto F = [&](int c) { add(PipeAction::Forward, f[c], c); };
  const auto B = [&](int c) { add(PipeAction::BackwardInput, b[c], c); };
  const auto W = [&](int c) { add(PipeAction::BackwardWeight, w[c], c); };
  for (int i = 0; i < 2 * (P - r) - 1; ++i) F(0);
  for (int i = 0; i < r; ++i) F(1), F(0);
  for (int i = 0; i < P - r; ++i) F(1), B(1), W(1);
  while (f[0] < N || f[1] < f[0]) {
    if (f[0] < N) F(0);
    B(0), W(0), F(1), B(1), W(1);
  }
  for (int i = 0; i < r; ++i) B(0), B(1);
  for (int i = 0; i < P - r; ++i) B(0), W(0);
  while (w[1] < b[1]) W(1);
  while (w[0] < b[0]) W(0);
  return out;
}

}  // namespace

std::vector<PipeStep> zbH1Steps(const PipeShape& shape);  // schedule_zb_h1.cpp

// One chunk (a pipeline of one stage, or a plan asked for without chunks): ZB-H1, the same
// split backward on one chunk. The transfers are placed by timedPlan (schedule_timed_plan.h);
// the last stage's hand-over from chunk 0 to chunk 1 is none.
std::vector<PipeStep> zbVSteps(const PipeShape& shape) {
  if (shape.chunks == 1) return zbH1Steps(shape);
  if (shape.chunks != 2) throw std::invalid_argument("zb-v: two model chunks per stage");
  std::vector<std::vector<PipeStep>> orders;
  for (int s = 0; s < shape.stages; ++s)
    orders.push_back(computeOrder(s, shape.stages, shape.micros));
  return timedPlan(orders, 2, vPlacement)[size_t(shape.stage)];
}

// The source's bubble with T_F = T_B = T_W is zero (the sail-sg README's table: "ZBV 0"; Qi
// et al. 2024 measure it as 1 - (F+B+W)M over each stage's own span): every stage, once it
// starts, never waits, and holds P micro-batches' activations at its peak (1F1B's; 2P chunks of
// half a stage each). Over the whole pipeline's time, as pipeline.cpp measures, stage r starts
// r chunk forwards after stage 0 and ends as many later, so each stage idles P - 1 chunk slots
// of the 6M it works plus those: (P - 1)/(6M + P - 1), for M >= 2P - 1.
double zbVBubble(int stages, int micros, int /*chunks*/) {
  const double fill = stages - 1;
  return fill / (6.0 * micros + fill);
}

}  // namespace paralab
