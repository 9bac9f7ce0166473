// ZeRO's shard layout (Rajbhandari et al. 2020): the rank's parameters cut into units, each
// padded to a multiple of its group's N ranks and cut into N equal chunks; rank r of the group
// owns chunk r of every unit, ~P/N floats in all. Equal chunks are what reduceScatter /
// allGather need. The synchronisation that uses it is grad_sync.cpp.
// See tests/engine/tst_zero.cpp and tst_grad_sync.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/param_set.h"
#include "parallel/strategy.h"

namespace paralab {

// A range [begin, end) of a ParamSet's flat buffer and the group (an index into the caller's
// list of communicators) whose ranks hold replicas of it and sum its gradients. `suffix` names
// its part of a unit (".experts": "block0.experts").
struct SyncRange {
  int64_t begin = 0, end = 0;
  int group = 0;
  std::string suffix;
};

struct ZeroLayout {
  // What ZeRO shards as one: the weights of one model unit that share a group. A unit of the
  // MLP is one; a block of the MoE is two, its dense weights (over dp) and its experts (over
  // expert-dp). Units follow the flat buffer's order.
  struct Unit {
    std::string name;         // "block0", or "block0.experts" for an MoE block's experts
    int modelUnit = 0;        // the ParamSet unit it belongs to
    int group = 0;            // its SyncRange's group
    int64_t begin = 0;        // its first float in the model's flat buffer
    int64_t len = 0;          // its floats
    int64_t padded = 0;       // len rounded up to a multiple of N (the tail is zeros)
    int64_t chunk = 0;        // padded / N: what each rank owns of it
    int64_t paddedBegin = 0;  // where it starts in the padded full buffer
    int64_t shardBegin = 0;   // where a rank's chunk of it starts in that rank's shard
  };
  // Every model unit over one group of `ranks`.
  ZeroLayout(const ParamSet& ps, int ranks);
  // `ranges` (covering the flat buffer) over groups of `groupSizes` ranks.
  ZeroLayout(const ParamSet& ps, const std::vector<SyncRange>& ranges,
             const std::vector<int>& groupSizes);

  std::vector<Unit> units;
  // Units firstUnit[u] .. firstUnit[u + 1] - 1 belong to model unit u (consecutive in the
  // padded buffer: a model unit's padded layout is one range of it).
  std::vector<int> firstUnit;
  int64_t numel = 0;        // P
  int64_t paddedNumel = 0;  // sum of padded: P plus at most N-1 floats per unit
  int64_t shardNumel = 0;   // sum of chunks: the floats one rank owns (P/N with one group)
};

// Stage 1 shards optimizer state, 2 also gradients, 3 also parameters (FSDP). Synchronous data
// parallelism with the rank's GradSync at that stage (data_parallel.cpp).
std::unique_ptr<Strategy> makeZero1(RankContext& ctx);
std::unique_ptr<Strategy> makeZero2(RankContext& ctx);
std::unique_ptr<Strategy> makeZero3(RankContext& ctx);

}  // namespace paralab
