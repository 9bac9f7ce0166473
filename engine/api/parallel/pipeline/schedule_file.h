// A pipeline schedule the learner writes (`--schedule FILE`): a table of compute actions, one
// row per rank, its transfers derived, checked before any rank starts. The window's grid
// editor (app/panels/schedule_editor.cpp) edits the same table.
// Try: paralab-run --pp 2 --microbatches 4 --schedule my.csv; see
// tests/engine/tst_schedule_file.cpp.
//
// The format (torch.distributed.pipelining's compute-only CSV where it fits):
//   - one line per rank (pp index 0 first); cells separated by commas, one cell per time slot,
//     an empty cell an idle slot; blank lines and lines starting with '#' are skipped
//     (torch's CSV has neither);
//   - a cell is an action and its micro-batch: `F3`, `B3`, `W3`, `I3`, with the model chunk
//     after a dot where a rank holds several (`F3.1`, --virtual-stages); or torch's form with
//     the virtual stage first, `5F3` (virtual stage 5 = chunk 5 / pp on rank 5 % pp);
//   - F: forward. W: the weight gradient. I: the input gradient (torch's BACKWARD_INPUT).
//     B: the input gradient where the rank also holds W of that micro-batch and chunk (a split
//     backward, Qi et al. 2023's B), else the whole backward (torch's B, FULL_BACKWARD);
//   - the file holds computes only; the sends and receives are derived (deriveTransfers);
//   - a refusal names the rank and the action's place in its row, counting cells from 1, idle
//     ones too, as a spreadsheet numbers columns: "rank 1, action 3 (W2): W before its B".
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace paralab {

// One cell of the table: kind 0 is an idle slot; else 'F', 'B', 'I' or 'W' as written.
struct ScheduleCell {
  char kind = 0;
  int micro = 0;
  int chunk = 0;
  bool empty() const { return kind == 0; }
  bool operator==(const ScheduleCell&) const = default;
};
using ScheduleGrid = std::vector<std::vector<ScheduleCell>>;  // [rank][slot]

// Whether a --schedule value names a file rather than a schedule of the table: it holds a '/'
// or ends in ".csv".
bool isScheduleFile(std::string_view value);

// `text` (one cell) on rank `rank` of `stages`: the cell, or nothing with `why` set.
std::optional<ScheduleCell> parseScheduleCell(std::string_view text, int rank, int stages,
                                              std::string* why);
// The short form: "F3", "B3.1"; "" for an idle slot.
std::string scheduleCellText(const ScheduleCell& c, int chunks = 1);

// The table in `text`; on a fault, nothing with `why` set ("rank 1, action 4 ('X2'): ...").
std::optional<ScheduleGrid> parseScheduleCsv(std::string_view text, int stages, std::string* why);
// The table as a file: a '#' header naming the format, then one line per rank.
std::string scheduleCsv(const ScheduleGrid& grid, int chunks = 1);

// What the checker found: the first action at fault, or the plan with its measures.
struct ScheduleCheck {
  std::optional<std::string> fault;  // "rank 1, action 3 (W2): W before its B (B2 is at action 5)"
  std::vector<std::vector<PipeStep>> plan;  // every rank's list, transfers derived
  std::vector<int> peak;                    // per rank: most micro-batches in flight
  std::vector<double> bubble;               // per rank: idle share, played with F 1, B 2 (I 1, W 1)
  bool splitsBackward = false;              // holds I or W actions
  bool ok() const { return !fault; }
};

// Checks `grid` for `shape` (stages = its rows, micros, chunks per rank), before any rank
// starts: every cell in range; on every rank each micro-batch and chunk has one F and one B
// (and W where split), F before B before W; every send has its receive on the neighbour; the
// derived plan played with blocking sends runs to its end (playSchedule).
ScheduleCheck checkSchedule(const ScheduleGrid& grid, const PipeShape& shape);

// The plan of `grid`: its computes in row order, and each transfer, a send on one rank and its
// receive on the other, placed once it is produced and the receiving rank is at the compute
// that needs it (so a rank takes a micro-batch's buffers where its computes say). All ranks'
// steps are put in one order (the lowest slot first, then the lowest rank, each compute once
// its input is there), so blocking sends never wait in a cycle. The checker and the runner
// both take their lists from here. On a deadlock, nothing, with `why` naming the first stuck
// action. The grid must have passed the checker's counts and order.
std::optional<std::vector<std::vector<PipeStep>>> deriveTransfers(const ScheduleGrid& grid,
                                                                  const PipeShape& shape,
                                                                  std::string* why);

// The file at `path` read and checked: nothing when it runs, else one line,
// "schedule file PATH: rank 1, action 3 (W2): ...".
std::optional<std::string> scheduleFileRefusal(const std::string& path, const PipeShape& shape);
// Stage shape.stage's list of the file at `path`; throws ConfigError with the refusal's line.
std::vector<PipeStep> scheduleFileSteps(const std::string& path, const PipeShape& shape);

// Stage shape.stage's list of --schedule `schedule`: a row of the table or a file.
std::vector<PipeStep> pipelineSteps(const std::string& schedule, const PipeShape& shape);

}  // namespace paralab
