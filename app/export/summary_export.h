// The run summary written beside the exported charts (summary.md and summary.html): what was
// switched on, the measured numbers (loss, test accuracy, step time, samples/s, per-rank
// memory and bytes), the reference formulas next to them, and "emulated" wherever it applies.
// See tests/app/tst_window.cpp (exportAllWritesEverything) and `paralab --steps N --export DIR`.
#pragma once
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

#include "config.h"
#include "metrics/metrics.h"
#include "train/sweep.h"

namespace paralab {

struct RunReport {
  RunConfig config;     // as the run ended (after any live reconfiguration)
  QStringList changes;  // live reconfigurations, "step 40: ranks 1 → 2"
  QString state;        // "finished", "paused", ...
  int64_t steps = 0;    // steps measured
  int64_t parameterCount = 0;
  std::optional<StepMetrics> last;  // the last step measured, with its per-rank numbers
  double lossMean = 0;              // nats, mean of the last `window` steps
  int window = 0;
  std::optional<double> accuracyStep, accuracyPercent;  // the last evaluation
  std::optional<double> testLoss;                       // its held-out loss, nats per sample
  double meanStepMs = 0;                                // over the last `window` steps
  double samplesPerS = 0;                               // over the last `window` steps
  std::optional<SweepResult> sweep;
  std::optional<RunConfig> sweepConfig;  // the settings the sweep measured (its ranks vary)
  std::vector<OverlapMeter> overlap;  // each rank's overlap meter over the run (RunSummary)
  QStringList files;  // the other files of the export, by name
  QStringList notExported;  // the charts left out, by title: nothing measured to draw
};

// The summary as Markdown (GitHub dialect: tables).
QString summaryMarkdown(const RunReport& report);
// Writes summary.md and summary.html (the same text rendered by QTextDocument) into `dir`;
// returns "" or one line saying what failed. `written` receives the paths.
QString writeSummary(const QString& dir, const RunReport& report, QStringList* written = nullptr);

}  // namespace paralab
