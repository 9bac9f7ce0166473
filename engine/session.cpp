// Session: a training thread per run, commands through atomics and a condition variable,
// results through a mutex-guarded history that snapshot() copies (see session.h).
// See tests/engine/tst_session.cpp.
#include "session.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "platform.h"  // lowerThreadPriority, returnFreedMemory
#include "train/trainer.h"

namespace paralab {

// The training yields the cores to its caller's thread when both want one (a window's GUI
// thread, which must draw a frame in 16 ms while 8 ranks compute on 2 cores): the training
// thread takes a lower priority, and the ranks' threads it starts inherit it (Linux keeps a
// nice value per thread). Alone on the machine, training runs as fast as before.
namespace {
constexpr int kTrainingNice = 10;
void trainBehindTheCaller() { lowerThreadPriority(kTrainingNice); }
}  // namespace

// A trainer's buffers, freed, stay with the allocator's per-thread arenas unless handed back:
// the next trainer's ranks, new threads, draw from other arenas, and the process would grow by
// a trainer's worth at every live change (measured: about 10 MB per change at 8 ranks, H 128,
// scripts/soak.sh). malloc_trim hands them back, but it holds each arena's lock in turn, the
// window's too, for 5-13 ms in all (measured there): called by the training's low-priority
// thread and preempted, it made the window wait tens of ms. So a thread of the caller's
// priority, the session's own, trims, woken each time a trainer is gone.
class Session::MemoryReturner {
 public:
  MemoryReturner() : m_thread([this] { loop(); }) {}
  ~MemoryReturner() {
    {
      std::lock_guard lock(m_mutex);
      m_closing = true;
    }
    m_wake.notify_one();
    m_thread.join();
  }
  void request() {
    {
      std::lock_guard lock(m_mutex);
      m_wanted = true;
    }
    m_wake.notify_one();
  }
  // A run discarded (Reset): its thread is joined and the run freed here, then trimmed.
  void reap(std::shared_ptr<Run> run) {
    {
      std::lock_guard lock(m_mutex);
      m_discarded.push_back(std::move(run));
      m_wanted = true;
    }
    m_wake.notify_one();
  }

 private:
  void loop();

  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_wanted = false, m_closing = false;
  std::vector<std::shared_ptr<Run>> m_discarded;  // told to stop; joined and freed by loop()
  std::thread m_thread;  // last: it starts once the members above exist
};

// Everything one run shares between the caller's thread and its training thread.
struct Session::Run {
  RunConfig config;
  int64_t id = 0;
  MemoryReturner* returner = nullptr;  // the session's, which outlives every run

  mutable std::mutex mutex;  // guards everything below, held only to copy values
  std::condition_variable wake;
  RunState state = RunState::Loading;
  std::string error;
  // Every rank's recorder, when the watchdog ended the run (Snapshot::flight).
  std::optional<FlightReport> flight;
  bool paused = false;   // wanted state
  int stepsAllowed = 0;  // single steps requested while paused
  bool stopRequested = false;
  std::optional<RunConfig> pending;  // a reconfiguration to apply before the next step
  std::string notice;
  int64_t configStep = 0;  // stepsDone when `config` took effect
  LoadProgress loading;
  std::deque<StepMetrics> history;     // the last steps not freed, kHistorySteps at most
  int64_t stepsDone = 0;               // all steps, kept or not
  int64_t released = 0;                // steps [0, released) the caller took: not handed out
  // Of the steps kept, how many at the front may go: released, or past kHistorySteps.
  int64_t stepsToFree() const {
    const int64_t kept = int64_t(history.size());
    return std::max(std::clamp<int64_t>(released - (stepsDone - kept), 0, kept),
                    kept - kHistorySteps);
  }
  std::unique_ptr<Trainer> trainer;    // kept after the run ends so spans stay readable
  std::vector<RankHoldings> holdings;  // read on the training thread between steps

  std::thread thread;

  void note(const std::string& stage, int64_t done, int64_t total) {
    std::lock_guard guard(mutex);
    loading = {stage, done, total};
  }

