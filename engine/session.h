// Session: the one door between the window (or any caller) and the training engine.
// Commands go in (start, pause, resume, stepOnce, stop); value snapshots come out. Training
// runs on a thread the session owns; no call blocks its caller for more than a few ms.
// See tests/engine/tst_session.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capabilities.h"
#include "config.h"
#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "parallel/holdings.h"

namespace paralab {

enum class RunState { Idle, Loading, Running, Paused, Finished, Failed };
const char* runStateName(RunState s);

// Values only: safe to keep, copy and paint from any thread.
struct Snapshot {
  RunState state = RunState::Idle;
  std::string error;        // set when state == Failed (one line)
  std::string notice;       // why the last reconfigure() could not be applied ("" if it was)
  RunConfig config;         // the configuration of this run
  int64_t runId = 0;        // increments with every start()
  int64_t stepsDone = 0;
  int64_t parameterCount = 0;  // P of the model being trained (0 until it is built)
  // Steps [from, stepsDone) as asked in snapshot(from); the session keeps the last
  // kHistorySteps, so a caller that asks for older ones gets the oldest kept onwards.
  std::vector<StepMetrics> steps;
  std::vector<std::vector<Span>> spans;  // per rank: spans of the last `spanSteps` steps
  // What every rank holds (the strategies' sharding) and what it sent in the last step; empty
  // until the run is built.
  std::vector<RankHoldings> holdings;
};

class Session {
 public:
  static constexpr int64_t kHistorySteps = 20000;

  Session();
  ~Session();  // stops and joins the training thread
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Validates, then starts a new run (loading data and building the model on the training
  // thread). Returns the validation error instead of starting, or "" on success. `paused`:
  // no step is taken until resume() or stepOnce() (so Step from idle is exactly one step).
  std::string start(const RunConfig& config, bool paused = false);
  void pause();     // finishes the step in flight, then waits
  void resume();
  void stepOnce();  // when paused (or just started paused): one step, then pause again
  void stop();      // ends the run after the step in flight; returns at once
  // Live reconfiguration: after the step in flight, the run goes on under `config` (other
  // ranks, strategy, degrees, link, learning rate ...) from the same step with the same
  // parameters and optimizer state, re-sharded. Returns at once: "" when accepted, or one line
  // naming what cannot change without a new run (the model, data, optimizer kind, seed) or
  // what is invalid. A failure while re-sharding leaves the run as it was and is reported in
  // Snapshot::notice.
  std::string reconfigure(const RunConfig& config);

  // Steps from index `fromStep` (0-based) on, plus the spans of the last `spanSteps` steps.
  Snapshot snapshot(int64_t fromStep = 0, int spanSteps = 0) const;

 private:
  struct Run;
  std::shared_ptr<Run> current() const;  // the run commands go to, copied under m_mutex

  mutable std::mutex m_mutex;  // guards m_run and m_runCounter (callers may be on any thread)
  std::shared_ptr<Run> m_run;
  int64_t m_runCounter = 0;
};

}  // namespace paralab
