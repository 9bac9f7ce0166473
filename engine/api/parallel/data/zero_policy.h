// ZeRO as a sharding policy (Rajbhandari et al. 2020), one row per stage: what the stage shards
// over a group's N data-parallel ranks, the model-state bytes one rank then holds, the bytes it
// sends per step and the formula the memory lesson shows. GradSync asks it what to shard; the
// memory estimate, the --zero choices and the strategy table's ZeRO rows read it.
// See tests/engine/tst_zero.cpp (policyMatchesWhatTheRanksHoldAndSend) and tst_grad_sync.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace paralab {

// The stage of --zero. RunConfig, JSON and the command line keep it as the integer 0..3.
enum class ZeroStage { None = 0, OptimizerState = 1, Gradients = 2, Parameters = 3 };

// How many collectives over the model's 4P bytes a stage runs per step: `perStep` once, plus
// `perMicroBatch` for each of M micro-batches (a pipeline runs each unit's backward M times).
struct ZeroCollectives {
  int perStep = 0;
  int perMicroBatch = 0;
  int times(int microBatches) const { return perStep + perMicroBatch * microBatches; }
};

// Model states one rank holds, bytes: parameters, gradients, optimizer state.
struct ZeroStateBytes {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

struct ZeroPolicy {
  ZeroStage stage = ZeroStage::None;
  const char* row = "";      // its row of the strategy table ("zero-1"; stage 0 is "sync")
  const char* title = "";    // "ZeRO-1"
  const char* summary = "";  // one line for --help, the strategy table and the window
  // What the stage cuts into N equal chunks, rank r of the group keeping chunk r. The rest each
  // rank holds whole. A sharded gradient is reduce-scattered as backward finishes its unit;
  // sharded parameters are all-gathered before each forward and backward of their unit.
  bool shardsOptimizer = false, shardsGradients = false, shardsParameters = false;
  // The ring's traffic: an all-reduce sends 2(N-1)/N x 4P bytes per rank, a reduce-scatter or an
  // all-gather (N-1)/N x 4P (lessons/05).
  ZeroCollectives allReduces, reduceScatters, allGathers;

  bool shardsAnything() const { return shardsOptimizer || shardsGradients || shardsParameters; }
  // fp32 parameters and gradients (4 bytes each) and K bytes of optimizer state per parameter,
  // P parameters whose group has N ranks: 4P + 4P + KP at stage 0, ... (8+K)P/N at stage 3.
  ZeroStateBytes bytesPerRank(double P, int N, int K) const;
  // The same in words with K a number: "4P + 12P/N" (Adam at stage 2).
  std::string formulaText(int K) const;
  // Collectives per step in units of (N-1)/N x 4P: an all-reduce counts two.
  int ringHalves(int microBatches = 1) const;
  // Bytes one rank sends per step with the ring, over a group of N ranks.
  double trafficBytes(double P, int N, int microBatches = 1) const;
  // The same in words at M = 1: "3(N-1)/N x 4P" (ZeRO-3).
  std::string trafficText() const;
};

// Every stage, 0 first.
const std::vector<ZeroPolicy>& zeroPolicies();
const ZeroPolicy& zeroPolicy(ZeroStage stage);
// The stage of --zero N, or nothing outside 0..3.
std::optional<ZeroStage> zeroStageOf(int n);

}  // namespace paralab
