// A run in words, made once from the settings table (schema.h) for every place that names a
// run: the window's chart subtitles and CSV comments, the exported summary, paralab-run's header
// line, the mpirun job's command and the lessons' experiment line.
// See tests/engine/tst_describe.cpp and the first line `paralab-run --steps 1` prints.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "emulated_parts.h"

namespace paralab {

// One setting of a run as its table row words it.
struct SettingWords {
  std::string key;      // the flag and JSON key: "zero"
  std::string label;    // the window's label: "ZeRO stage"
  std::string value;    // as typed on the command line: "2"
  std::string words;    // the choice's label, or the value and its unit: "2: …", "0.25 MiB"
  std::string summary;  // what the choice means ("" where the setting has no choices)
};

struct RunDescription {
  // Every setting that applies to the run (settingsInEffect's walk) and is not at its default,
  // plus the ones that always say what a run is (model, its size, data, batch, device,
  // optimizer, learning rate); in table order.
  std::vector<SettingWords> settings;

  // The same run in the short parts of a one-line description, each already in words:
  std::string model;            // "MLP H=128 L=2", "GPT H=64 L=2 4 heads T=64", "MoE H=64 L=2 E=4"
  std::string data;             // "fashion-mnist · B=128" (B: the global batch)
  std::string ranks;            // "serial" or "4 ranks"
  std::string strategy;         // "sync"; "" for a serial run and where the model sets the strategy
  std::string strategyRow;      // the strategy table's row that runs it: "zero-2", "moe"
  std::string strategySummary;  // that row's one line
  // How the work is split: "ZeRO-2", "dp 2", "tp 2 + sp", "pp 2", "gpipe, 4 micro-batches",
  // "cp 2 contiguous", "ep 2"; empty for a serial run.
  std::vector<std::string> layout;
  std::vector<std::string> modelParts;  // "MoE 4 experts", "top-2", "recompute full"
  std::string training;                 // "momentum lr 0.05", "adam lr 0.002, accumulate 4 × 32"
  std::string device;                   // "cpu" or "cuda", as --device takes it
  std::string deviceWords;              // "CPU", "GPU (CUDA)": the choice's label
  std::string gemm;                     // "GEMM vendor (OpenBLAS)", "GEMM vendor (cuBLAS)"
  std::vector<EmulatedPart> emulated;   // emulated_parts.h

  const SettingWords* find(std::string_view key) const;
  // The execution in brief: "serial" or "sync · 4 ranks", then the layout, the model's parts,
  // the training, the device where it is not the CPU and each emulated part; joined by " · ".
  // withRanks false leaves the rank count out (a sweep runs several).
  std::string brief(bool withRanks = true) const;
  // model · data · brief(): one line for a run.
  std::string line() const;
};

RunDescription describeRun(const RunConfig& config);

// The run's settings as paralab-run flags ("--zero", "2", "--no-sp"): each that differs from its
// default, and the model and data set always (a data set left out would follow the model).
// Keys in `leaveOut` are not written (a launcher says the ranks and the backend itself).
std::vector<std::string> runFlags(const RunConfig& config,
                                  const std::vector<std::string>& leaveOut = {});

// One setting of `config` in words, as `describeRun` words it (the key alone in `words` for a
// key the table does not have).
SettingWords settingWords(const RunConfig& config, std::string_view key);

}  // namespace paralab
