// ShownRun: what the window shows of one run, live or recorded in a file: its steps (the
// history, and the spans and holdings of the last ones for run.jsonl), its settings, state and
// live changes. RunController fills it from the run's snapshots, FileActions from a file; the
// charts, the status bar, the exports and the summary read it. See tests/app/tst_window.cpp.
#pragma once
#include <QString>
#include <QStringList>
#include <optional>

#include "charts/metric_history.h"
#include "metrics/step_views.h"
#include "session.h"

namespace paralab {

struct ShownRun {
  MetricHistory history;
  // The spans and holdings of its last steps, for run.jsonl (Export All): bounded, see there.
  StepViewsLog stepViews;
  bool showing = false;  // false after Reset: the stopped run's data is not shown
  int64_t number = 0;    // the window's count of the runs it started: which one this is
  int64_t runId = -1;    // the run control's id of it (-1: adopt the next one)
  int64_t seen = 0;      // steps of that run already copied
  RunState state = RunState::Idle;
  RunConfig config;  // the configuration of the run shown
  QString error;
  QString liveNote;  // what the last live change did ("" none)
  bool liveNoteWarns = false;
  QStringList changes;   // live reconfigurations of the run shown, for the summary
  QString recordedFrom;  // the file of the recorded run shown ("" a live run or none)
  bool settingsUnknown = false;  // that file had no summary: `config` is not the run's
  QString runFileError;          // said once in the status bar
  LoadProgress loading;          // what the run does before its first step
  int64_t parameterCount = 0;
  std::optional<StepMetrics> lastStep;  // with its per-rank metrics, for the summary
  bool modelled = false;  // its steps' bytes are modelled (MPI's own collectives)

  // Forgets what the last run left (its error, notes, changes, steps, file): before a new run
  // is shown, or after Reset.
  void forgetSteps() {
    error.clear();
    liveNote.clear();
    changes.clear();
    lastStep.reset();
    recordedFrom.clear();
    settingsUnknown = false;
    history.clear();
    stepViews.clear();
  }

  // A run shown that is loading, training or paused.
  bool active() const {
    return showing &&
           (state == RunState::Loading || state == RunState::Running || state == RunState::Paused);
  }
};

}  // namespace paralab
