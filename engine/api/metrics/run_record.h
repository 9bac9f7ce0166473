// A recorded run: the JSON lines `paralab-run --json` prints — one per step (metrics.h), then a
// summary line with the run's settings — which the window's "Export all" writes as run.jsonl and
// its File > Open Run reads back. See tests/engine/tst_metrics.cpp (recordedRun*) and
// `paralab-run --steps 3 --json`.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "metrics/metrics.h"

namespace paralab {

// The run's last line, summed step by step as the steps go by.
struct RunSummary {
  int64_t steps = 0;
  double totalStepMs = 0;              // the steps' wall times added
  double samples = 0;                  // samples trained: each step's samples/s × its wall time
  double modelGflop = 0;               // the model's arithmetic: each step's GFLOP/s × its time
  double finalLoss = 0;                // nats, of the last step
  std::optional<double> testAccuracy;  // the last one measured, a fraction
  std::optional<double> testLoss;      // the last one measured, nats per sample
  // Each rank's overlap meter summed over the steps that carried it (index: rank; empty when
  // none did): the summary line's "overlap".
  std::vector<OverlapMeter> overlap;

  void add(const StepMetrics& m);
  double meanStepMs() const { return steps > 0 ? totalStepMs / double(steps) : 0; }
  double samplesPerS() const { return totalStepMs > 0 ? samples / (totalStepMs * 1e-3) : 0; }
  double modelGflops() const { return totalStepMs > 0 ? modelGflop / (totalStepMs * 1e-3) : 0; }
};

// The summary line: "schema", "summary": true, steps, final_loss, mean_step_ms, samples_per_s,
// model_gflops when the steps had it, test_accuracy and test_loss when measured, "emulated" naming the emulated parts (emulatedBriefs), "emulated_straggler" when a rank
// was slowed (--straggler), "emulated_serial_ms" with a serial section (--serial-ms), and
// "config" (RunConfig::toJson); "overlap", each rank's meter over the run, when steps had it.
nlohmann::json toJson(const RunSummary& s, const RunConfig& config);

// Reads a recorded run from `in`: every step line to `onStep`, in order, and the summary line's
// settings into `config` (`*hasSettings` says whether there was one: a run that was stopped has
// none). Blank lines are skipped. Returns "" or one line naming the line that could not be read
// and why ("line 12: ..."); a file with no step is an error too, and so is a line of a schema
// this build does not read ("line 1: schema: version 7 ..."). With `incompleteLine`, a last line
// whose JSON ends early (the writer stopped mid-line, the file was cut) is not an error: the steps
// before it stand and its number goes there (0: none was).
std::string readRecordedRun(std::istream& in, const std::function<void(const StepMetrics&)>& onStep,
                            RunConfig* config, bool* hasSettings,
                            int64_t* incompleteLine = nullptr);

// One line of a recorded run, read as readRecordedRun reads it, for lines that arrive one at a
// time (the window's MPI jobs): a step goes to `onStep`; the summary's settings go into `config`
// and set `*isSummary`. A blank line is neither. Returns "" or why the line cannot be read
// (without readRecordedRun's "line N: ").
std::string readRecordedLine(const std::string& line,
                             const std::function<void(const StepMetrics&)>& onStep,
                             RunConfig* config, bool* isSummary);

}  // namespace paralab
