// The table of pipeline schedules (schedule.h) and what every schedule shares: the lookups,
// the peak of micro-batches in flight and the bubble formula.
// See tests/engine/tst_pipeline_schedule.cpp.
// Adding a schedule: its builder in schedule_<name>.cpp, its value in PipeSchedule, its row
// here, its test beside tst_pipeline_schedule.cpp's, and its name among --schedule's choices.
#include "parallel/pipeline/schedule.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "config.h"  // ConfigError
#include "parallel/pipeline/schedule_file.h"

namespace paralab {

std::vector<PipeStep> gpipeSteps(const PipeShape& shape);     // schedule_gpipe.cpp
std::vector<PipeStep> oneFOneBSteps(const PipeShape& shape);  // schedule_1f1b.cpp
// schedule_interleaved.cpp
std::vector<PipeStep> interleavedSteps(const PipeShape& shape);
std::optional<std::string> interleavedRefusal(const PipeShape& shape);
// schedule_zb_h1.cpp
std::vector<PipeStep> zbH1Steps(const PipeShape& shape);
double zbH1Bubble(int stages, int micros, int chunks);
// schedule_zb_v.cpp
std::vector<PipeStep> zbVSteps(const PipeShape& shape);
double zbVBubble(int stages, int micros, int chunks);

namespace {

const std::array kSchedules{
    PipeScheduleRow{.schedule = PipeSchedule::OneFOneB,
                    .name = "1f1b",
                    .label = "1F1B",
                    .summary = "One forward, one backward once the pipe is full (keeps at "
                               "most P micro-batches of activations)",
                    .cite = "Narayanan et al. 2019, PipeDream-Flush; Megatron-LM",
                    .build = oneFOneBSteps},
    PipeScheduleRow{.schedule = PipeSchedule::GPipe,
                    .name = "gpipe",
                    .label = "GPipe",
                    .summary = "All forwards, then all backwards (keeps M micro-batches of "
                               "activations)",
                    .cite = "Huang et al. 2019, GPipe",
                    .build = gpipeSteps},
    PipeScheduleRow{.schedule = PipeSchedule::Interleaved,
                    .name = "interleaved",
                    .label = "Interleaved 1F1B",
                    .summary = "1F1B over V model chunks per stage (--virtual-stages): the fill "
                               "and drain shrink V-fold, for V times the sends",
                    .cite = "Narayanan et al. 2021, Megatron-LM",
                    .build = interleavedSteps,
                    .interleaves = true,
                    .refuse = interleavedRefusal},
    // Bubble (P-1)(T_F+T_B-T_W) per stage (Qi et al. 2023 §3.1): (P-1)/(3M+P-1) with equal
    // times, about a third of 1F1B's.
    PipeScheduleRow{.schedule = PipeSchedule::ZbH1,
                    .name = "zb-h1",
                    .label = "ZB-H1",
                    .summary = "1F1B with each backward split into the input gradient (B) and the "
                               "weight gradient (W), W run later to fill the drain: about a third "
                               "of 1F1B's bubble at its peak memory",
                    .cite = "Qi et al. 2023, Zero Bubble Pipeline Parallelism (ZB-H1)",
                    .build = zbH1Steps,
                    .bubble = zbH1Bubble},
    // Bubble (P-1)/(6M+P-1) with equal times (schedule_zb_v.cpp: the source's zero inside each
    // stage's own span, and the fill's P - 1 chunk forwards); 1F1B's peak memory.
    PipeScheduleRow{.schedule = PipeSchedule::ZbV,
                    .name = "zb-v",
                    .label = "ZB-V",
                    .summary = "Two chunks per stage in a V (stage s holds virtual stages s and "
                               "2P-1-s, the loss on stage 0), the backward split into B and W: "
                               "almost no bubble at 1F1B's peak memory, for twice its sends",
                    .cite = "Qi et al. 2024, Pipeline Parallelism with Controllable Memory "
                            "(ZB-V); torch.distributed.pipelining ScheduleZBVZeroBubble",
                    .build = zbVSteps,
                    .bubble = zbVBubble,
                    .place = vPlacement,
                    .chunks = 2},
};

}  // namespace

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
    case PipeAction::BackwardInput:
      return "backward-input";
    case PipeAction::BackwardWeight:
      return "backward-weight";
  }
  return "?";
}

std::span<const PipeScheduleRow> pipeSchedules() { return kSchedules; }

const PipeScheduleRow& pipeSchedule(PipeSchedule s) {
  for (const PipeScheduleRow& r : kSchedules)
    if (r.schedule == s) return r;
  throw std::invalid_argument("pipeSchedule: a schedule without a row");
}

