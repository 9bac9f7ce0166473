// A job: engine work (a sweep, a teaching benchmark, the projection's host check) on a thread
// the engine owns, with progress (done of total), cancel, and a result value or an error line.
// The callbacks run on the job's thread; a window posts them to its own thread. See
// tests/engine/tst_jobs.cpp and app/sweep_runner.h.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace paralab::jobs {

// What a job's work calls between pieces: false when the job was cancelled (the work then
// returns what it has).
using ReportProgress = std::function<bool(int done, int total)>;

struct JobCallbacks {
  std::function<void(int done, int total)> progress;  // after each piece
  std::function<void()> finished;  // the job's last act: result() or error() is ready
};

// The thread and its bookkeeping; Job<R> adds the result.
class JobBase {
 public:
  JobBase(const JobBase&) = delete;
  JobBase& operator=(const JobBase&) = delete;
  virtual ~JobBase();  // cancels the work and waits for its piece in flight to end

  void cancel() { m_cancel = true; }
  bool cancelRequested() const { return m_cancel; }
  bool finished() const { return m_finished; }
  int done() const { return m_done; }
  int total() const { return m_total; }
  void wait();  // until the work has returned and finished() was called back
  // The work's exception as one line ("" when it returned a result).
  const std::string& error() const { return m_error; }

 protected:
  JobBase() = default;
  // Starts `work` on the job's thread; an exception it throws becomes error().
  void launch(std::function<void(const ReportProgress&)> work, JobCallbacks callbacks);

 private:
  struct Thread;  // the std::thread, in jobs/job.cpp
  struct ThreadDeleter {
    void operator()(Thread* t) const;
  };
  std::unique_ptr<Thread, ThreadDeleter> m_thread;
  std::atomic<bool> m_cancel{false}, m_finished{false};
  std::atomic<int> m_done{0}, m_total{0};
  std::string m_error;
};

template <typename Result>
class Job : public JobBase {
 public:
  using Work = std::function<Result(const ReportProgress&)>;
  Job(Work work, JobCallbacks callbacks) {
    launch([this, work = std::move(work)](const ReportProgress& p) { m_result = work(p); },
           std::move(callbacks));
  }
  ~Job() override { cancel(), wait(); }  // before m_result goes
  // Once finished(): what the work returned (all of it, or what it had at a cancel); nullopt
  // with error() set.
  const std::optional<Result>& result() const { return m_result; }

 private:
  std::optional<Result> m_result;
};

}  // namespace paralab::jobs
