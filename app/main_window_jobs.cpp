// MainWindow's runs, wherever they train: thread ranks in the engine's Session, or (Execution:
// MPI processes, NCCL) an mpirun job of paralab-run that JobRunner launches and reads. Both
// hand out the same snapshots, so everything downstream (history, charts, exports, the
// summary) is one code path. See tests/app/tst_window_jobs.cpp.
#include "job_runner.h"
#include "main_window.h"
#include "charts/timeline_chart.h"
#include "panels/config_panel.h"

namespace paralab {

// Ranks as processes are launched by mpirun; threads train in this process.
static bool isJob(const RunConfig& c) { return c.backend != "thread"; }

std::string MainWindow::startRun(const RunConfig& config, bool paused) {
  if (!isJob(config)) {
    const std::string err = m_session.start(config, paused);
    if (err.empty()) m_onJob = false;
    return err;
  }
  if (!m_job) m_job = new JobRunner(this);
  const QString err = m_job->start(config, m_configPanel->hosts(), paused);
  if (err.isEmpty()) m_onJob = true;
  return err.toStdString();
}

void MainWindow::pauseRun() { m_onJob ? m_job->pause() : m_session.pause(); }
void MainWindow::resumeRun() { m_onJob ? m_job->resume() : m_session.resume(); }
void MainWindow::stepRun() { m_onJob ? m_job->stepOnce() : m_session.stepOnce(); }
void MainWindow::stopRun() { m_onJob ? m_job->stop() : m_session.stop(); }

std::string MainWindow::reconfigureRun(const RunConfig& config) {
  return m_onJob ? m_job->reconfigure(config).toStdString() : m_session.reconfigure(config);
}

// A job's lines carry no spans or holdings (the timeline and holdings map need the live engine
// in this process), as a recorded run's do not.
Snapshot MainWindow::runSnapshot(int64_t fromStep) {
  return m_onJob ? m_job->snapshot(fromStep) : m_session.snapshot(fromStep, TimelineChart::kSteps);
}

void MainWindow::releaseRun(int64_t step) {
  m_onJob ? m_job->release(step) : m_session.release(step);
}

}  // namespace paralab
