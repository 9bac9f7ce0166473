// A lesson step run for the lab report: its experiment trained (thread ranks), its sweep or its
// benchmark measured, here and to the end, and drawn in the chart the window draws it in, as a
// PNG. See tests/app/tst_lab_report.cpp and `paralab --report 01 --export DIR`.
#pragma once
#include <QJsonObject>
#include <QList>
#include <QString>
#include <functional>
#include <optional>

#include "lesson.h"

namespace paralab {

// What running a step measured and drew for the report.
struct LabStepRun {
  QString run;         // the run in words: describeRun's line and brief (engine/api/describe.h)
  QString chartPng;    // the chart as drawn, "" when there is none
  QString chartTitle;  // its title, as on its tab in the window
  std::optional<double> measured;                    // the step's comparison on this run
  std::optional<lessons::ChoiceMeasurement> choice;  // a choice prediction's answer on it
  QString error;  // why it did not run or measure ("" when it did)
};

// Whether `step` has something that runs (an experiment, a sweep, a benchmark of a kind).
bool stepRuns(const lessons::Step& step);

// Runs `step` here, waiting for it, and writes its chart to `pngPath`. `keepGoing` is called
// while it waits (a window processes its events there); false cancels.
LabStepRun runLabStep(const lessons::Step& step, const QString& pngPath,
                      const std::function<bool()>& keepGoing = {});

}  // namespace paralab
