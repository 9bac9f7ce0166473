// A Slurm batch job's launch: sbatch, squeue/sacct, the output file tailed, scancel (see
// slurm_job.h). Slurm's own commands only: no client of its protocol is written here.
// See tests/app/tst_window_slurm.cpp.
#include "slurm_job.h"

#include <unistd.h>

#include <QDir>
#include <QFile>

#include "batch_script.h"
#include "job_runner.h"

namespace paralab {

namespace {

// The states after which the job runs no more (squeue(1), JOB STATE CODES).
bool isFinal(const QString& state) {
  static const QStringList final = {"COMPLETED",     "FAILED",    "CANCELLED",   "TIMEOUT",
                                    "NODE_FAIL",     "PREEMPTED", "BOOT_FAIL",   "DEADLINE",
                                    "OUT_OF_MEMORY", "REVOKED",   "SPECIAL_EXIT"};
  return final.contains(state);
}

QByteArray readFrom(const QString& path, qint64 offset) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly) || !f.seek(offset)) return {};
  return f.readAll();
}

}  // namespace

SlurmLaunch::SlurmLaunch(QObject* parent) : JobLaunch(parent) {
  m_poll.setInterval(kPollMs);
  connect(&m_poll, &QTimer::timeout, this, &SlurmLaunch::poll);
  m_tail.setInterval(kTailMs);
  connect(&m_tail, &QTimer::timeout, this, &SlurmLaunch::tail);
  connect(&m_query, &QProcess::finished, this, &SlurmLaunch::onQueried);
}

QString SlurmLaunch::jobsFolder() {
  const QString set = qEnvironmentVariable("PARALAB_JOBS_DIR");
  return set.isEmpty() ? QDir::homePath() + "/paralab-jobs" : set;
}

QString SlurmLaunch::start(const JobCommand& c) {
  m_folder = jobsFolder() + "/" + token;
  if (!QDir().mkpath(m_folder))
    return QObject::tr("backend: cannot make the job's folder '%1'").arg(m_folder);
  QFile script(m_folder + "/" + kBatchScriptFile), control(m_folder + "/" + kControlFile);
  if (!script.open(QIODevice::WriteOnly) || script.write(c.script.toUtf8()) < 0 ||
      !control.open(QIODevice::WriteOnly))
    return QObject::tr("backend: cannot write the batch script in '%1'").arg(m_folder);
  script.close();
  control.close();
  QProcess sbatch;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("PARALAB_JOB", token);  // sbatch exports it to the job (--export=ALL)
  sbatch.setProcessEnvironment(env);
  sbatch.setWorkingDirectory(m_folder);
  sbatch.start(c.program, c.arguments);
  if (!sbatch.waitForFinished(30000) || sbatch.exitStatus() != QProcess::NormalExit ||
      sbatch.exitCode() != 0) {
    const QString said = QString::fromLocal8Bit(sbatch.readAllStandardError()).trimmed();
    return QObject::tr("backend: sbatch refused the job: %1")
        .arg(said.isEmpty() ? sbatch.errorString() : said.section('\n', 0, 0));
  }
  // --parsable: "ID" or "ID;CLUSTER".
  m_jobId = QString::fromLocal8Bit(sbatch.readAllStandardOutput()).trimmed().section(';', 0, 0);
  if (m_jobId.isEmpty()) return QObject::tr("backend: sbatch gave no job id");
  m_state = "PENDING";
  m_poll.start();
  m_tail.start();
  poll();
  return {};
}

bool SlurmLaunch::alive() const { return !m_ended || !JobRunner::processesOf(token).isEmpty(); }

void SlurmLaunch::send(const QByteArray& command) {
  if (m_ended || m_folder.isEmpty()) return;
  QFile control(m_folder + "/" + kControlFile);
  if (control.open(QIODevice::WriteOnly | QIODevice::Append)) control.write(command + '\n');
}

// squeue knows the job while it is queued and for a while after it ends (MinJobAge); sacct
// knows it after that, where the cluster keeps accounting.
void SlurmLaunch::poll() {
  if (m_ended || m_jobId.isEmpty() || m_query.state() != QProcess::NotRunning) return;
  m_askedSacct = false;
  m_query.start(slurmProgram("squeue"),
                {"--noheader", "--states=all", "--jobs", m_jobId, "--format=%T|%r"});
}

