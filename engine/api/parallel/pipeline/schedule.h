// A pipeline schedule as data: for every stage (pp rank), the ordered list of what it does in
// one step — forward or backward of a micro-batch on a model chunk, and the transfers between
// neighbours. model_parallel.cpp executes these lists, schedule_play.h plays them out in
// modelled time, and each schedule is one builder in the table of schedule.cpp.
// See tests/engine/tst_pipeline_schedule.cpp.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace paralab {

// What a stage does next. Transfers are explicit, in the order the stage issues them: the
// engine's sends block until the neighbour receives (MPI's rendezvous), so their order is part
// of the schedule. A zero-bubble schedule splits the backward in two (Qi et al. 2023): the
// input gradient B, which the previous stage waits for, and the weight gradient W, which no one
// waits for and so may run later; B then W of one micro-batch is the same arithmetic as Backward.
enum class PipeAction {
  RecvAct,  // the micro-batch's residual stream from the previous stage
  Forward,
  SendAct,   // to the next stage
  RecvGrad,  // the gradient of this stage's output, from the next stage
  Backward,  // B and W at once
  SendGrad,  // the gradient of this stage's input, to the previous stage
  BackwardInput,   // B: the gradient of the stage's input only
  BackwardWeight,  // W: the gradients of the stage's weights, after the micro-batch's B
};
const char* pipeActionName(PipeAction a);  // "recv-act", "forward", ...
inline bool isCompute(PipeAction a) {
  return a == PipeAction::Forward || a == PipeAction::Backward ||
         a == PipeAction::BackwardInput || a == PipeAction::BackwardWeight;
}

struct PipeStep {
  PipeAction action;
  int micro;      // micro-batch, 0..M-1
  int chunk = 0;  // model chunk on this stage: 0 unless the schedule interleaves chunks
  bool operator==(const PipeStep&) const = default;
};

// Which lists to build: stage `stage` of `stages`, `micros` micro-batches, `chunks` model
// chunks per stage (1 without chunks; placed as the row's `place` says: Megatron-LM's virtual
// stage c * stages + stage for chunk c, or zb-v's V).
struct PipeShape {
  int stage = 0;
  int stages = 1;
  int micros = 1;
  int chunks = 1;
};

// The schedules, one builder each in a file of its own (schedule_<name>.cpp).
enum class PipeSchedule { GPipe, OneFOneB, Interleaved, ZbH1, ZbV };

// Where the model's virtual stages sit: the virtual stage (of stages x chunks, in the model's
// order) that chunk `chunk` of stage `stage` holds. A micro-batch goes forward from virtual
// stage v to v + 1, wherever that is; on the same stage it is handed over without a transfer.
using PipePlacement = int (*)(int stage, int chunk, int stages);
// Megatron-LM's (Narayanan et al. 2021 §2.2.2): chunk c of stage s is virtual stage c·P + s.
int megatronPlacement(int stage, int chunk, int stages);
// The V (Qi et al. 2024, ZB-V): chunk 0 of stage s is virtual stage s, chunk 1 is 2P − 1 − s,
// so the last stage hands its chunk 0's output to its own chunk 1 and stage 0 holds the loss.
int vPlacement(int stage, int chunk, int stages);
// The stage and chunk holding virtual stage `v` of stages x chunks; nothing outside them.
struct PipeSeat {
  int stage = -1, chunk = -1;
};
std::optional<PipeSeat> pipeSeat(PipePlacement place, int v, int stages, int chunks);

struct PipeScheduleRow {
  PipeSchedule schedule;
  const char* name;     // the --schedule value
  const char* label;    // how the window names it
  const char* summary;  // what it does, in one line: the window's tooltip and --help
  const char* cite;     // where the schedule is described
  std::vector<PipeStep> (*build)(const PipeShape& shape);
  // Whether a stage runs several model chunks (--virtual-stages); the others run one.
  bool interleaves = false;
  // What else the schedule needs of the shape (its chunks, stages and micro-batches): one line
  // naming the setting and what is allowed, or nothing. Null: any shape.
  std::optional<std::string> (*refuse)(const PipeShape& shape) = nullptr;
  // Its bubble fraction with balanced stages and equal forward, B and W times, from its
  // source (stages, micro-batches, chunks per stage). Null: bubbleFraction.
  double (*bubble)(int stages, int micros, int chunks) = nullptr;
  // Its placement of the chunks (null: Megatron-LM's, megatronPlacement).
  PipePlacement place = nullptr;
  // The chunks every stage of a pipeline holds whatever --virtual-stages says (0: one, or
  // --virtual-stages where it interleaves).
  int chunks = 0;
};
std::span<const PipeScheduleRow> pipeSchedules();
const PipeScheduleRow& pipeSchedule(PipeSchedule s);
// The row called `name`; throws ConfigError naming the allowed values otherwise.
const PipeScheduleRow& pipeScheduleNamed(std::string_view name);

// The model chunks each stage holds: `virtualStages` where the schedule called `schedule`
// interleaves on a pipeline of `stages` > 1, its row's `chunks` where it has them (zb-v: 2),
// else 1 (the setting is ignored where it does not apply, as a saved configuration may carry
// it).
int pipelineChunks(const std::string& schedule, int stages, int virtualStages);
// The placement of the schedule called `schedule`: its row's, else Megatron-LM's (files too).
PipePlacement pipelinePlacement(const std::string& schedule);
// Why `schedule` cannot run `stages` stages of `chunks` chunks each over `layers` blocks and
// `micros` micro-batches: one line naming the setting, or nothing. As Megatron-LM assigns them,
// every one of the stages x chunks virtual stages holds at least one block.
std::optional<std::string> pipelineRefusal(const std::string& schedule, int stages, int micros,
                                           int chunks, int layers);

// One stage's list; throws std::invalid_argument on a stage outside [0, stages) or sizes < 1.
std::vector<PipeStep> pipelineSchedule(PipeSchedule s, const PipeShape& shape);
std::vector<PipeStep> pipelineSchedule(const std::string& schedule, int stage, int stages,
                                       int micros);
// Every stage's list, stage 0 first.
std::vector<std::vector<PipeStep>> pipelinePlan(PipeSchedule s, int stages, int micros,
                                                int chunks = 1);

// Most micro-batches whose activations the stage holds at once (forward done, its Backward or
// W not): GPipe M; 1F1B min(P - stage, M).
int peakInFlight(const std::vector<PipeStep>& steps);

// The bubble: with P balanced stages and M micro-batches each stage is idle (P-1)/(M+P-1) of
// the pipeline's time (Huang et al. 2019), for GPipe and 1F1B alike; interleaving v chunks per
// stage divides the fill and drain by v: ((P-1)/v) / (M + (P-1)/v) (Narayanan et al. 2021).
double bubbleFraction(int stages, int micros, int chunks = 1);
// The bubble fraction of the schedule called `schedule`: its row's formula, else
// bubbleFraction.
double scheduleBubble(const std::string& schedule, int stages, int micros, int chunks = 1);

}  // namespace paralab
