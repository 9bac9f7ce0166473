// Session: a training thread per run, commands through atomics and a condition variable,
// results through a mutex-guarded history that snapshot() copies (see session.h).
// See tests/engine/tst_session.cpp.
#include "session.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "train/trainer.h"

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

// Everything one run shares between the caller's thread and its training thread.
struct Session::Run {
  RunConfig config;
  int64_t id = 0;

  mutable std::mutex mutex;  // guards everything below, held only to copy values
  std::condition_variable wake;
  RunState state = RunState::Loading;
  std::string error;
  bool paused = false;   // wanted state
  int stepsAllowed = 0;  // single steps requested while paused
  bool stopRequested = false;
  std::vector<StepMetrics> history;
  const SpanRecorder* spans = nullptr;  // owned by the trainer, valid while it lives
  std::unique_ptr<Trainer> trainer;     // kept after the run ends so spans stay readable

  std::thread thread;

  void body() {
    try {
      auto t = std::make_unique<Trainer>(config);
      std::unique_lock lock(mutex);
      trainer = std::move(t);
      spans = &trainer->spans();
      state = paused ? RunState::Paused : RunState::Running;
      while (true) {
        wake.wait(lock, [&] { return stopRequested || !paused || stepsAllowed > 0; });
        if (stopRequested) break;
        if (config.steps > 0 && trainer->stepsDone() >= config.steps) {
          state = RunState::Finished;
          return;
        }
        if (paused) --stepsAllowed;
        state = RunState::Running;
        lock.unlock();
        StepMetrics m = trainer->step();  // the work happens outside the lock
        lock.lock();
        history.push_back(std::move(m));
        if (paused && stepsAllowed == 0) state = RunState::Paused;
      }
      state = RunState::Finished;
    } catch (const std::exception& e) {
      std::lock_guard guard(mutex);
      state = RunState::Failed;
      error = e.what();
    }
  }
};

Session::Session() = default;

Session::~Session() {
  if (m_run) {
    stop();
    if (m_run->thread.joinable()) m_run->thread.join();
  }
}

std::string Session::start(const RunConfig& config) {
  if (auto err = config.validate()) return *err;
  auto run = std::make_shared<Run>();
  run->config = config;
  run->id = ++m_runCounter;
  std::shared_ptr<Run> previous = std::move(m_run);
  if (previous) {
    std::lock_guard lock(previous->mutex);
    previous->stopRequested = true;
    previous->wake.notify_all();
  }
  // The new thread first waits for the previous run to finish its step, so the caller never
  // waits for it; the previous run is released when its thread has been joined.
  Run* r = run.get();
  r->thread = std::thread([r, previous]() mutable {
    if (previous && previous->thread.joinable()) previous->thread.join();
    previous.reset();
    r->body();
  });
  m_run = std::move(run);
  return "";
}

void Session::pause() {
  if (!m_run) return;
  std::lock_guard lock(m_run->mutex);
  m_run->paused = true;
  m_run->stepsAllowed = 0;
  if (m_run->state == RunState::Running) m_run->state = RunState::Paused;
}

void Session::resume() {
  if (!m_run) return;
  std::lock_guard lock(m_run->mutex);
  m_run->paused = false;
  m_run->wake.notify_all();
}

void Session::stepOnce() {
  if (!m_run) return;
  std::lock_guard lock(m_run->mutex);
  m_run->paused = true;
  ++m_run->stepsAllowed;
  m_run->wake.notify_all();
}

void Session::stop() {
  if (!m_run) return;
  std::lock_guard lock(m_run->mutex);
  m_run->stopRequested = true;
  m_run->wake.notify_all();
}

Snapshot Session::snapshot(int64_t fromStep, int spanSteps) const {
  Snapshot s;
  if (!m_run) return s;
  std::lock_guard lock(m_run->mutex);
  s.state = m_run->state;
  s.error = m_run->error;
  s.config = m_run->config;
  s.runId = m_run->id;
  s.stepsDone = int64_t(m_run->history.size());
  if (fromStep < s.stepsDone)
    s.steps.assign(m_run->history.begin() + std::max<int64_t>(fromStep, 0), m_run->history.end());
  if (spanSteps > 0 && m_run->spans)
    s.spans.push_back(m_run->spans->since(s.stepsDone - spanSteps + 1));
  return s;
}

}  // namespace paralab
