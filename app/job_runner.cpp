// JobRunner: a run of processes under mpirun or Slurm, driven over its control channel and read
// from its output (see job_runner.h). See tests/app/tst_window_jobs.cpp and tst_window_slurm.cpp.
#include "job_runner.h"

#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "job_launch.h"
#include "metrics/run_record.h"
#include "slurm_job.h"
#include "train/elastic.h"

namespace paralab {

QList<qint64> JobRunner::processesOf(const QString& token) {
  QList<qint64> pids;
  const QByteArray entry = "PARALAB_JOB=" + token.toLatin1();
  for (const QString& name : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool number = false;
    const qint64 pid = name.toLongLong(&number);
    if (!number || pid == getpid()) continue;
    QFile environ(QString("/proc/%1/environ").arg(name));
    if (!environ.open(QIODevice::ReadOnly)) continue;  // gone, or another user's
    if (environ.readAll().split('\0').contains(entry)) pids << pid;
  }
  return pids;
}

// [SECTION] The job: launches, commands, and the steps read back.

JobRunner::JobRunner(std::function<QString()> hosts, QObject* parent)
    : QObject(parent), m_hostsOf(std::move(hosts)) {}

JobRunner::~JobRunner() {
  for (QObject* child : children())
    if (auto* l = dynamic_cast<JobLaunch*>(child)) {
      l->endNow();
      l->onOutput = nullptr;  // the launches outlive this body: they must not call back
      l->onEnded = nullptr;
    }
}

qint64 JobRunner::processGroup() const { return m_launch ? m_launch->group : 0; }
QString JobRunner::token() const { return m_launch ? m_launch->token : QString(); }
QString JobRunner::jobState() const { return m_launch ? m_launch->stateText() : QString(); }
QString JobRunner::jobFolder() const { return m_launch ? m_launch->folder() : QString(); }

// An earlier launch stops on its own time (kStopMs, then kGraceMs) and goes.
static void retire(JobLaunch* l) {
  l->stop();
  QTimer::singleShot(JobRunner::kStopMs + JobRunner::kGraceMs + 500, l, &QObject::deleteLater);
}

std::string JobRunner::start(const RunConfig& config, bool paused) {
  if (m_launch) retire(m_launch);
  m_launch = nullptr;
  ++m_runId;
  m_config = config;
  m_hosts = m_hostsOf ? m_hostsOf() : QString();
  m_next.reset();
  m_steps.clear();
  m_lastStep.reset();
  m_views.clear();
  m_released = m_configStep = 0;
  m_paused = paused;
  m_stopping = false;
  m_error.clear();
  m_flight.reset();
  m_notice.clear();
  m_state = RunState::Loading;
  if (const QString err = launch({}); !err.isEmpty()) {
    m_state = RunState::Idle;
    return err.toStdString();
  }
  if (paused) m_launch->send("pause");
  return "";
}

QString JobRunner::elasticCheckpoint() {
  if (!m_config.elastic || m_config.backend != Backend::Mpi || m_config.checkpointEvery <= 0)
    return {};
  if (!m_checkpoints) m_checkpoints = std::make_unique<QTemporaryDir>();
  return m_checkpoints->filePath(QString("elastic-%1.ckpt").arg(m_runId));
}

QString JobRunner::launch(const QString& resumeFrom) {
  // An elastic job saves where this runner relaunches it from.
  m_command = jobCommand(m_config, m_hosts, resumeFrom, elasticCheckpoint());
  if (!m_command.error.isEmpty()) return m_command.error;
  JobLaunch* l = m_config.backend == Backend::Slurm ? static_cast<JobLaunch*>(new SlurmLaunch(this))
                                                    : new MpirunLaunch(this);
  l->onOutput = [this, l] {
    if (l == m_launch) readOutput();
  };
  l->onEnded = [this, l] {
    if (l == m_launch) onFinished();
  };
  if (const QString err = l->start(m_command); !err.isEmpty()) {
    delete l;
    return err;
  }
  m_launch = l;
  return {};
}

void JobRunner::send(const QByteArray& command) {
  if (m_launch) m_launch->send(command);
}

void JobRunner::pause() {
  m_paused = true;
  send("pause");
  if (m_state == RunState::Running) m_state = RunState::Paused;
}

void JobRunner::resume() {
  m_paused = false;
  send("resume");
  if (m_state == RunState::Paused) m_state = RunState::Running;
}

void JobRunner::stepOnce() {
  m_paused = true;
  send("step");
  if (m_state == RunState::Running) m_state = RunState::Paused;
}

void JobRunner::stop() {
  m_stopping = true;
  m_next.reset();
  if (m_launch) m_launch->stop();
}

bool JobRunner::isRunning() const { return m_launch && m_launch->alive(); }

std::string JobRunner::reconfigure(const RunConfig& config) {
  if (auto err = config.validate()) return *err;
  if (m_state == RunState::Finished || m_state == RunState::Failed || !m_launch)
    return "reconfigure: the run has ended (Start a new one)";
  if (std::string err = needsNewRun(m_next ? *m_next : m_config, config); !err.empty())
    return err;
  if (const JobCommand c = jobCommand(config, m_hosts); !c.error.isEmpty())
    return c.error.toStdString();
  const bool underWay = m_next.has_value();
  m_next = config;
  if (underWay) return "";  // the relaunch under way takes the newest settings
  // Paused first, so the checkpoint is of the last step printed and the stop takes no other.
  // A batch job's checkpoint goes in its folder, which the nodes share.
  if (!m_checkpoints) m_checkpoints = std::make_unique<QTemporaryDir>();
  const QString folder = m_launch->folder();
  m_checkpoint = (folder.isEmpty() ? m_checkpoints->path() : folder) + "/live-change.ckpt";
  QFile::remove(m_checkpoint);
  send("pause");
  send("save " + m_checkpoint.toUtf8());
  send("stop");
  return "";
}

void JobRunner::readOutput() {
  QByteArray line;
  while (m_launch->readLine(&line)) {
    if (m_transcript) m_transcript->write(line);
    RunConfig summary;
    bool isSummary = false, isStep = false;
    const std::string text = line.toStdString();
    const std::string err = readRecordedLine(
        text,
        [this, &isStep](const StepMetrics& m) {
          m_steps.push_back(m);
          m_lastStep = m;
          isStep = true;
        },
        &summary, &isSummary);
    if (!err.empty() && m_notice.isEmpty())
      m_notice = tr("The job printed a line that is not a step: %1").arg(QString::fromStdString(err));
    if (!isStep) continue;
    // The same line again, for what the figures' reader leaves aside: spans and holdings.
    try {
      m_views.add(nlohmann::json::parse(text));
    } catch (const std::exception& e) {
      if (m_notice.isEmpty())
        m_notice = tr("The job's timeline or holdings could not be read: %1")
                       .arg(QString::fromUtf8(e.what()));
    }
  }
  if (m_transcript) m_transcript->flush();
  if (m_state == RunState::Loading && !m_steps.empty())
    m_state = m_paused ? RunState::Paused : RunState::Running;
}

void JobRunner::onFinished() {
  readOutput();
  const bool ok = m_launch->endedOk();
  m_launch->terminate();  // a process of the job that outlived its launcher
  if (m_stopping) {
    m_state = RunState::Finished;
    return;
  }
  if (m_next) {  // a live change: the job saved and stopped; it goes on from the checkpoint
    if (!ok || !QFile::exists(m_checkpoint))
      return fail(tr("the live change could not be applied: %1").arg(stderrLine()));
    const int64_t stepsDone = m_released + int64_t(m_steps.size());
    const RunConfig next = *m_next;
    m_next.reset();
    const RunConfig before = m_config;
    m_config = next;
    JobLaunch* old = m_launch;
    if (const QString err = launch(m_checkpoint); !err.isEmpty()) {
      m_config = before;
      return fail(err);
    }
    retire(old);
    m_configStep = stepsDone;
    if (m_paused) m_launch->send("pause");
    return;
  }
  if (ok)
    m_state = RunState::Finished;
  else if (!relaunchSurvivors())
    fail(stderrLine());
}

// torchft's replicas go on without a restart; processes under mpirun cannot leave a job that
// goes on, so the job ends and starts again on the survivors, from its last checkpoint: the
// steps since it are trained again and their lines follow the ones already read.
bool JobRunner::relaunchSurvivors() {
  if (!m_launch->endedForRelaunch() || !m_config.elastic || m_config.ranks < 2) return false;
  const QString file = elasticCheckpoint();
  m_notice = tr("%1 — relaunched on %2 processes").arg(stderrLine()).arg(m_config.ranks - 1);
  const RunConfig before = m_config;
  m_config = relaunchConfig(m_config);
  JobLaunch* old = m_launch;
  if (const QString err = launch(QFile::exists(file) ? file : QString()); !err.isEmpty()) {
    m_config = before;
    fail(err);
    return true;
  }
  retire(old);
  m_configStep = m_released + int64_t(m_steps.size());
  if (m_paused) m_launch->send("pause");
  return true;
}

void JobRunner::fail(const QString& error) {
  m_state = RunState::Failed;
  m_error = error;
  if (m_launch) {
    // A hung process prints its flight recorder beside its output (FlightRecorder::dumpLine).
    m_flight = flightFromDumpLines(m_launch->err.toStdString());
    m_launch->terminate();
  }
}

// What a dying rank said ("paralab: world rank 1 aborted the job: ..."), before mpirun's own
// banner; else the first line of the launcher's (mpirun refusing its arguments, a host); after
// the scheduler's word on the job, for a batch job.
QString JobRunner::stderrLine() const {
  if (!m_launch) return tr("the job did not start");
  const QList<QByteArray> lines = m_launch->err.split('\n');
  QString said;
  for (const QByteArray& l : lines)
    if (said.isEmpty() && l.startsWith("paralab")) said = QString::fromUtf8(l.trimmed());
  for (const QByteArray& l : lines)
    if (said.isEmpty() && !l.trimmed().isEmpty()) said = QString::fromUtf8(l.trimmed());
  if (said.isEmpty()) return m_launch->endText();
  const QString state = m_launch->stateText();
  return state.isEmpty() ? said : state + ": " + said;
}

Snapshot JobRunner::snapshot(int64_t fromStep, int) const {
  Snapshot s;
  s.state = m_state;
  s.error = m_error.toStdString();
  s.flight = m_flight;
  s.notice = m_notice.toStdString();
  s.config = m_config;
  s.runId = m_runId;
  s.stepsDone = m_released + int64_t(m_steps.size());
  s.configStep = m_configStep;
  if (fromStep < s.stepsDone)
    s.steps.assign(m_steps.begin() + (std::max(fromStep, m_released) - m_released), m_steps.end());
  s.spans = m_views.spans();
  s.spansLeftOut = m_views.spansLeftOut();
  s.holdings = m_views.holdings(m_lastStep ? &*m_lastStep : nullptr);
  // A batch job waits in the queue: the scheduler's word, while no step has come.
  if (m_state == RunState::Loading && m_launch)
    s.loading.stage = m_launch->stateText().toStdString();
  return s;
}

void JobRunner::release(int64_t step) {
  const int64_t drop = std::clamp<int64_t>(step - m_released, 0, int64_t(m_steps.size()));
  m_steps.erase(m_steps.begin(), m_steps.begin() + drop);
  m_released += drop;
}

void JobRunner::setTranscript(const QString& path) {
  delete m_transcript;
  m_transcript = nullptr;
  if (path.isEmpty()) return;
  m_transcript = new QFile(path, this);
  if (!m_transcript->open(QIODevice::WriteOnly | QIODevice::Append)) {
    delete m_transcript;
    m_transcript = nullptr;
  }
}

}  // namespace paralab