  // Re-shards the run under `pending` between steps: the state is saved from the current
  // layout, a trainer for the new one is built and loads it. The lock is released meanwhile
  // so snapshots go on; on failure the old trainer stays and `notice` says why.
  void applyPending(std::unique_lock<std::mutex>& lock) {
    RunConfig next = *pending;
    pending.reset();
    next.steps = config.steps;
    lock.unlock();
    std::unique_ptr<Trainer> fresh;
    std::vector<RankHoldings> h;
    std::string why;
    try {
      const TrainingState state = trainer->saveState();
      fresh = std::make_unique<Trainer>(next);
      fresh->loadState(state);
      h = fresh->holdings();  // the new layout, read before its first step
    } catch (const std::exception& e) {
      why = e.what();
      fresh.reset();
    }
    lock.lock();
    if (fresh) {
      std::swap(trainer, fresh);
      std::swap(holdings, h);
      config = next;
      configStep = stepsDone;
      notice.clear();
    } else {
      notice = "reconfiguration not applied: " + why;
    }
    lock.unlock();
    fresh.reset();  // the old trainer's ranks end outside the lock
    h.clear();
    returner->request();
    lock.lock();
  }

  void body() {
    try {
      auto t =
          std::make_unique<Trainer>(config, [this](const std::string& stage, int64_t done,
                                                   int64_t total) { note(stage, done, total); });
      std::unique_lock lock(mutex);
      trainer = std::move(t);
      holdings = trainer->holdings();  // between steps: no rank is computing
      state = paused ? RunState::Paused : RunState::Running;
      while (true) {
        // Paused is reported only once no step is in flight.
        if (paused && stepsAllowed == 0 && state == RunState::Running) state = RunState::Paused;
        wake.wait(lock, [&] { return stopRequested || !paused || stepsAllowed > 0 || pending; });
        if (stopRequested) break;
        if (pending) {
          applyPending(lock);
          continue;
        }
        if (config.steps > 0 && trainer->stepsDone() >= config.steps) {
          state = RunState::Finished;
          return;
        }
        if (paused) --stepsAllowed;
        state = RunState::Running;
        lock.unlock();
        // The work, and every allocation and free it can, happen outside the lock: the caller
        // may be waiting for it (see trySnapshot).
        StepMetrics m = trainer->step();
        std::vector<RankHoldings> h = trainer->holdings();  // between steps: the step's traffic
        std::vector<StepMetrics> freed;
        freed.reserve(8);
        lock.lock();
        history.push_back(std::move(m));
        std::swap(holdings, h);
        ++stepsDone;
        // Released steps, and any past the bound, leave under the lock and are freed after it.
        // At most freed.capacity() a step: the rest go after the next one.
        for (int64_t n = std::min<int64_t>(stepsToFree(), int64_t(freed.capacity())); n > 0; --n) {
          freed.push_back(std::move(history.front()));
          history.pop_front();
        }
        lock.unlock();
        freed.clear();
        h.clear();
        lock.lock();
      }
      state = RunState::Finished;
    } catch (const HangDetected& h) {
      std::lock_guard guard(mutex);
      state = RunState::Failed;
      error = h.what();
      flight = FlightReport{h.diagnosis, h.ranks};
    } catch (const std::exception& e) {
      std::lock_guard guard(mutex);
      state = RunState::Failed;
      error = e.what();
    }
  }
};

void Session::MemoryReturner::loop() {
  std::unique_lock lock(m_mutex);
  while (true) {
    m_wake.wait(lock, [&] { return m_wanted || m_closing; });
    m_wanted = false;
    std::vector<std::shared_ptr<Run>> discarded = std::move(m_discarded);
    m_discarded.clear();
    const bool closing = m_closing;
    lock.unlock();
    for (const std::shared_ptr<Run>& run : discarded)
      if (run->thread.joinable()) run->thread.join();
    discarded.clear();  // the trainers, their models and buffers
    returnFreedMemory();
    if (closing) return;
    lock.lock();
  }
}

Session::Session() : m_returner(std::make_unique<MemoryReturner>()) {}

Session::~Session() {
  stop();
  if (m_run && m_run->thread.joinable()) m_run->thread.join();
}

std::shared_ptr<Session::Run> Session::current() const {
  std::lock_guard lock(m_mutex);
  return m_run;
}

std::string Session::start(const RunConfig& config, bool paused) {
  if (auto err = config.validate()) return *err;
  auto run = std::make_shared<Run>();
  std::lock_guard guard(m_mutex);
  run->config = config;
  run->returner = m_returner.get();
  run->paused = paused;  // before the thread exists: it cannot step first
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
    trainBehindTheCaller();
    if (previous && previous->thread.joinable()) previous->thread.join();
    if (previous) previous.reset(), r->returner->request();
    r->body();
  });
  m_run = std::move(run);
  return "";
}

void Session::pause() {
  const auto run = current();
  if (!run) return;
  std::lock_guard lock(run->mutex);
  run->paused = true;
  run->stepsAllowed = 0;
}

