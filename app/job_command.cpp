// The launcher command of an MPI or NCCL run (see job_command.h). The run's settings become
// paralab-run flags through the settings table, so the command names exactly what differs from
// the defaults, as a learner would type it. See tests/app/tst_window_jobs.cpp.
#include "job_command.h"

#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include "batch_script.h"
#include "describe.h"
#include "schema.h"

namespace paralab {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool isProgram(const QString& path) {
  const QFileInfo f(path);
  return f.isFile() && f.isExecutable();
}

}  // namespace

QStringList paralabRunWords(const RunConfig& config, const QString& control,
                            const QString& resumeFrom, const QString& checkpoint) {
  const QString run = paralabRunProgram();
  // Inside a Slurm job the ranks are MPI processes.
  const Backend backend = config.backend == Backend::Slurm ? Backend::Mpi : config.backend;
  QStringList words{run.isEmpty() ? QString("paralab-run") : run,
                    "--backend",
                    qs(nameOf(backend)),
                    "--json",
                    "--control",
                    control};
  // The run's settings as paralab-run flags (describe.h); the ranks, the backend and the
  // job's settings are the launcher's.
  for (const std::string& f :
       runFlags(config, {"backend", "ranks", "partition", "nodes", "tasks-per-node", "time-limit"}))
    words << qs(f);
  if (!resumeFrom.isEmpty()) words << "--resume" << resumeFrom;
  // Under mpirun an elastic job relaunches from the checkpoints it saves (cli/elastic_job.h).
  if (config.elastic && config.checkpointEvery > 0)
    words << "--save" << (checkpoint.isEmpty() ? QString(kElasticCheckpoint) : checkpoint);
  return words;
}

QStringList rootFlag() {
  return geteuid() == 0 ? QStringList{"--allow-run-as-root"} : QStringList();
}

QString mpirunProgram() {
  if (QString p = QStandardPaths::findExecutable("mpirun"); !p.isEmpty()) return p;
#ifdef PARALAB_MPIEXEC
  if (isProgram(PARALAB_MPIEXEC)) return PARALAB_MPIEXEC;
#endif
  return {};
}

QString paralabRunProgram() {
  const QString here = QCoreApplication::applicationDirPath();
  for (const QString& p : {here + "/paralab-run", here + "/../engine/paralab-run"})
    if (isProgram(p)) return QDir::cleanPath(p);
#ifdef PARALAB_RUN_BUILT
  if (isProgram(PARALAB_RUN_BUILT)) return PARALAB_RUN_BUILT;
#endif
  return QStandardPaths::findExecutable("paralab-run");
}

QString hostsProblem(const QString& hosts) {
  const QString h = hosts.trimmed();
  if (h.isEmpty() || QFileInfo(h).isFile()) return {};
  static const QRegularExpression list(R"(^[A-Za-z0-9._-]+(:\d+)?(,[A-Za-z0-9._-]+(:\d+)?)*$)");
  if (!h.contains('/') && list.match(h).hasMatch()) return {};
  return QObject::tr("hosts: '%1' is neither a hostfile nor a host list (allowed: empty for this "
                     "machine, a hostfile's path, or host[:slots],host[:slots])")
      .arg(h);
}

JobCommand jobCommand(const RunConfig& settings, const QString& hosts, const QString& resumeFrom,
                      const QString& checkpoint) {
  // paralab-run runs bounded runs only: "until stopped" is the most steps it takes.
  RunConfig config = settings;
  if (config.steps == 0) config.steps = int(findSetting("steps")->max);
  if (config.backend == Backend::Slurm) return batchJobCommand(config, resumeFrom);
  JobCommand c;
  c.program = mpirunProgram();
  if (auto err = config.validate()) c.error = qs(*err);
  else if (const QString h = hostsProblem(hosts); !h.isEmpty())
    c.error = h;
  else if (c.program.isEmpty())
    c.error = QObject::tr("backend: mpirun was not found (install OpenMPI's mpirun, or choose "
                          "Threads)");
  else if (paralabRunProgram().isEmpty())
    c.error = QObject::tr("backend: paralab-run was not found beside paralab or on PATH");
  // More ranks than cores is how a laptop teaches 8 ranks: mpirun refuses it by default.
  c.arguments << rootFlag() << "--oversubscribe"
              << "-np" << QString::number(config.ranks);
  const QString h = hosts.trimmed();
  if (!h.isEmpty()) c.arguments << (QFileInfo(h).isFile() ? "--hostfile" : "--host") << h;
  c.arguments << paralabRunWords(config, "stdin", resumeFrom, checkpoint);
  return c;
}

QString shellLine(const QStringList& words) {
  static const QRegularExpression plain(R"(^[A-Za-z0-9_./=:,@%+-]+$)");
  QStringList quoted;
  for (const QString& w : words)
    quoted << (plain.match(w).hasMatch() ? w : "'" + QString(w).replace("'", R"('\'')") + "'");
  return quoted.join(' ');
}

QString JobCommand::text() const {
  const QString shown = !program.isEmpty() ? program : script.isEmpty() ? "mpirun" : "sbatch";
  return shellLine(QStringList{shown} + arguments);
}

}  // namespace paralab
