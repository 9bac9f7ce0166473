// MainWindow's runs, wherever they train: thread ranks in the engine's Session, or (Execution:
// MPI processes, NCCL) an mpirun job of paralab-run that JobRunner launches and reads. Both
// hand out the same snapshots, so everything downstream (history, charts, exports, the
// summary) is one code path. See tests/app/tst_window_jobs.cpp.
#include "job_runner.h"
#include "main_window.h"
#include "charts/holdings_map.h"
#include "charts/timeline_chart.h"
#include "charts/chart_hub.h"
#include "panels/config_panel.h"

namespace paralab {

// Ranks as processes are launched by mpirun; threads train in this process.
static bool isJob(const RunConfig& c) { return c.backend != "thread"; }

std::string MainWindow::startRun(const RunConfig& config, bool paused) {
  // An opened file without spans or holdings said so in these charts (openRunFile); a run has them.
  if (auto* t = m_hub->find<TimelineChart>())
    t->setPlaceholderText(tr("No spans yet: press Start (F5) to train"));
  if (auto* h = m_hub->find<HoldingsMap>())
    h->setPlaceholderText(tr("No holdings yet: they come with the first step"));
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

// A job's snapshots carry the spans and holdings its lines brought (JobRunner), as a thread
// run's carry the session's: the timeline and holdings map draw both alike.
Snapshot MainWindow::runSnapshot(int64_t fromStep) {
  return m_onJob ? m_job->snapshot(fromStep) : m_session.snapshot(fromStep, TimelineChart::kSteps);
}

std::optional<Snapshot> MainWindow::tryRunSnapshot(int64_t fromStep) {
  if (m_onJob) return m_job->snapshot(fromStep);
  return m_session.trySnapshot(fromStep, TimelineChart::kSteps);
}

void MainWindow::releaseRun(int64_t step) {
  m_onJob ? m_job->release(step) : m_session.release(step);
}

}  // namespace paralab
