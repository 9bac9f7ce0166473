// ZeRO's shard layout (Rajbhandari et al. 2020): every unit's range of the flat parameter
// buffer is padded to a multiple of N floats and cut into N equal chunks; rank r owns chunk r
// of every unit, ~P/N floats in all. Equal chunks are what reduceScatter / allGather need.
// The strategies are in zero.cpp. See tests/engine/tst_zero.cpp.
#pragma once
#include <memory>
#include <vector>

#include "model/param_set.h"
#include "parallel/strategy.h"

namespace paralab {

struct ZeroLayout {
  struct Unit {
    int64_t begin = 0;        // the unit's first float in the model's flat buffer
    int64_t len = 0;          // its floats
    int64_t padded = 0;       // len rounded up to a multiple of N (the tail is zeros)
    int64_t chunk = 0;        // padded / N: what each rank owns of it
    int64_t paddedBegin = 0;  // where it starts in the padded full buffer
    int64_t shardBegin = 0;   // where a rank's chunk of it starts in that rank's shard
  };
  ZeroLayout(const ParamSet& ps, int ranks);

  int ranks = 1;
  std::vector<Unit> units;
  int64_t numel = 0;        // P
  int64_t paddedNumel = 0;  // sum of padded: P plus at most N-1 floats per unit
  int64_t shardNumel = 0;   // paddedNumel / N: the floats one rank owns
};

// Stage 1 shards optimizer state, 2 also gradients, 3 also parameters (FSDP).
std::unique_ptr<Strategy> makeZero1(RankContext& ctx);
std::unique_ptr<Strategy> makeZero2(RankContext& ctx);
std::unique_ptr<Strategy> makeZero3(RankContext& ctx);

}  // namespace paralab
