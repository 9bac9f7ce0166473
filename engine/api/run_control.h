// RunControl: one run, wherever its ranks train, behind one set of commands. Commands go in
// (start, pause, resume, stepOnce, stop, reconfigure); value snapshots come out. Session trains
// thread ranks in the caller's process; the window's JobRunner launches ranks as processes
// (mpirun). See tests/engine/tst_session.cpp and tests/app/tst_window_jobs.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/flight_record.h"
#include "config.h"
#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "parallel/holdings.h"

namespace paralab {

enum class RunState { Idle, Loading, Running, Paused, Finished, Failed };
const char* runStateName(RunState s);

// What a run is doing before its first step (state Loading): a stage in words and how far it
// has gone, in the stage's own units ("building the ranks", 3 of 8); total 0 while unknown.
struct LoadProgress {
  std::string stage;
  int64_t done = 0, total = 0;
};

// Values only: safe to keep, copy and paint from any thread.
struct Snapshot {
  RunState state = RunState::Idle;
  std::string error;        // set when state == Failed (one line)
  std::string notice;       // why the last reconfigure() could not be applied ("" if it was)
  RunConfig config;         // the configuration of this run
  int64_t runId = 0;        // increments with every start()
  int64_t stepsDone = 0;
  int64_t parameterCount = 0;  // P of the model being trained (0 until it is built)
  int64_t configStep = 0;      // steps done when `config` took effect (0: from the start)
  LoadProgress loading;        // while state == Loading
  // Steps [from, stepsDone) as asked in snapshot(from), of those the run control still keeps (see
  // release()).
  std::vector<StepMetrics> steps;
  std::vector<std::vector<Span>> spans;  // per rank: spans of the last `spanSteps` steps
  std::vector<SpansLeftOut> spansLeftOut;  // of those steps, spans their lines did not carry
  // What every rank holds (the strategies' sharding) and what it sent in the last step; empty
  // until the run is built.
  std::vector<RankHoldings> holdings;
  // When the watchdog ended a hung run (state Failed): every rank's flight recorder and where
  // the ranks diverge, for the window's "Flight recorder" table.
  std::optional<FlightReport> flight;
};

// Where a run's ranks train: threads in this process, or processes under a launcher.
enum class RunPlace { Threads, Processes };
// The one rule that picks it: the thread backend trains in this process, the others (MPI,
// NCCL) are processes.
RunPlace runPlace(const RunConfig& config);

// "" when `wanted` may replace `now` under a running training, or one line naming the first
// setting the table marks fixed per run (Setting::live) that differs: the model, data,
// optimizer kind, seed ... need a new run.
std::string needsNewRun(const RunConfig& now, const RunConfig& wanted);
// What of `wanted` a running training can take: `now` with each live setting's value from
// `wanted`; the keys of the settings that differ but need a new run go to `waiting`, so that one
// of them does not hold back every later change.
RunConfig liveChanges(const RunConfig& now, const RunConfig& wanted,
                      std::vector<std::string>* waiting);

class RunControl {
 public:
  virtual ~RunControl() = default;
  // Where this one trains its runs (runPlace() of the configs it takes).
  virtual RunPlace place() const = 0;

  // Validates, then starts a new run. "" when started, or one line saying why not. `paused`:
  // no step is taken until resume() or stepOnce() (so Step from idle is exactly one step).
  virtual std::string start(const RunConfig& config, bool paused = false) = 0;
  virtual void pause() = 0;     // finishes the step in flight, then waits
  virtual void resume() = 0;
  virtual void stepOnce() = 0;  // when paused (or just started paused): one step, then pause
  virtual void stop() = 0;      // ends the run after the step in flight; returns at once
  // Reset: ends the run as stop() does and lets go of all it holds in this process (a thread
  // run's trainer: its model, buffers and rank threads); snapshot() then reads as if no run had
  // started. Returns at once. A run in other processes holds nothing here beyond its steps.
  virtual void discard() { stop(); }
  // Live reconfiguration: the run goes on under `config` from the same step with the same
  // parameters and optimizer state. Returns at once: "" when accepted, or one line naming what
  // needs a new run (needsNewRun) or what is invalid. A failure while applying it is reported
  // in Snapshot::notice (or, when the run cannot go on, Snapshot::error).
  virtual std::string reconfigure(const RunConfig& config) = 0;

  // Steps from index `fromStep` (0-based) on, of those not released, plus the spans of the
  // last `spanSteps` steps (as many as the implementation has, for one whose ranks send them).
  virtual Snapshot snapshot(int64_t fromStep = 0, int spanSteps = 0) const = 0;
  // snapshot() for a caller that must not wait (a GUI thread): nothing when the training holds
  // what it must copy this instant; the caller asks again later.
  virtual std::optional<Snapshot> trySnapshot(int64_t fromStep = 0, int spanSteps = 0) const = 0;
  // The caller has taken steps [0, `step`) of the current run: they are kept no more, so the
  // memory held does not grow with the run.
  virtual void release(int64_t step) = 0;
};

}  // namespace paralab
