// The lab report a learner hands in: for one lesson (or every lesson done), each step's
// prediction as locked, the measurement, the comparison and its explanation, the step's chart
// and its run in words, the date and the machine; one PDF and one Markdown file (its charts as
// PNGs beside it). File > Export Lab Report and `paralab --report LESSON --export DIR` write it.
// See tests/app/tst_lab_report.cpp.
#pragma once
#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

#include "export/lab_report_run.h"
#include "lesson.h"
#include "progress.h"

class QWidget;

namespace paralab {

// The machine the report's runs ran on.
struct LabMachine {
  int cores = 0;
  QString cpu;   // /proc/cpuinfo's model name, else the architecture
  QString simd;  // the vector level of ParaLab's CPU kernels (simdLevelName)
  QString gpu;   // the first GPU's name, or "none" and why
  static LabMachine here();
  QString text() const;  // "4 cores, Intel(R) Xeon(R) ..., vector level avx2; GPU: none (...)"
};

struct LabReportRequest {
  QList<lessons::Lesson> lessons;         // in the order reported
  lessons::Progress* progress = nullptr;  // the learner's; null: nothing saved
  QStringList capabilities;               // lessons::engineCapabilities(): what can run here
  bool runSteps = true;                   // run each step that runs, for its chart and measurement
  LabMachine machine = LabMachine::here();
  QDateTime when = QDateTime::currentDateTime();
  // Called before each step is run ("02-amdahl: Fit p", done, total) and while it runs (the
  // same arguments); false cancels the report.
  std::function<bool(const QString& what, int done, int total)> onProgress;
};

struct LabReportFiles {
  QString pdf, markdown;
  QStringList charts;  // the PNGs, in a folder beside them
};

// The report's file stem: "lab-report-02-amdahl", "lab-report-all" for more than one lesson.
QString labReportStem(const QList<lessons::Lesson>& lessons);

// Runs what `request` asks and writes <dir>/<stem>.pdf, <stem>.md and <stem>-charts/*.png;
// returns "" or one line saying what failed ("cancelled" when onProgress said so).
QString writeLabReport(const LabReportRequest& request, const QString& dir,
                       LabReportFiles* files = nullptr);

// The lessons LESSON names: a lesson's id ("02-amdahl", or "amdahl"), its number ("2", "02"),
// or "all" (every lesson completed in `progress`). nullopt with `error` set to one line naming
// what is allowed.
std::optional<QList<lessons::Lesson>> lessonsNamed(const QString& lesson,
                                                   const QList<lessons::Lesson>& all,
                                                   const lessons::Progress& progress,
                                                   QString* error);

// File > Export Lab Report…: asks which lesson (the one open in `currentLesson`, or every one
// completed) and which folder, runs the steps under a progress dialog that can cancel, and says
// what it wrote.
void exportLabReportDialog(QWidget* parent, const QList<lessons::Lesson>& lessons,
                           int currentLesson);

// `paralab --report LESSON --export DIR`: the learner's saved progress (their progress file),
// every step that runs run here; 0 written, 1 a run or write failed, 2 bad LESSON.
int runLabReportCommand(const QString& lesson, const QString& dir);

}  // namespace paralab
