// Checkpoint: a run's TrainingState (serial layout) and its config in one file, for
// `paralab-run --save FILE` and `--resume FILE`. Because the state is in the serial layout, a
// run may resume under another parallel layout (ranks, dp/tp/pp, ZeRO, ep, strategy); what
// decides the model, its parameters and the data order must match (checkpointMismatch).
//
// The file (little-endian):
//   "PLCKPT\r\n"  8 bytes of magic
//   uint32        format version: 1, or 2 where the run keeps mixed precision's state
//   uint64        N, then N bytes of JSON: {"config": RunConfig::toJson(), "step",
//                 "optimizerSteps", "parameters", "globalBatch", "arrays": {"params", "optM",
//                 "optV"} (float counts); version 2 adds "master" to "arrays" and, for fp16's
//                 loss scale, "lossScale": {"scale", "clean", "skipped"}}
//   float32[]     params, optM, optV (version 2: then master), in that order
//   uint32        zlib crc32 of every byte before it
// A run without that state (fp32) writes version 1, which earlier builds read too; both are
// read. Written atomically: FILE.tmp, fsync, rename. See tests/engine/tst_checkpoint.cpp and
// tst_precision_checkpoint.cpp (a 16-bit run resumed bit for bit).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "train/training_state.h"

namespace paralab {

// The newest format written; every version from 1 to it is read.
inline constexpr uint32_t kCheckpointVersion = 2;

struct Checkpoint {
  nlohmann::json config;      // the saving run's RunConfig::toJson()
  int64_t parameterCount = 0;
  int globalBatch = 0;
  TrainingState state;
};

// Why `path` cannot take a checkpoint ("save: ..."), or nothing: checked before a run so that a
// bad --save target fails at once rather than after the training.
std::optional<std::string> checkpointPathProblem(const std::string& path);
// Writes `state` (complete, as rank 0's Trainer::saveState() returns it) and `config`.
// Throws ConfigError("save: ...") when the file cannot be written.
void writeCheckpoint(const std::string& path, const TrainingState& state, const RunConfig& config,
                     int64_t parameterCount);
// Reads and verifies a checkpoint; throws ConfigError with one line starting "resume: " that
// names what is wrong (not a checkpoint, its version, its checksum, its sizes).
Checkpoint readCheckpoint(const std::string& path);
// Why `run` (with `parameterCount` parameters) cannot go on from `saved` ("resume: ..."), or
// nothing. The model, its shape and data set, the optimizer, the seed and the global batch must
// match: they decide the parameter layout and which samples form each step's batch.
std::optional<std::string> checkpointMismatch(const Checkpoint& saved, const RunConfig& run,
                                              int64_t parameterCount);

}  // namespace paralab
