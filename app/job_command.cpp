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

#include "describe.h"
#include "schema.h"

namespace paralab {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool isProgram(const QString& path) {
  const QFileInfo f(path);
  return f.isFile() && f.isExecutable();
}

// The run's settings as paralab-run flags (describe.h); the ranks and the backend are the
// launcher's.
QStringList settingFlags(const RunConfig& config) {
  QStringList flags;
  for (const std::string& f : runFlags(config, {"backend", "ranks"})) flags << qs(f);
  return flags;
}

}  // namespace

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

JobCommand jobCommand(const RunConfig& settings, const QString& hosts, const QString& resumeFrom) {
  // paralab-run runs bounded runs only: "until stopped" is the most steps it takes.
  RunConfig config = settings;
  if (config.steps == 0) config.steps = int(findSetting("steps")->max);
  JobCommand c;
  c.program = mpirunProgram();
  const QString run = paralabRunProgram();
  if (auto err = config.validate()) c.error = qs(*err);
  else if (const QString h = hostsProblem(hosts); !h.isEmpty())
    c.error = h;
  else if (c.program.isEmpty())
    c.error = QObject::tr("backend: mpirun was not found (install OpenMPI's mpirun, or choose "
                          "Threads)");
  else if (run.isEmpty())
    c.error = QObject::tr("backend: paralab-run was not found beside paralab or on PATH");
  // mpirun refuses root unless asked: containers and lab machines often run as root.
  if (geteuid() == 0) c.arguments << "--allow-run-as-root";
  // More ranks than cores is how a laptop teaches 8 ranks: mpirun refuses it by default.
  c.arguments << "--oversubscribe"
              << "-np" << QString::number(config.ranks);
  const QString h = hosts.trimmed();
  if (!h.isEmpty()) c.arguments << (QFileInfo(h).isFile() ? "--hostfile" : "--host") << h;
  c.arguments << (run.isEmpty() ? QString("paralab-run") : run) << "--backend"
              << qs(nameOf(config.backend)) << "--json"
              << "--control"
              << "stdin" << settingFlags(config);
  if (!resumeFrom.isEmpty()) c.arguments << "--resume" << resumeFrom;
  return c;
}

QString JobCommand::text() const {
  static const QRegularExpression plain(R"(^[A-Za-z0-9_./=:,@%+-]+$)");
  QStringList words;
  for (const QString& w : QStringList{program.isEmpty() ? QString("mpirun") : program} + arguments)
    words << (plain.match(w).hasMatch() ? w : "'" + QString(w).replace("'", R"('\'')") + "'");
  return words.join(' ');
}

}  // namespace paralab
