// The keys of a lesson's ```bench block as rows of the settings schema (owner "bench"): each
// key's type, range or choices, default, help and the kind that takes it. The lesson loader's
// checks and the engine's options (BenchRequest) both come from this one table.
// See tests/engine/tst_jobs.cpp (benchSettingsRefuseNamingTheKey) and tests/lessons.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "jobs/bench_job.h"
#include "schema.h"

namespace paralab::jobs {

// The kinds a block may name, in the order the loader lists them.
const std::vector<std::string>& benchKinds();
// Every key of every kind: one row per kind and key, as a key's range differs by kind (the
// latency's hidden 16..1024, the layouts' 64..65536). A row's `group` is its kind, and
// `appliesWhen` says why it does not apply to another kind or model. A block's values are kept
// in RunConfig::extra under their keys (the first row, "kind", too), never in a run's settings.
const std::vector<Setting>& benchSettings();
// The row of `key` for a block of `kind`; nullptr where the kind does not take the key.
const Setting* findBenchSetting(const std::string& kind, const std::string& key);

// A block's own keys and values (without "kind"): a whole number as int64_t, a word as text.
using BenchValues = std::map<std::string, SettingValue>;
// Why a block cannot run, one line per problem, each naming the key: "'kind' is missing
// (allowed: ...)", "unknown key 'x' (allowed: kind, size, ...)", "'size' of gemm-ladder is a
// whole number 16..2048", "'model' of latency is one of mlp, gpt", "'seq' of latency needs
// \"model\": \"gpt\"". Empty when it can.
std::vector<std::string> benchProblems(const std::string& kind, const BenchValues& given);
// Every key the kind takes, the block's value or else the row's default; `settings` for what
// a block leaves to the run settings (the roofline's H, L and CPU GEMM).
BenchRequest benchRequest(const std::string& kind, const BenchValues& given,
                          const RunConfig& settings = {});

}  // namespace paralab::jobs
