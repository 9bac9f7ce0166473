// RunFile: every step of a run the window shows, on disk as it goes: one JSON line per step,
// exactly the lines `paralab-run --json` prints (toJson(StepMetrics), metrics.md), so the window
// keeps in memory only what it draws while exports read every step back from here. It lives in
// the user's cache folder (runs/) and is removed when the last holder lets go of it (the
// history, an earlier run's overlay); a window that ended without removing its files has them
// removed by the next one. See tests/app/tst_run_data.cpp (csvHoldsEveryStep).
#pragma once
#include <QString>
#include <QTemporaryFile>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

#include "metrics/metrics.h"

namespace paralab {

class RunFile {
 public:
  // A new empty file in `dir` (default: the cache location's runs/ folder), or nothing with
  // `error` set to one line saying why.
  static std::shared_ptr<RunFile> create(QString* error = nullptr, const QString& dir = {});
  static QString defaultDir();

  ~RunFile();  // removes the file
  RunFile(const RunFile&) = delete;
  RunFile& operator=(const RunFile&) = delete;

  QString path() const { return m_file.fileName(); }
  // Appends `m` as one line; false (and error() says why) when it could not be written.
  bool append(const StepMetrics& m);
  // Writes out what append() buffered, so that the file on disk holds every step appended.
  void flush();
  int64_t stepsWritten() const { return m_steps; }
  const QString& error() const { return m_error; }
  // Every step written, in order, up to step `last`: `f` returns false to stop early. Returns
  // "" or one line naming the line that could not be read.
  QString forEachStep(const std::function<bool(const StepMetrics&)>& f,
                      int64_t last = std::numeric_limits<int64_t>::max()) const;

 private:
  RunFile() = default;

  mutable QTemporaryFile m_file;  // open for writing; flushed before every read
  int64_t m_steps = 0;
  QString m_error;
};

}  // namespace paralab
