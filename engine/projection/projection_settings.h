// The projection's cluster as settings of the schema (schema.h's Setting): the GPU kind, how
// many, GPUs per node, the link between nodes, the precision and the GPT's vocabulary, each once
// with its range or choices and help. A table of its own (they describe no training run), kept
// in a RunConfig's `extra` under each key. See tests/engine/tst_projection_layouts.cpp and
// `paralab-run --project h100-sxm:16 --gpus-per-node 0` (one line naming the range, exit 2).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projection/projection.h"
#include "schema.h"

namespace paralab::projection {

// In table order: gpu, gpus, gpus-per-node, node-link, precision, vocab.
const std::vector<Setting>& projectionSettings();
const Setting* findProjectionSetting(std::string_view key);

// The request's cluster settings checked against the table, for the run `config` describes:
// "gpus-per-node: 0 is out of range (allowed: 1..1024)", "vocab: the MLP's inputs ...", or
// nothing. The GPU and the count are read from --project's GPU:COUNT (projectRun).
std::optional<std::string> checkCluster(const RunConfig& config, const RunProjection& request);

}  // namespace paralab::projection
