// Before a run starts: about how many bytes its ranks hold together, from the model's size and
// the layout (the model-state formulas of lesson 7, which tst_zero checks against the memory
// tracker; the activations of the global batch; the data), beside the machine's memory.
// RunConfig::validate() refuses a run of thread ranks that cannot fit. See
// tests/engine/tst_config.cpp (memoryBeyondTheMachineIsRefused).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "platform.h"  // machineMemoryBytes: what the estimate is compared with
#include "run_choices.h"  // Dtype

namespace paralab {

struct RunConfig;

// The bytes one value of each model state takes. fp32 training: 4-byte parameters and
// gradients, no master copy. The engine's mixed precision (--precision bf16|fp16,
// train/precision.h) follows Megatron-LM: 16-bit parameters (2), fp32 gradients (4) and an fp32
// master copy (4), sharded like the optimizer state. The projection's bf16 follows ZeRO's paper
// instead: 2-byte gradients, the master counted in K (projection/memory_model.h).
struct StateWidths {
  int params = 4, grads = 4, master = 0;
};
StateWidths stateWidths(Dtype precision);  // the engine's: {4, 4, 0} or {2, 4, 4}

// The model states one data-parallel rank holds, in bytes: P parameters over N ranks at ZeRO
// `stage`, K bytes of optimizer state per parameter, each state at its width w. Stage 1 shards
// the optimizer state (and the master copy), 2 also the gradients, 3 also the parameters
// (Rajbhandari et al. 2020, Fig. 1): fp32 4P + 4P + KP, 4P + 4P + KP/N, 4P + (4+K)P/N,
// (8+K)P/N; mixed precision with Adam (K = 8) 2P + 4P + (4+8)P = 18P, 6P + 12P/N (Megatron's
// distributed optimizer), 2P + 16P/N, 18P/N. The memory chart draws it beside the measured
// bars (app/charts/memory_reference.h).
struct ModelStateBytes {
  double params = 0, grads = 0, optimizer = 0, master = 0;
  double total() const { return params + grads + optimizer + master; }
};
ModelStateBytes modelStatesPerRank(int64_t P, int stage, int K, int N, StateWidths w = {});

struct MemoryEstimate {
  int64_t modelStates = 0;  // parameters, gradients and optimizer state of every rank
  int64_t activations = 0;  // what forward keeps for backward, for the whole global batch
  int64_t data = 0;         // the training and test images, loaded once
  int64_t total() const { return modelStates + activations + data; }
};

MemoryEstimate estimateMemory(const RunConfig& c);
// The GPUs a run on --device cuda would use: how many, and the smallest one's memory in bytes
// (0: unknown, nothing is checked). kernels::cuda_query_devices() says it for this machine.
struct GpuMemory {
  int count = 0;
  int64_t bytesEach = 0;
};
// "ranks: this run needs about 825 GiB ..." when `c` runs its ranks in this process and cannot
// fit in `machineBytes`, or (on cuda) its busiest GPU cannot hold the ranks placed on it (rank r
// on GPU r mod count); nothing otherwise.
std::optional<std::string> memoryRefusal(const RunConfig& c, int64_t machineBytes,
                                         GpuMemory gpus = {});

}  // namespace paralab
