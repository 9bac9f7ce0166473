// What every run control shares: the run states' names, where a run trains, and the rule of
// which settings need a new run (the settings table's fixed-per-run marks). See
// tests/engine/tst_reconfigure.cpp and tests/app/tst_window_jobs.cpp.
#include "run_control.h"

#include "schema.h"

namespace paralab {

const char* runStateName(RunState s) {
  switch (s) {
    case RunState::Idle: return "idle";
    case RunState::Loading: return "loading";
    case RunState::Running: return "running";
    case RunState::Paused: return "paused";
    case RunState::Finished: return "finished";
    case RunState::Failed: return "failed";
  }
  return "?";
}

RunPlace runPlace(const RunConfig& config) {
  return config.backend == Backend::Thread ? RunPlace::Threads : RunPlace::Processes;
}

std::string needsNewRun(const RunConfig& now, const RunConfig& wanted) {
  for (const Setting& s : runSettings())
    if (!s.live && s.get(wanted) != s.get(now))
      return s.key + ": changing it needs a new run (Reset, then Start)";
  return "";
}

RunConfig liveChanges(const RunConfig& now, const RunConfig& wanted,
                      std::vector<std::string>* waiting) {
  RunConfig live = now;
  for (const Setting& s : runSettings()) {
    if (s.get(wanted) == s.get(now)) continue;
    if (s.live) s.set(live, s.get(wanted));
    else if (waiting) waiting->push_back(s.key);
  }
  return live;
}

}  // namespace paralab
