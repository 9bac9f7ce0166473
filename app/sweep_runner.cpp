// SweepRunner: runSweep on a std::thread, results back through queued calls (see
// sweep_runner.h). See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#include "sweep_runner.h"

#include <chrono>

namespace paralab {

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() {
  m_cancel = true;
  if (m_thread.joinable()) m_thread.join();
}

bool SweepRunner::start(const RunConfig& base, const std::vector<int>& ranks, int steps,
                        int warmup) {
  if (m_running) return false;
  if (m_thread.joinable()) m_thread.join();  // the last sweep's thread, already at its end
  m_cancel = false;
  m_running = true;
  m_thread = std::thread([this, base, ranks, steps, warmup] {
    using Clock = std::chrono::steady_clock;
    auto lastReport = Clock::now() - std::chrono::seconds(1);
    // At most ~30 progress events a second: a sweep of fast steps must not flood the GUI.
    const auto onProgress = [&](int done, int total) {
      const auto now = Clock::now();
      if (done == total || now - lastReport > std::chrono::milliseconds(33)) {
        lastReport = now;
        QMetaObject::invokeMethod(
            this, [this, done, total] { emit progress(done, total); }, Qt::QueuedConnection);
      }
      return !m_cancel.load();
    };
    SweepResult result;
    QString error;
    try {
      result = runSweep(base, ranks, steps, warmup, onProgress);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this, [this, result, error] { finish(result, error); }, Qt::QueuedConnection);
  });
  return true;
}

void SweepRunner::cancel() { m_cancel = true; }

void SweepRunner::finish(const SweepResult& result, const QString& error) {
  if (m_thread.joinable()) m_thread.join();  // it posted this as its last act
  m_running = false;
  emit finished(result, error);
}

}  // namespace paralab
