// One launch of a job (JobRunner): the processes a launcher started for one command, how
// commands reach rank 0, and the job's output lines as they arrive. Two kinds: MpirunLaunch
// (mpirun here; commands over its standard input, lines from its standard output) and
// SlurmLaunch (slurm_job.h: sbatch; commands appended to a control file, lines tailed from
// the job's output file). Every process started carries the launch's token in its environment
// (PARALAB_JOB), so none outlives the job. See tests/app/tst_window_jobs.cpp and
// tst_window_slurm.cpp.
#pragma once
#include <QObject>
#include <QProcess>
#include <QTimer>
#include <functional>

#include "job_command.h"

namespace paralab {

class JobLaunch : public QObject {
 public:
  explicit JobLaunch(QObject* parent);

  // Starts `c`: "" when started, or one line saying why not.
  virtual QString start(const JobCommand& c) = 0;
  virtual bool alive() const = 0;                    // a process of the job may still run
  virtual void send(const QByteArray& command) = 0;  // a line to rank 0's control channel
  // Ends the job after the step in flight where it can; forced a while later (kStopMs, or
  // Slurm's cancel).
  virtual void stop() = 0;
  virtual void terminate() = 0;  // ends it now (SIGTERM, SIGKILL kGraceMs later; scancel)
  virtual void endNow() = 0;     // synchronous, for the end of the window
  virtual bool readLine(QByteArray* line) = 0;  // the next whole line of its output, if any
  virtual bool endedOk() const = 0;             // after onEnded: it ended with exit code 0
  // After onEnded: it ended for a relaunch on its survivors (--elastic, train/elastic.h).
  virtual bool endedForRelaunch() const { return false; }
  virtual QString endText() const = 0;          // how it ended, when its error output says nothing
  virtual QString stateText() const { return {}; }  // the scheduler's word on it ("" none)
  virtual QString folder() const { return {}; }     // where its files are ("" none)

  std::function<void()> onOutput;  // lines arrived
  std::function<void()> onEnded;   // the launcher, or the job, ended
  QString token;                   // PARALAB_JOB of its processes
  qint64 group = 0;                // a local launcher's process group (0: none)
  QByteArray err;                  // its error output, the first 64 KB
};

// mpirun here, in a process group of its own.
class MpirunLaunch : public JobLaunch {
 public:
  explicit MpirunLaunch(QObject* parent);
  ~MpirunLaunch() override { endNow(); }

  QString start(const JobCommand& c) override;
  bool alive() const override;
  void send(const QByteArray& command) override;
  void stop() override;
  void terminate() override;
  void endNow() override;
  bool readLine(QByteArray* line) override;
  bool endedOk() const override;
  bool endedForRelaunch() const override;
  QString endText() const override;

 private:
  void signalAll(int sig);

  QProcess m_process;
  QTimer m_stop, m_kill;
};

}  // namespace paralab