void Session::resume() {
  const auto run = current();
  if (!run) return;
  std::lock_guard lock(run->mutex);
  run->paused = false;
  run->wake.notify_all();
}

void Session::stepOnce() {
  const auto run = current();
  if (!run) return;
  std::lock_guard lock(run->mutex);
  run->paused = true;
  ++run->stepsAllowed;
  run->wake.notify_all();
}

std::string Session::reconfigure(const RunConfig& config) {
  if (auto err = config.validate()) return *err;
  const auto run = current();
  if (!run) return "reconfigure: no run to change (start one first)";
  std::lock_guard lock(run->mutex);
  const RunConfig& now = run->pending ? *run->pending : run->config;
  // What defines the model and its data cannot change under a running training.
  if (std::string err = needsNewRun(now, config); !err.empty()) return err;
  if (run->state == RunState::Finished || run->state == RunState::Failed)
    return "reconfigure: the run has ended (Start a new one)";
  run->pending = config;
  run->wake.notify_all();
  return "";
}

void Session::release(int64_t step) {
  const auto run = current();
  if (!run) return;
  std::lock_guard lock(run->mutex);
  run->released = std::max(run->released, std::min(step, run->stepsDone));
  // A run that steps no more (ended, or paused) frees them here: no training thread holds an
  // allocator lock the caller could wait on while it is not stepping.
  if (run->state == RunState::Finished || run->state == RunState::Failed ||
      run->state == RunState::Paused)
    run->history.erase(run->history.begin(), run->history.begin() + run->stepsToFree());
}

void Session::stop() {
  const auto run = current();
  if (!run) return;
  std::lock_guard lock(run->mutex);
  run->stopRequested = true;
  run->wake.notify_all();
}

void Session::discard() {
  std::shared_ptr<Run> run;
  {
    std::lock_guard lock(m_mutex);
    run = std::move(m_run);
  }
  if (!run) return;
  {
    std::lock_guard lock(run->mutex);
    run->stopRequested = true;
    run->wake.notify_all();
  }
  m_returner->reap(std::move(run));
}

Snapshot Session::snapshot(int64_t fromStep, int spanSteps) const {
  Snapshot s;
  const auto run = current();
  if (!run) return s;
  std::lock_guard lock(run->mutex);
  copyRun(*run, fromStep, spanSteps, false, s);
  return s;
}

std::optional<Snapshot> Session::trySnapshot(int64_t fromStep, int spanSteps) const {
  Snapshot s;
  std::shared_ptr<Run> run;
  {
    if (!tryLockBriefly(m_mutex)) return std::nullopt;
    std::lock_guard lock(m_mutex, std::adopt_lock);
    run = m_run;
  }
  if (!run) return s;
  if (!tryLockBriefly(run->mutex)) return std::nullopt;
  std::lock_guard lock(run->mutex, std::adopt_lock);
  if (!copyRun(*run, fromStep, spanSteps, true, s)) return std::nullopt;
  return s;
}

// With run.mutex held. `tryOnly`: a span buffer that is held makes it return false.
bool Session::copyRun(const Run& run, int64_t fromStep, int spanSteps, bool tryOnly, Snapshot& s) {
  s.state = run.state;
  s.error = run.error;
  s.flight = run.flight;
  s.notice = run.notice;
  s.holdings = run.holdings;
  s.config = run.config;
  s.runId = run.id;
  s.stepsDone = run.stepsDone;
  s.configStep = run.configStep;
  s.loading = run.loading;
  if (run.trainer) s.parameterCount = run.trainer->parameterCount();
  const int64_t first = run.stepsDone - int64_t(run.history.size());  // oldest kept
  const int64_t from = std::max({fromStep, first, run.released});     // released: not again
  if (from < s.stepsDone) s.steps.assign(run.history.begin() + (from - first), run.history.end());
  if (spanSteps > 0 && run.trainer) {
    // From step 1: spans between steps carry step -1 (Trainer::execute).
    const int64_t since = std::max<int64_t>(1, s.stepsDone - spanSteps + 1);
    s.spans.resize(size_t(run.trainer->localRankCount()));
    for (size_t r = 0; r < s.spans.size(); ++r) {
      const SpanRecorder& spans = run.trainer->spans(int(r));
      if (!tryOnly)
        s.spans[r] = spans.since(since);
      else if (!spans.trySince(since, s.spans[r]))
        return false;
    }
  }
  return true;
}

}  // namespace paralab
