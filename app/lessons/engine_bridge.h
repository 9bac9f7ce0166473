// EngineBridge: where lessons meet the engine — the capabilities it offers (what makes a
// lesson "coming"), a lesson experiment turned into a RunConfig, and the engine's step and
// sweep results as the JSON objects that comparisons read (the names of `paralab-run --json`).
// See tests/lessons/tst_lessons.cpp.
#pragma once
#include <QJsonObject>
#include <QStringList>
#include <optional>

#include "config.h"
#include "metrics/metrics.h"
#include "train/sweep.h"

namespace paralab::lessons {

// "strategy:<name>" for every row of the engine's strategy table (engine/parallel/registry.cpp),
// "device:cpu", and "device:cuda" when the CUDA runtime reports a usable GPU.
QStringList engineCapabilities();

// paralab-run's defaults with the experiment's keys applied (engine/config.cpp applyJson), then
// validated. nullopt with `error` naming the field, as paralab-run would.
std::optional<RunConfig> configFromExperiment(const QJsonObject& experiment, QString* error = nullptr);

// One step as `paralab-run --json` prints it.
QJsonObject stepJson(const StepMetrics& m);
// A sweep as `paralab-run --sweep ... --json` prints it: scaling, amdahl_p, amdahl_r2,
// gustafson_serial_fraction, gustafson_r2, points[{ranks, step_ms, samples_per_s, speedup,
// efficiency}] and emulated when the link is.
QJsonObject sweepJson(const SweepResult& r, const RunConfig& base);

}  // namespace paralab::lessons
