// The engine tests' way to run paralab-run (directly or under mpirun): its exit code and what
// it printed, or with --json what it printed as one JSON object per line (each step, then the
// summary). Used by tst_cli, tst_checkpoint, tst_async_strategies, tst_zero, tst_model_parallel
// and tst_moe.
#pragma once
#include <QProcess>
#include <QStringList>
#include <QtGlobal>
#include <nlohmann/json.hpp>
#include <vector>

namespace paralab::test {

struct ProgramResult {
  int code;  // -1: it crashed, or ran past `timeoutMs` and was killed
  QString out, err;
};
inline ProgramResult runProgram(const QString& program, const QStringList& args,
                                int timeoutMs = 60000) {
  QProcess p;
  p.start(program, args);
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timeout"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

// Runs `program args` (4 minutes at most) and parses its standard output's lines. When the
// exit code is not 0 or the count is not `expected`, prints the program's standard error so
// the failing comparison that follows has its reason beside it.
inline std::vector<nlohmann::json> runJsonLines(const QString& program, const QStringList& args,
                                                size_t expected) {
  QProcess p;
  p.start(program, args);
  if (!p.waitForFinished(240000)) p.kill();
  std::vector<nlohmann::json> out;
  const QByteArray err = p.readAllStandardError();
  for (const QByteArray& l : p.readAllStandardOutput().split('\n'))
    if (!l.trimmed().isEmpty()) out.push_back(nlohmann::json::parse(l.toStdString()));
  if (p.exitCode() != 0 || out.size() != expected) qWarning("%s", err.constData());
  return out;
}

}  // namespace paralab::test
