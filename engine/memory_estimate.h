// Before a run starts: about how many bytes its ranks hold together, from the model's size and
// the layout (the model-state formulas of lesson 7, which tst_zero checks against the memory
// tracker; the activations of the global batch; the data), beside the machine's memory.
// RunConfig::validate() refuses a run of thread ranks that cannot fit. See
// tests/engine/tst_config.cpp (memoryBeyondTheMachineIsRefused).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace paralab {

struct RunConfig;

struct MemoryEstimate {
  int64_t modelStates = 0;  // parameters, gradients and optimizer state of every rank
  int64_t activations = 0;  // what forward keeps for backward, for the whole global batch
  int64_t data = 0;         // the training and test images, loaded once
  int64_t total() const { return modelStates + activations + data; }
};

MemoryEstimate estimateMemory(const RunConfig& c);
// The machine's physical memory in bytes (0 when it cannot be read).
int64_t machineMemoryBytes();
// "ranks: this run needs about 825 GiB ..." when `c` runs its ranks in this process and cannot
// fit in `machineBytes`; nothing otherwise.
std::optional<std::string> memoryRefusal(const RunConfig& c, int64_t machineBytes);

}  // namespace paralab
