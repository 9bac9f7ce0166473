// The settings table's rows, built in three files by job: run_settings.cpp (what rows share,
// and the table in order), run_settings_model.cpp (where the math runs, the model, its data and
// training) and run_settings_parallel.cpp (how ranks combine, split the model and talk).
// Private to the engine. See tests/engine/tst_schema.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "schema.h"

namespace paralab::settings_rows {

using Why = Setting::Why;

// The window's groups (settingGroups() gives their order).
inline constexpr const char* kExecution = "Execution";
inline constexpr const char* kParallelism = "Parallelism";
inline constexpr const char* kModelParallelism = "Model parallelism";
inline constexpr const char* kLinks = "Interconnect and kernels";
inline constexpr const char* kModel = "Model";
inline constexpr const char* kData = "Data";
inline constexpr const char* kTraining = "Training";

// A setting only some strategies read applies under the rows that list it (`uses`).
Why usedByStrategy(const RunConfig& c, const std::string& key);
std::function<Why(const RunConfig&)> usedBy(std::string key);
Why gptOnly(const RunConfig& c);
Why moeOnly(const RunConfig& c);
// What the mixture of experts' row (parallel/registry.cpp) refuses when `change` sets one
// setting away from its default in an MoE run (nullopt: not an MoE run, or allowed).
Why refusedUnderMoe(const RunConfig& c, void (*change)(RunConfig&));

// The rows in table order: where the math runs, the model, its data and training; then the
// data-parallel family, model parallelism, links and faults.
void addModelRows(std::vector<Setting>& t);
void addParallelRows(std::vector<Setting>& t);
// A Slurm job's rows (run_settings_job.cpp): partition, nodes, tasks per node, time limit.
void addJobRows(std::vector<Setting>& t);
// Whether `t` is a time in one of Slurm's forms (sbatch --time).
bool isSlurmTime(const std::string& t);

}  // namespace paralab::settings_rows