void SlurmLaunch::onQueried() {
  const QString out = QString::fromLocal8Bit(m_query.readAllStandardOutput()).trimmed();
  m_query.readAllStandardError();
  const QString first = out.section('\n', 0, 0);
  if (first.isEmpty()) {
    if (!m_askedSacct) {
      m_askedSacct = true;
      m_query.start(slurmProgram("sacct"), {"--noheader", "--parsable2", "--allocations", "--jobs",
                                            m_jobId, "--format=State,Reason"});
      return;
    }
    // Neither knows it (no accounting, and squeue forgot it): it ran, and is over.
    if (++m_unknown >= 3) {
      m_state = m_cancelled ? "CANCELLED" : "UNKNOWN";
      finish();
    }
    return;
  }
  m_unknown = 0;
  // sacct says "CANCELLED by 0".
  m_state = first.section('|', 0, 0).section(' ', 0, 0).trimmed();
  m_reason = first.section('|', 1).trimmed();
  if (isFinal(m_state)) finish();
}

void SlurmLaunch::tail() {
  if (m_jobId.isEmpty()) return;
  QString out = QString(kOutputPattern).replace("%j", m_jobId);
  const QByteArray more = readFrom(m_folder + "/" + out, m_offset);
  if (more.isEmpty()) return;
  m_offset += more.size();
  m_partial += more;
  bool any = false;
  for (qsizetype nl; (nl = m_partial.indexOf('\n')) >= 0; any = true) {
    m_lines.push_back(m_partial.left(nl + 1));
    m_partial.remove(0, nl + 1);
  }
  if (any && onOutput) onOutput();
}

// The job's last lines and its error file, then the runner hears of the end.
void SlurmLaunch::finish() {
  if (m_ended) return;
  m_poll.stop();
  m_tail.stop();
  tail();
  const QString errFile = QString(kErrorPattern).replace("%j", m_jobId);
  err = readFrom(m_folder + "/" + errFile, 0).left(65536);
  m_ended = true;
  if (onEnded) onEnded();
}

bool SlurmLaunch::readLine(QByteArray* line) {
  if (m_lines.empty()) return false;
  *line = m_lines.front();
  m_lines.pop_front();
  return true;
}

void SlurmLaunch::cancel(bool wait) {
  if (m_ended || m_jobId.isEmpty() || m_cancelled) return;
  m_cancelled = true;
  QProcess scancel;
  scancel.start(slurmProgram("scancel"), {m_jobId});
  scancel.waitForFinished(wait ? 10000 : 5000);
}

void SlurmLaunch::terminate() { cancel(false); }

// scancel, then up to kGraceMs for this machine's processes of the job to go (Slurm signals
// them: SIGTERM, SIGKILL after its KillWait).
void SlurmLaunch::endNow() {
  onOutput = nullptr;
  onEnded = nullptr;
  m_poll.stop();
  m_tail.stop();
  if (m_query.state() != QProcess::NotRunning) {
    m_query.kill();
    m_query.waitForFinished(1000);
  }
  cancel(true);
  for (int waited = 0; waited < JobRunner::kGraceMs && !JobRunner::processesOf(token).isEmpty();
       waited += 50)
    usleep(50 * 1000);
  m_ended = true;
}

QString SlurmLaunch::stateText() const {
  if (m_jobId.isEmpty()) return {};
  const bool why = !m_reason.isEmpty() && m_reason != "None" && m_state == "PENDING";
  return why ? QObject::tr("Slurm job %1 %2 (%3)").arg(m_jobId, m_state.toLower(), m_reason)
             : QObject::tr("Slurm job %1 %2").arg(m_jobId, m_state.toLower());
}

QString SlurmLaunch::endText() const {
  return QObject::tr("Slurm job %1 ended %2 and its error file (%3) says nothing")
      .arg(m_jobId, m_state, m_folder + "/" + QString(kErrorPattern).replace("%j", m_jobId));
}

}  // namespace paralab
