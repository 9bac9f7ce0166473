// What one rank holds: which slice of which weight (and of its gradient and optimizer state),
// which rows of the batch and of the activations, and whom its collectives reach — read from
// the strategies' real sharding metadata, for the window's "what every GPU holds" map.
// See tests/engine/tst_holdings.cpp and Trainer::holdings().
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "comm/comm_traffic.h"
#include "parallel/grid_shape.h"
#include "run_choices.h"

namespace paralab {

class ParamSet;
struct GptShape;
enum class Recompute;  // model/gpt.h

// Master: mixed precision's fp32 master copy of the parameters (train/precision.h), which the
// optimizer updates and ZeRO shards as it shards the optimizer state.
enum class HoldingKind : int { Params, Grads, Optimizer, Activations, Batch, Master };
inline constexpr int kHoldingKinds = 6;
// "params", "grads", "optimizer", "activations", "batch", "master"
const char* holdingKindName(HoldingKind k);

// One thing a rank holds: rows (dim 0) or columns (dim 1) [begin, end) of `total` of a tensor,
// or the whole of it (dim -1: begin 0, end = total = its first dimension).
struct HeldSlice {
  std::string tensor;  // "block0.fc1.weight", "block0 (flat)", "global batch", ...
  HoldingKind kind = HoldingKind::Params;
  int dim = -1;
  int64_t begin = 0, end = 0, total = 0;
  int64_t rows = 0, cols = 1;  // the shape of what is held (a vector: cols = 1)
  int64_t bytes = 0;           // what it occupies on this rank
  // Activations only: a buffer the backward recomputes tensors into (--recompute), rather than
  // what the forward kept for it.
  bool recomputed = false;
  // Activations only: buffers other ranks' data passes through, not this rank's own (context
  // parallelism's K/V blocks on their way around the ring).
  bool inFlight = false;
  // A flat unit's ZeRO chunks only: where tensor parallelism splits the unit's weights, the unit
  // here is this rank's tensor-parallel shard `tpShard` of `tpShards` (0: a unit whole on every
  // tp rank), so that two tp ranks' chunks are not read as the same part of the layer.
  int tpShard = 0, tpShards = 0;
  // What each value is stored as: bf16 or fp16 for the parameters under mixed precision, fp32
  // for everything else (`bytes` counts the values at that width).
  Dtype dtype = Dtype::Fp32;
};

// A communicator group this rank belongs to and its members, so per-op traffic can be drawn
// to the ranks it went to.
struct HeldGroup {
  std::string name;             // "dp", "tp", "pp", "world"
  std::vector<int> worldRanks;  // in group-rank order
};

struct RankHoldings {
  int rank = 0;
  GridCoords coords;  // dp, tp, pp of this rank (data-parallel strategies: dp = rank)
  std::vector<HeldSlice> items;
  std::vector<HeldGroup> groups;
  // Bytes sent in the last step: per world rank (sentTo) and per op and group (ops). Filled by
  // the Trainer from the communicator's accounting.
  CommTraffic lastStep;
};

nlohmann::json toJson(const RankHoldings& h);
// Every weight of `ps` held whole, as `kind` (params or grads): one item per tensor.
void addWholeTensors(std::vector<HeldSlice>& items, const ParamSet& ps, HoldingKind kind);
// Floats of optimizer state per parameter (optimizer.h): sgd 0, momentum 1, adam 2.
int optimizerStateSlots(const std::string& optimizer);

// [SECTION] The GPT's activations under --recompute (model/gpt.h), for the items' names and bytes.
// Bytes of attention's probabilities [windows, heads, T, T] of one block.
int64_t attentionProbsBytes(int64_t windows, int heads, int seq);
// A whole GPT's activation buffers for `windows` windows, as Gpt::ensureCapacity makes them:
// `stored`, what the forward keeps for the backward (counted as Activations: token ids, the
// residual stream, each kept block's buffers, the final LayerNorm and the logits), and
// `recomputed`, the one block's buffers the backward recomputes into (counted as Workspace:
// selective, the probabilities; full, every buffer of a block). The backward's scratch (the
// gradients it passes along) is neither. An MoE FFN's routed rows are its own and not here.
struct GptActivationBytes {
  int64_t stored = 0, recomputed = 0;
};
GptActivationBytes gptActivationBytes(const GptShape& shape, Recompute recompute, int64_t windows);
// The items' names: "activations stored for backward", and "recomputed in backward: <what>
// (one block's buffers)" with what `recompute` recomputes ("attention probabilities", "block
// internals"); "" for none, which recomputes nothing.
extern const char* const kStoredActivations;
std::string recomputedActivationsName(Recompute recompute);

}  // namespace paralab
