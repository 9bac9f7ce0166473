// JobRunner: a run whose ranks are processes, launched by the window as an mpirun job of
// `paralab-run --json --control stdin` (job_command.h), or submitted as a Slurm batch job whose
// script runs mpirun of `paralab-run --json --control FILE` (batch_script.h, slurm_job.h): the
// kind of launch (job_launch.h) follows the backend. Commands go to rank 0 over the launcher's
// standard input, or appended to the job's control file (pause, resume, step, stop, save FILE:
// no socket is opened); the JSON lines it prints come back over the launcher's standard output,
// or from the batch job's output file as it grows, read as they arrive with the reader of
// recorded runs (readRecordedLine), and are handed out as Session hands out a thread run's:
// value snapshots of the steps not taken yet, with the spans of the last steps and the ranks'
// holdings the lines carry (metrics/step_views.h). It is a RunControl (run_control.h), so the
// window drives and draws a job with the code that drives Session and draws thread runs and
// opened files, timeline and holdings map included.
// The launcher runs in a process group of its own, and every process it starts here carries the
// job's token in its environment: stopping, a failure and destruction end them all (SIGTERM,
// then SIGKILL kGraceMs later; a batch job is cancelled with scancel), so no process outlives
// the job or the window. An --elastic mpirun job whose replica failed ends for a relaunch
// (train/elastic.h): it is launched again on the survivors from its last checkpoint, its lines
// continuing the run's. See tests/app/tst_window_jobs.cpp, tst_window_slurm.cpp and
// tst_window_elastic.cpp.
#pragma once
#include <QObject>
#include <QProcess>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "job_command.h"
#include "metrics/step_views.h"
#include "run_control.h"

class QFile;
class QTemporaryDir;

namespace paralab {

class JobLaunch;

class JobRunner : public QObject, public RunControl {
  Q_OBJECT
 public:
  static constexpr int kStopMs = 1000;   // stop over the channel: the step in flight may end
  static constexpr int kGraceMs = 1500;  // SIGTERM, then SIGKILL this much later

  // `hosts` says, at every start and live change, the hosts as jobCommand takes them ("" this
  // machine only).
  explicit JobRunner(std::function<QString()> hosts = {}, QObject* parent = nullptr);
  ~JobRunner() override;  // ends every process of the job: SIGTERM, SIGKILL kGraceMs later

  RunPlace place() const override { return RunPlace::Processes; }
  // Launches the job for `config`: "" when started, or one line saying why not. `paused`: no
  // step until resume() or stepOnce().
  std::string start(const RunConfig& config, bool paused = false) override;
  void pause() override;
  void resume() override;
  void stepOnce() override;  // one step, then paused (as Session::stepOnce)
  // Ends the job: stop over the channel (the step in flight ends, the summary comes); what is
  // still running kStopMs later is terminated. Returns at once.
  void stop() override;
  // A live change: the job pauses, rank 0 saves a checkpoint, the job stops and is launched
  // again with `config` and --resume, so the steps go on from the same one. "" when accepted,
  // or one line naming what needs a new run (needsNewRun, as Session::reconfigure).
  std::string reconfigure(const RunConfig& config) override;

  // As Session::snapshot: the steps from index `fromStep` on, those not released yet, and the
  // spans of the last RunViews::kSteps steps (whatever `spanSteps` asks: the lines carry those)
  // and the latest holdings, when the lines had them. Never waits: trySnapshot is snapshot.
  Snapshot snapshot(int64_t fromStep = 0, int spanSteps = 0) const override;
  std::optional<Snapshot> trySnapshot(int64_t fromStep = 0, int spanSteps = 0) const override {
    return snapshot(fromStep, spanSteps);
  }
  void release(int64_t step) override;

  bool isRunning() const;  // a process of the job is alive
  QString commandText() const { return m_command.text(); }  // of the latest launch
  QString batchScript() const { return m_command.script; }  // of the latest Slurm launch
  // The scheduler's word on the latest launch ("Slurm job 12 pending (Resources)"; "" for
  // mpirun), and the folder of its files ("" for mpirun).
  QString jobState() const;
  QString jobFolder() const;
  // The launcher's process group, and the token in the environment (PARALAB_JOB) of every
  // process it started here, of the latest launch (0 and "" before the first).
  qint64 processGroup() const;
  QString token() const;
  // Every line the job prints on stdout is also appended to `path` (a recorded run's file).
  void setTranscript(const QString& path);
  // Local processes whose environment holds PARALAB_JOB=`token` (read from /proc).
  static QList<qint64> processesOf(const QString& token);

 private:
  QString launch(const QString& resumeFrom);  // "" or why not; the new launch is m_launch
  bool relaunchSurvivors();  // --elastic: a replica failed; the job again, one process fewer
  QString elasticCheckpoint();  // where an --elastic mpirun job's checkpoints go ("" none)
  void send(const QByteArray& command);
  void readOutput();
  void onFinished();
  void fail(const QString& error);
  QString stderrLine() const;  // the job's own message, or the launcher's first line

  JobLaunch* m_launch = nullptr;  // the latest launch (earlier ones wind down on their own)
  JobCommand m_command;
  RunConfig m_config;               // of the processes now running
  std::optional<RunConfig> m_next;  // a live change: launched once the job has saved
  std::function<QString()> m_hostsOf;
  QString m_hosts, m_checkpoint;
  std::unique_ptr<QTemporaryDir> m_checkpoints;  // where an mpirun job's live changes save
  RunState m_state = RunState::Idle;
  bool m_paused = false, m_stopping = false;
  QString m_error, m_notice;
  // The recorders the processes printed when the job hung (flightFromDumpLines).
  std::optional<FlightReport> m_flight;
  int64_t m_runId = 0, m_released = 0, m_configStep = 0;
  std::deque<StepMetrics> m_steps;  // not released yet
  std::optional<StepMetrics> m_lastStep;  // the newest, released or not (the holdings' traffic)
  RunViews m_views;                       // spans and holdings of the lines read
  QFile* m_transcript = nullptr;
};

}  // namespace paralab
