// SlurmLaunch: a launch of a job as a Slurm batch job (Ranks run as: Slurm job). start() writes
// the batch script (batch_script.h) and an empty control file into the job's folder and submits
// it with Slurm's own `sbatch --parsable`; every kPollMs `squeue` (then `sacct`, once squeue has
// forgotten the job) says its state: pending with Slurm's reason, running, then completed,
// failed, cancelled or timed out. The job's output file is read every kTailMs for the JSON
// lines it gained, which JobRunner draws as it draws an mpirun job's. Commands are appended to
// the control file (paralab-run --control FILE); stop and the end of the window cancel it with
// `scancel`. The folder must be on a file system the nodes share: $PARALAB_JOBS_DIR, else
// ~/paralab-jobs, one sub-folder per launch. See tests/app/tst_window_slurm.cpp.
#pragma once
#include <QProcess>
#include <QTimer>
#include <deque>

#include "job_launch.h"

namespace paralab {

class SlurmLaunch : public JobLaunch {
 public:
  static constexpr int kPollMs = 1000;  // squeue / sacct
  static constexpr int kTailMs = 200;   // the output file

  explicit SlurmLaunch(QObject* parent);
  ~SlurmLaunch() override { endNow(); }

  // The folder the jobs' sub-folders go in: $PARALAB_JOBS_DIR, else ~/paralab-jobs.
  static QString jobsFolder();

  QString start(const JobCommand& c) override;
  bool alive() const override;
  void send(const QByteArray& command) override;
  void stop() override { terminate(); }
  void terminate() override;
  void endNow() override;
  bool readLine(QByteArray* line) override;
  bool endedOk() const override { return m_state == "COMPLETED"; }
  QString endText() const override;
  QString stateText() const override;
  QString folder() const override { return m_folder; }

  QString jobId() const { return m_jobId; }
  QString state() const { return m_state; }    // Slurm's word: PENDING, RUNNING, COMPLETED ...
  QString reason() const { return m_reason; }  // Slurm's reason while pending ("Resources")

 private:
  void poll();
  void onQueried();
  void tail();
  void finish();
  void cancel(bool wait);

  QString m_folder, m_jobId, m_state, m_reason;
  QProcess m_query;  // squeue, or sacct
  bool m_askedSacct = false;
  int m_unknown = 0;  // polls in a row that neither squeue nor sacct knew the job
  bool m_ended = false, m_cancelled = false;
  QTimer m_poll, m_tail;
  qint64 m_offset = 0;  // bytes of the output file read
  QByteArray m_partial;
  std::deque<QByteArray> m_lines;
};

}  // namespace paralab
