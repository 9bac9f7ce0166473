// SweepRunner: a sweep job's callbacks posted to the GUI thread (see sweep_runner.h).
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#include "sweep_runner.h"

#include <chrono>

namespace paralab {

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() = default;  // the job cancels and waits

jobs::JobCallbacks SweepRunner::callbacks() {
  using Clock = std::chrono::steady_clock;
  auto lastReport = std::make_shared<Clock::time_point>(Clock::now() - std::chrono::seconds(1));
  jobs::JobCallbacks callbacks;
  // At most ~30 progress events a second: a sweep of fast steps must not flood the GUI.
  callbacks.progress = [this, lastReport](int done, int total) {
    const auto now = Clock::now();
    if (done != total && now - *lastReport <= std::chrono::milliseconds(33)) return;
    *lastReport = now;
    QMetaObject::invokeMethod(
        this, [this, done, total] { emit progress(done, total); }, Qt::QueuedConnection);
  };
  callbacks.finished = [this] {
    QMetaObject::invokeMethod(
        this, [this] { finish(); }, Qt::QueuedConnection);
  };
  return callbacks;
}

bool SweepRunner::start(const RunConfig& base, const std::vector<int>& ranks, int steps,
                        int warmup) {
  if (isRunning()) return false;
  m_job = jobs::startSweep({.base = base, .ranks = ranks, .steps = steps, .warmup = warmup},
                           callbacks());
  return true;
}

bool SweepRunner::startGoodput(const RunConfig& base, const std::vector<int>& checkpointEvery,
                               int repeats) {
  if (isRunning()) return false;
  m_goodputDir = std::make_unique<QTemporaryDir>();
  m_goodputJob = jobs::startGoodputSweep({.base = base,
                                          .checkpointEvery = checkpointEvery,
                                          .repeats = repeats,
                                          .dir = m_goodputDir->path().toStdString()},
                                         callbacks());
  return true;
}

void SweepRunner::cancel() {
  if (m_job) m_job->cancel();
  if (m_goodputJob) m_goodputJob->cancel();
}

void SweepRunner::finish() {
  if (m_goodputJob) {
    m_goodputJob->wait();  // it posted this as its last act
    const std::unique_ptr<jobs::Job<GoodputSweepResult>> job = std::move(m_goodputJob);
    m_goodputDir.reset();
    emit goodputFinished(job->result().value_or(GoodputSweepResult{}),
                         QString::fromStdString(job->error()));
    return;
  }
  if (!m_job) return;
  m_job->wait();  // it posted this as its last act
  const std::unique_ptr<jobs::Job<SweepResult>> job = std::move(m_job);
  emit finished(job->result().value_or(SweepResult{}), QString::fromStdString(job->error()));
}

}  // namespace paralab
