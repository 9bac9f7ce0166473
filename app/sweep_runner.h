// SweepRunner: runs paralab::runSweep (the same run at 1, 2, 4, ... ranks) on a worker thread
// and reports progress and the result to the GUI thread through queued calls, so the window
// never waits on it; cancel() makes the next progress callback return false.
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#pragma once
#include <QObject>
#include <QString>
#include <atomic>
#include <thread>
#include <vector>

#include "train/sweep.h"

namespace paralab {

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // cancels a sweep in flight and waits for its step to end

  // Starts a sweep unless one is running (then returns false).
  bool start(const RunConfig& base, const std::vector<int>& ranks, int steps, int warmup);
  void cancel();
  bool isRunning() const { return m_running; }

 signals:
  void progress(int done, int total);
  // The points measured (all of them, or those finished before a cancel), or `error` set.
  void finished(const paralab::SweepResult& result, const QString& error);

 private:
  void finish(const SweepResult& result, const QString& error);

  std::thread m_thread;
  std::atomic<bool> m_cancel{false};
  bool m_running = false;  // GUI thread only
};

}  // namespace paralab
