// RunFile: a run's every step as JSON lines in the cache folder (see run_file.h).
// See tests/app/tst_run_data.cpp (csvHoldsEveryStep, runFilesAreRemoved).
#include "charts/run_file.h"

#include <signal.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QStandardPaths>
#include <cerrno>
#include <nlohmann/json.hpp>

namespace paralab {

namespace {

// Files of processes that are gone (a crash, a kill): "run-<pid>-XXXXXX.jsonl" whose pid no
// longer runs. Once per process, before its first file.
void removeLeftovers(QDir dir) {
  static const QRegularExpression name(R"(^run-(\d+)-\w+\.jsonl$)");
  for (const QString& f : dir.entryList({"run-*.jsonl"}, QDir::Files)) {
    const QRegularExpressionMatch m = name.match(f);
    if (!m.hasMatch()) continue;
    const pid_t pid = pid_t(m.captured(1).toLongLong());
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) dir.remove(f);
  }
}

}  // namespace

QString RunFile::defaultDir() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath("runs");
}

std::shared_ptr<RunFile> RunFile::create(QString* error, const QString& where) {
  const QString dir = where.isEmpty() ? defaultDir() : where;
  if (!QDir().mkpath(dir)) {
    if (error) *error = QObject::tr("run file: cannot create folder '%1'").arg(dir);
    return nullptr;
  }
  static bool cleaned = false;
  if (!cleaned) removeLeftovers(QDir(dir)), cleaned = true;
  std::shared_ptr<RunFile> f(new RunFile);
  f->m_file.setFileTemplate(QDir(dir).filePath(QString("run-%1-XXXXXX.jsonl").arg(getpid())));
  if (!f->m_file.open()) {
    if (error)
      *error = QObject::tr("run file: cannot write in '%1': %2").arg(dir, f->m_file.errorString());
    return nullptr;
  }
  return f;
}

RunFile::~RunFile() = default;  // QTemporaryFile removes it

bool RunFile::append(const StepMetrics& m) {
  if (!m_error.isEmpty()) return false;
  const std::string line = toJson(m).dump() + '\n';
  if (m_file.write(line.data(), qint64(line.size())) != qint64(line.size())) {
    m_error = QObject::tr("run file: cannot write '%1' from step %2 on: %3")
                  .arg(path())
                  .arg(m.step)
                  .arg(m_file.errorString());
    return false;
  }
  ++m_steps;
  return true;
}

void RunFile::flush() {
  if (!m_file.flush() && m_error.isEmpty())
    m_error = QObject::tr("run file: cannot write '%1': %2").arg(path(), m_file.errorString());
}

QString RunFile::forEachStep(const std::function<bool(const StepMetrics&)>& f, int64_t last) const {
  m_file.flush();  // what is still buffered (a const reader cannot report a failure here)
  QFile in(path());
  if (!in.open(QIODevice::ReadOnly))
    return QObject::tr("run file: cannot read '%1': %2").arg(path(), in.errorString());
  for (int64_t line = 1; !in.atEnd(); ++line) {
    const QByteArray text = in.readLine();
    try {
      const StepMetrics m = stepMetricsFromJson(nlohmann::json::parse(text.toStdString()));
      if (m.step > last || !f(m)) break;
    } catch (const std::exception& e) {
      return QObject::tr("run file '%1', line %2: %3").arg(path()).arg(line).arg(e.what());
    }
  }
  return {};
}

}  // namespace paralab