const PipeScheduleRow& pipeScheduleNamed(std::string_view name) {
  std::string allowed;
  for (const PipeScheduleRow& r : kSchedules) {
    if (name == r.name) return r;
    allowed += (allowed.empty() ? "" : ", ") + std::string(r.name);
  }
  throw ConfigError("schedule: '" + std::string(name) +
                    "' is not a pipeline schedule (allowed: " + allowed + ")");
}

int megatronPlacement(int stage, int chunk, int stages) { return chunk * stages + stage; }

int vPlacement(int stage, int chunk, int stages) {
  return chunk == 0 ? stage : 2 * stages - 1 - stage;
}

std::optional<PipeSeat> pipeSeat(PipePlacement place, int v, int stages, int chunks) {
  for (int s = 0; s < stages; ++s)
    for (int c = 0; c < chunks; ++c)
      if (place(s, c, stages) == v) return PipeSeat{s, c};
  return std::nullopt;
}

PipePlacement pipelinePlacement(const std::string& schedule) {
  for (const PipeScheduleRow& r : kSchedules)
    if (schedule == r.name && r.place) return r.place;
  return megatronPlacement;
}

int pipelineChunks(const std::string& schedule, int stages, int virtualStages) {
  if (isScheduleFile(schedule) && stages > 1) return std::max(1, virtualStages);  // as its cells
  for (const PipeScheduleRow& r : kSchedules) {
    if (schedule == r.name && r.chunks > 0 && stages > 1) return r.chunks;
    if (schedule == r.name && r.interleaves && stages > 1) return std::max(1, virtualStages);
  }
  return 1;
}

std::optional<std::string> pipelineRefusal(const std::string& schedule, int stages, int micros,
                                           int chunks, int layers) {
  const auto n = [](int v) { return std::to_string(v); };
  for (const PipeScheduleRow& r : kSchedules)
    if (schedule == r.name && r.chunks > 1 && stages * r.chunks > layers)
      return "layers: " + std::string(r.name) + " puts " + n(r.chunks) + " chunks of blocks on " +
             "each of " + n(stages) + " stages, the model has " + n(layers) +
             " blocks (allowed: layers >= " + n(r.chunks) + " x pp)";
  if (chunks > 1 && stages * chunks > layers)
    return "virtual-stages: " + n(stages) + " stages x " + n(chunks) + " chunks need " +
           n(stages * chunks) + " blocks, the model has " + n(layers) +
           " (allowed: pp x virtual-stages <= layers)";
  if (isScheduleFile(schedule))
    return scheduleFileRefusal(schedule, {.stages = stages, .micros = micros, .chunks = chunks});
  for (const PipeScheduleRow& r : kSchedules)
    if (schedule == r.name && r.refuse)
      return r.refuse(PipeShape{.stages = stages, .micros = micros, .chunks = chunks});
  return std::nullopt;
}

std::vector<PipeStep> pipelineSchedule(PipeSchedule s, const PipeShape& shape) {
  if (shape.stages < 1 || shape.stage < 0 || shape.stage >= shape.stages || shape.micros < 1 ||
      shape.chunks < 1)
    throw std::invalid_argument("pipelineSchedule: bad stage or sizes");
  return pipeSchedule(s).build(shape);
}

std::vector<PipeStep> pipelineSchedule(const std::string& schedule, int stage, int stages,
                                       int micros) {
  return pipelineSchedule(pipeScheduleNamed(schedule).schedule,
                          PipeShape{.stage = stage, .stages = stages, .micros = micros});
}

std::vector<std::vector<PipeStep>> pipelinePlan(PipeSchedule s, int stages, int micros,
                                                int chunks) {
  std::vector<std::vector<PipeStep>> plan;
  for (int k = 0; k < stages; ++k)
    plan.push_back(pipelineSchedule(
        s, PipeShape{.stage = k, .stages = stages, .micros = micros, .chunks = chunks}));
  return plan;
}

int peakInFlight(const std::vector<PipeStep>& steps) {
  int live = 0, peak = 0;
  for (const PipeStep& p : steps) {
    if (p.action == PipeAction::Forward) peak = std::max(peak, ++live);
    if (p.action == PipeAction::Backward || p.action == PipeAction::BackwardWeight) --live;
  }
  return peak;
}

double bubbleFraction(int stages, int micros, int chunks) {
  const double fill = double(stages - 1) / std::max(1, chunks);
  return fill / (micros + fill);
}

double scheduleBubble(const std::string& schedule, int stages, int micros, int chunks) {
  for (const PipeScheduleRow& r : kSchedules)
    if (schedule == r.name && r.bubble) return r.bubble(stages, micros, chunks);
  return bubbleFraction(stages, micros, chunks);
}

}  // namespace paralab
