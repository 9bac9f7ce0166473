// A launch of a job, and the mpirun kind (see job_launch.h). See tests/app/tst_window_jobs.cpp.
#include "job_launch.h"

#include <signal.h>
#include <unistd.h>

#include <QRandomGenerator>

#include "job_runner.h"
#include "train/elastic.h"

namespace paralab {

JobLaunch::JobLaunch(QObject* parent) : QObject(parent) {
  token = QString("%1-%2").arg(getpid()).arg(QRandomGenerator::global()->generate64(), 0, 16);
}

MpirunLaunch::MpirunLaunch(QObject* parent) : JobLaunch(parent) {
  m_kill.setSingleShot(true);
  connect(&m_kill, &QTimer::timeout, this, [this] { signalAll(SIGKILL); });
  m_stop.setSingleShot(true);
  connect(&m_stop, &QTimer::timeout, this, &MpirunLaunch::terminate);
  connect(&m_process, &QProcess::readyReadStandardOutput, this, [this] {
    if (onOutput) onOutput();
  });
  connect(&m_process, &QProcess::readyReadStandardError, this, [this] {
    const QByteArray more = m_process.readAllStandardError();
    if (err.size() < 65536) err += more.left(65536 - err.size());
  });
  connect(&m_process, &QProcess::finished, this, [this] {
    err += m_process.readAllStandardError().left(qMax<qsizetype>(0, 65536 - err.size()));
    if (onEnded) onEnded();
  });
}

QString MpirunLaunch::start(const JobCommand& c) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("PARALAB_JOB", token);  // inherited by every process mpirun starts here
  m_process.setProcessEnvironment(env);
  // A group of its own: signals to -group reach the launcher and whatever stayed in its group,
  // never the window.
  m_process.setChildProcessModifier([] { ::setpgid(0, 0); });
  m_process.start(c.program, c.arguments);
  if (!m_process.waitForStarted(10000))
    return QObject::tr("backend: cannot start %1: %2").arg(c.program, m_process.errorString());
  group = m_process.processId();
  return {};
}

bool MpirunLaunch::alive() const {
  return m_process.state() != QProcess::NotRunning || !JobRunner::processesOf(token).isEmpty();
}

void MpirunLaunch::send(const QByteArray& command) {
  if (m_process.state() == QProcess::Running) m_process.write(command + '\n');
}

// "stop" over the channel, and the end of the input; whatever still runs kStopMs later is
// terminated.
void MpirunLaunch::stop() {
  send("stop");
  if (m_process.state() == QProcess::Running) m_process.closeWriteChannel();
  if (!m_stop.isActive() && !m_kill.isActive()) m_stop.start(JobRunner::kStopMs);
}

void MpirunLaunch::terminate() {
  if (!alive() || m_kill.isActive()) return;
  signalAll(SIGTERM);
  m_kill.start(JobRunner::kGraceMs);
}

// SIGTERM, up to kGraceMs to go, then SIGKILL.
void MpirunLaunch::endNow() {
  m_stop.stop();
  m_kill.stop();
  if (!alive()) return;
  signalAll(SIGTERM);
  m_process.waitForFinished(JobRunner::kGraceMs);
  for (int waited = 0; waited < JobRunner::kGraceMs && !JobRunner::processesOf(token).isEmpty();
       waited += 50)
    usleep(50 * 1000);
  signalAll(SIGKILL);
  m_process.waitForFinished(1000);
}

void MpirunLaunch::signalAll(int sig) {
  if (group > 0) ::kill(-pid_t(group), sig);
  for (qint64 pid : JobRunner::processesOf(token)) ::kill(pid_t(pid), sig);
}

bool MpirunLaunch::readLine(QByteArray* line) {
  if (!m_process.canReadLine()) return false;
  *line = m_process.readLine();
  return true;
}

bool MpirunLaunch::endedOk() const {
  return m_process.exitStatus() == QProcess::NormalExit && m_process.exitCode() == 0;
}

bool MpirunLaunch::endedForRelaunch() const {
  return m_process.exitStatus() == QProcess::NormalExit &&
         m_process.exitCode() == kRelaunchExitCode;
}

QString MpirunLaunch::endText() const {
  return m_process.exitStatus() == QProcess::CrashExit
             ? QObject::tr("mpirun was killed")
             : QObject::tr("mpirun ended with exit code %1 and no message")
                   .arg(m_process.exitCode());
}

}  // namespace paralab
