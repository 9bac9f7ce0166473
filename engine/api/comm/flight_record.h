// The flight recorder's record (a value type the window reads): each rank's last collectives
// (sequence number per group, operation, group, bytes, step, what it was for, issued or done),
// and where the ranks diverge when the watchdog ends a hung run. Written by comm/flight_recorder.h;
// see tests/engine/tst_flight_recorder.cpp and `paralab-run --ranks 4 --hang 2@5 --timeout 2
// --json`.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace paralab {

// One collective as one rank saw it.
struct FlightEntry {
  int64_t seq = 0;      // per group, from 1: the seq-th collective this rank issued on `group`
  std::string op;       // commOpName: "allreduce", "allgather", ...
  std::string group;    // the group's name in the accounting: "world", "dp", "world-overlap"
  int64_t bytes = 0;    // the user buffer (nccl-tests' S), bytes
  int64_t step = 0;     // the step it belongs to (1-based; -1: outside a step)
  std::string purpose;  // what it is for, where the caller said: "gradient bucket 3"
  bool done = false;    // false: issued and not done (waiting, or left by an abort)
};

// One rank's recorder: its entries, oldest first, and the world ranks of each group it used.
struct RankFlight {
  int rank = 0;
  std::vector<FlightEntry> entries;
  std::vector<std::pair<std::string, std::vector<int>>> groups;
};

// Where the ranks diverge: the collective some ranks wait in and the ranks of its group that
// never issued it, each with the last one it finished there.
struct HangDiagnosis {
  bool found = false;
  std::string op, group, purpose;
  int64_t seq = 0, step = 0;
  std::vector<int> waiting;       // world ranks issued in it, not done
  std::vector<int> missing;       // world ranks of the group that never issued it
  std::vector<int64_t> lastDone;  // per missing rank: its last finished seq on the group (0: none)
  std::string line;               // "ranks 0, 1, 3 wait in allreduce #6 (...) over ...; rank 2 ..."
};

// Reads every rank's recorder: the collective with the most ranks waiting (then the lowest
// seq) whose group has a rank that never issued it; without one, the first collective waited
// in; found = false when no rank waits.
HangDiagnosis diagnoseHang(const std::vector<RankFlight>& ranks);

// The recorder in JSON ("flight_recorder" of a failure line, lessons/reference/metrics.md):
// {"divergence": {...} (when found), "ranks": [{"rank", "entries": [{"seq", "op", "group",
// "bytes", "step", "purpose", "state": "issued" | "done"}], "groups": {name: [world ranks]}}]},
// each rank's last `recent`.
nlohmann::json flightToJson(const std::vector<RankFlight>& ranks, const HangDiagnosis& d,
                            size_t recent = 8);
// Reads it back; "" or one line saying what is wrong.
std::string flightFromJson(const nlohmann::json& j, std::vector<RankFlight>* ranks,
                           HangDiagnosis* d);

// A hung run as the window shows it (Snapshot::flight): where the ranks diverge and every rank's
// recorder, from a thread run's HangDetected or an MPI job's dump lines (flightFromDumpLines).
struct FlightReport {
  HangDiagnosis diagnosis;
  std::vector<RankFlight> ranks;
};

// The recorders an MPI job's processes printed beside their output ("paralab: flight recorder
// of world rank R: {...}", FlightRecorder::dumpLine; other lines are skipped), by rank, with
// diagnoseHang over them; nullopt when `text` holds none.
std::optional<FlightReport> flightFromDumpLines(const std::string& text);

// What a run that the watchdog ended throws: its message is the one line, and it carries
// every rank's recorder (thread ranks) for the failure line and the window's table.
struct HangDetected : std::runtime_error {
  HangDetected(const std::string& line, HangDiagnosis d, std::vector<RankFlight> r)
      : std::runtime_error(line), diagnosis(std::move(d)), ranks(std::move(r)) {}
  HangDiagnosis diagnosis;
  std::vector<RankFlight> ranks;
};

}  // namespace paralab
