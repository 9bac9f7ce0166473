// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism" §3.1, their handcrafted schedule
// with 1F1B's peak memory), `--schedule zb-h1`: 1F1B with each backward split into B (the input
// gradient, which the stage before waits for) and W (the weight gradient, which no one waits
// for). Stage s runs its W's s micro-batches late, so the drain's waits are filled with W's.
// Try: paralab-run --pp 4 --layers 4 --microbatches 8 --schedule zb-h1 --json   (see "bubble")
// See tests/engine/tst_pipeline_zero_bubble.cpp.
#include <algorithm>
#include <stdexcept>

#include "parallel/pipeline/schedule_timed_plan.h"

namespace paralab {

namespace {

// Stage s of P computes 1F1B's P - s - 1 warm-up forwards, then one forward and one B, each B
// followed by the oldest W once s W's wait (the stage holds min(P, M) micro-batches at its
// peak: the warm-up's P - s plus the s whose W waits, 1F1B's peak on stage 0); in the drain
// every B is followed by a W, then the W's left.
std::vector<PipeStep> computeOrder(int s, int P, int M) {
  std::vector<PipeStep> out;
  int weights = 0;  // W's placed so far: micro-batches 0 .. weights - 1
  const auto weight = [&] { out.push_back({PipeAction::BackwardWeight, weights++}); };
  const int warmup = std::min(P - s - 1, M);
  for (int m = 0; m < warmup; ++m) out.push_back({PipeAction::Forward, m});
  for (int i = 0; i < M - warmup; ++i) {
    out.push_back({PipeAction::Forward, warmup + i});
    out.push_back({PipeAction::BackwardInput, i});
    if (i >= s) weight();
  }
  for (int m = M - warmup; m < M; ++m) {
    out.push_back({PipeAction::BackwardInput, m});
    weight();
  }
  while (weights < M) weight();
  return out;
}

int oneChunk(int stage, int /*chunk*/, int /*stages*/) { return stage; }

}  // namespace

// The transfers are placed by timedPlan (schedule_timed_plan.h): 1F1B's fixed pairing would
// hold a stage's W behind the receive of its next forward's input under blocking sends.
std::vector<PipeStep> zbH1Steps(const PipeShape& shape) {
  if (shape.chunks != 1) throw std::invalid_argument("zb-h1: one model chunk per stage");
  std::vector<std::vector<PipeStep>> orders;
  for (int s = 0; s < shape.stages; ++s)
    orders.push_back(computeOrder(s, shape.stages, shape.micros));
  return timedPlan(orders, 1, oneChunk)[size_t(shape.stage)];
}

// Qi et al. 2023 §3.1: ZB-H1's bubble is (P - 1)(T_F + T_B - T_W) of each stage's
// M (T_F + T_B + T_W); with T_F = T_B = T_W, (P - 1) / (3M + P - 1), about a third of 1F1B's
// (P - 1) / (M + P - 1) (their README: "B/3"). Balanced stages, M >= P.
double zbH1Bubble(int stages, int micros, int /*chunks*/) {
  const double fill = stages - 1;
  return fill / (3.0 * micros + fill);
}

}  // namespace paralab
