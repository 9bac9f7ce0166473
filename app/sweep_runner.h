// SweepRunner: the window's handle on a sweep job (engine/api/jobs/sweep_job.h: the same run at
// 1, 2, 4, ... ranks on the engine's thread; or goodput_sweep_job.h: goodput at each checkpoint
// interval). Its progress and result arrive as signals on the
// GUI thread, so the window never waits on it; cancel() stops it between steps.
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#pragma once
#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <memory>
#include <vector>

#include "jobs/goodput_sweep_job.h"
#include "jobs/sweep_job.h"

namespace paralab {

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // cancels a sweep in flight and waits for its step to end

  // Starts a sweep unless one is running (then returns false).
  bool start(const RunConfig& base, const std::vector<int>& ranks, int steps, int warmup);
  // A goodput sweep over the checkpoint interval (jobs/goodput_sweep_job.h), unless a sweep is
  // running; its checkpoints go to a folder of the job's own under the temporary location.
  bool startGoodput(const RunConfig& base, const std::vector<int>& checkpointEvery, int repeats);
  void cancel();
  bool isRunning() const { return m_job != nullptr || m_goodputJob != nullptr; }

 signals:
  void progress(int done, int total);
  // The points measured (all of them, or those finished before a cancel), or `error` set.
  void finished(const paralab::SweepResult& result, const QString& error);
  void goodputFinished(const paralab::GoodputSweepResult& result, const QString& error);

 private:
  void finish();

  jobs::JobCallbacks callbacks();  // progress and the end, posted to the GUI thread

  std::unique_ptr<jobs::Job<SweepResult>> m_job;  // GUI thread only
  std::unique_ptr<jobs::Job<GoodputSweepResult>> m_goodputJob;
  std::unique_ptr<QTemporaryDir> m_goodputDir;  // the goodput sweep's checkpoint
};

}  // namespace paralab
