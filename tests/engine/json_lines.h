// The engine tests' way to run paralab-run (directly or under mpirun) with --json and read
// what it printed: one JSON object per line (each step, then the summary).
// Used by tst_zero, tst_model_parallel and tst_moe.
#pragma once
#include <QProcess>
#include <QStringList>
#include <QtGlobal>
#include <nlohmann/json.hpp>
#include <vector>

namespace paralab::test {

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
