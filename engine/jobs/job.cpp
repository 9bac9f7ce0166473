// JobBase: one std::thread per job, joined by wait() and by the destructor (see jobs/job.h).
// See tests/engine/tst_jobs.cpp.
#include "jobs/job.h"

#include <exception>
#include <thread>

namespace paralab::jobs {

struct JobBase::Thread {
  std::thread thread;
};

void JobBase::ThreadDeleter::operator()(Thread* t) const { delete t; }

JobBase::~JobBase() {
  cancel();
  wait();
}

void JobBase::wait() {
  if (m_thread && m_thread->thread.joinable()) {
    if (m_thread->thread.get_id() == std::this_thread::get_id()) return;  // a callback's own job
    m_thread->thread.join();
  }
}

void JobBase::launch(std::function<void(const ReportProgress&)> work, JobCallbacks callbacks) {
  m_thread.reset(new Thread);
  m_thread->thread = std::thread([this, work = std::move(work), cb = std::move(callbacks)] {
    const ReportProgress report = [this, &cb](int done, int total) {
      m_done = done, m_total = total;
      if (cb.progress) cb.progress(done, total);
      return !m_cancel.load();
    };
    try {
      work(report);
    } catch (const std::exception& e) {
      m_error = e.what();
      if (m_error.empty()) m_error = "the job failed";
    }
    m_finished = true;
    if (cb.finished) cb.finished();
  });
}

}  // namespace paralab::jobs
