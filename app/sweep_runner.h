// SweepRunner: the window's handle on a sweep job (engine/api/jobs/sweep_job.h: the same run at
// 1, 2, 4, ... ranks on the engine's thread). Its progress and result arrive as signals on the
// GUI thread, so the window never waits on it; cancel() stops it between steps.
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#pragma once
#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "jobs/sweep_job.h"

namespace paralab {

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // cancels a sweep in flight and waits for its step to end

  // Starts a sweep unless one is running (then returns false).
  bool start(const RunConfig& base, const std::vector<int>& ranks, int steps, int warmup);
  void cancel();
  bool isRunning() const { return m_job != nullptr; }

 signals:
  void progress(int done, int total);
  // The points measured (all of them, or those finished before a cancel), or `error` set.
  void finished(const paralab::SweepResult& result, const QString& error);

 private:
  void finish();

  std::unique_ptr<jobs::Job<SweepResult>> m_job;  // GUI thread only
};

}  // namespace paralab
