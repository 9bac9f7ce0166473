// Session: the one door between the window (or any caller) and the training engine, for runs
// whose ranks are threads of this process (RunControl, run_control.h). Commands go in (start,
// pause, resume, stepOnce, stop); value snapshots come out. Training runs on a thread the
// session owns; no call blocks its caller for more than a few ms.
// See tests/engine/tst_session.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "capabilities.h"
#include "run_control.h"

namespace paralab {

class Session : public RunControl {
 public:
  // Steps kept for snapshots at most (8 ranks: about 4 KB each). A caller that release()s what
  // it has taken holds the session to the steps of one poll; the bound is for the others, and
  // lets a poller that stalled for a few seconds still get every step.
  static constexpr int64_t kHistorySteps = 20000;

  Session();
  ~Session() override;  // stops and joins the training thread
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Validates, then starts a new run (loading data and building the model on the training
  // thread). Returns the validation error instead of starting, or "" on success. `paused`:
  // no step is taken until resume() or stepOnce() (so Step from idle is exactly one step).
  RunPlace place() const override { return RunPlace::Threads; }
  std::string start(const RunConfig& config, bool paused = false) override;
  void pause() override;     // finishes the step in flight, then waits
  void resume() override;
  void stepOnce() override;  // when paused (or just started paused): one step, then pause again
  void stop() override;      // ends the run after the step in flight; returns at once
  // Ends the run and frees its trainer on the session's own thread, not the caller's (see
  // release()), then hands the freed memory back to the system.
  void discard() override;
  // Live reconfiguration: after the step in flight, the run goes on under `config` (other
  // ranks, strategy, degrees, link, learning rate ...) from the same step with the same
  // parameters and optimizer state, re-sharded. Returns at once: "" when accepted, or one line
  // naming what cannot change without a new run (the model, data, optimizer kind, seed) or
  // what is invalid. A failure while re-sharding leaves the run as it was and is reported in
  // Snapshot::notice.
  std::string reconfigure(const RunConfig& config) override;

  // Steps from index `fromStep` (0-based) on, plus the spans of the last `spanSteps` steps.
  Snapshot snapshot(int64_t fromStep = 0, int spanSteps = 0) const override;
  // snapshot() for a caller that must not wait: the window's GUI thread. The training's threads
  // run at a lower priority (session.cpp), so one the kernel preempts while it holds the run's
  // lock or a rank's span buffer holds it until its turn comes back: tens of ms when 8 ranks
  // share 2 cores, the GUI waiting on them. Returns nothing when one is held (after a few
  // tries, a few µs); the caller asks again at its next poll.
  std::optional<Snapshot> trySnapshot(int64_t fromStep = 0, int spanSteps = 0) const override;
  // The caller has taken steps [0, `step`) of the current run: the session keeps them no more
  // (later snapshots start after them), so its memory does not grow with the run. The steps
  // are freed by the training thread after its next step (the caller's thread never frees what
  // a training thread allocated: that can wait on the allocator's lock of a preempted thread).
  void release(int64_t step) override;

 private:
  struct Run;
  class MemoryReturner;
  std::shared_ptr<Run> current() const;  // the run commands go to, copied under m_mutex
  static bool copyRun(const Run& run, int64_t fromStep, int spanSteps, bool tryOnly, Snapshot& s);

  mutable std::mutex m_mutex;  // guards m_run and m_runCounter (callers may be on any thread)
  std::shared_ptr<Run> m_run;
  int64_t m_runCounter = 0;
  std::unique_ptr<MemoryReturner> m_returner;  // destroyed after the runs' threads are joined
};

}  // namespace paralab
