// Strategy: how one rank takes part in a training step — which slice of the batch and of the model
// it holds, and which collectives it issues. One object per rank; every rank runs the same code on
// its own shard (SPMD, docs/architecture.md §3). Strategies are listed in registry.cpp. See
// tests/engine/tst_parallel_equals_serial.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "data/dataset.h"
#include "metrics/span_recorder.h"
#include "model/mlp.h"
#include "parallel/holdings.h"
#include "schema.h"
#include "train/training_state.h"

namespace paralab {

class Communicator;
class Compute;

// What one rank is given: its communicator (the world), its memory and span recorders, the
// run's configuration, the data set (shared, read-only) and where its math runs (its device and
// --kernel's GEMM; null: the CPU with the vendor GEMM).
struct RankContext {
  int rank = 0;
  int worldSize = 1;
  Communicator* comm = nullptr;
  MemoryTracker* memory = nullptr;
  SpanRecorder* spans = nullptr;
  const RunConfig* config = nullptr;
  const Dataset* data = nullptr;
  Compute* compute = nullptr;
};

// Gives a context without a Compute (one built by hand in a test) the CPU with the vendor
// GEMM, made into `own`, which the strategy keeps and declares before anything it allocates.
void ensureCompute(RankContext& ctx, std::unique_ptr<Compute>& own);

// What one rank reports about one step (values only; the trainer adds times, traffic, memory).
struct RankStep {
  double lossSum = 0;  // sum of per-sample losses over this rank's samples
  int samples = 0;     // samples this rank processed
  // ps-async: server versions between the worker's pull and its update being applied;
  // Hogwild: other ranks' updates landed while this rank computed. Mean over its updates.
  std::optional<double> staleness;
  // Local SGD / gossip: the largest L2 distance of a rank's parameters from the mean of all
  // ranks' parameters (the pairwise maximum lies between this and twice it).
  std::optional<double> spread;
  // --model moe (this rank's share; the trainer sums them): token choices of this rank's tokens
  // routed to each expert, [L x E] before capacity; those dropped over capacity; token rows
  // this rank's experts ran; this rank's part of the load-balancing loss.
  std::vector<int64_t> expertTokens;
  std::optional<int64_t> droppedTokens;
  std::optional<int64_t> tokens;
  std::optional<double> auxLoss;
  // --precision bf16|fp16 (train/precision.h): the loss scale the step ran at, the steps skipped
  // so far on an overflow, and this rank's weight-gradient entries its 16-bit rounding flushed.
  std::optional<double> lossScale;
  std::optional<int64_t> skippedSteps;
  std::optional<int64_t> flushedGrads;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // This rank's part of global step `step` (0-based); `globalBatch` holds the sample indices
  // of the whole global batch, the same on every rank.
  virtual RankStep step(int64_t step, const std::vector<int>& globalBatch) = 0;
  // Collective: a model with every parameter present on this rank (ZeRO-3 gathers it), for
  // evaluation on rank 0. endEval() lets the strategy drop what it gathered.
  virtual Model& beginEval() = 0;
  virtual void endEval() {}
  // Collective, for a model whose evaluation needs every rank (experts spread over ranks): every
  // rank calls it; rank 0 returns the evaluation of the first `n` test samples, in chunks of
  // `chunk`. nullopt: rank 0 evaluates alone through beginEval() instead.
  virtual std::optional<Evaluation> evaluateAll(int64_t n, int chunk) {
    (void)n;
    (void)chunk;
    return std::nullopt;
  }
  // What this rank holds (holdings.h), from the strategy's own sharding; call between steps.
  // The Trainer adds the rank and its last step's traffic.
  virtual RankHoldings holdings() const { return {}; }
  // Live reconfiguration, both collective (every rank calls them between steps): save the
  // full parameters and optimizer state (rank 0's `state` must be complete), and load them
  // into this layout. Strategies that cannot say so by throwing a one-line reason.
  virtual void saveState(TrainingState& state);
  virtual void loadState(const TrainingState& state);
};

// [SECTION] The strategy table (registry.cpp).
//
// "Strategy" names three things that belong together: a value of --strategy, its row here,
// and the Strategy subclass the row makes. Some rows are chosen by other settings instead
// (ChosenBy): the ZeRO stages of sync (--zero), tensor and pipeline parallelism (--tp, --pp)
// and the mixture of experts (--model moe); each trains with sync data parallelism on its
// data-parallel axis.
enum class ChosenBy {
  StrategyFlag,  // --strategy NAME
  ZeroStage,     // --strategy sync --zero N: the row "zero-N"
  Layout,        // --tp / --pp above 1 ("model-parallel") or --model moe ("moe")
};
struct StrategyInfo {
  const char* name;     // the value of --strategy, or the row's name for the other choosers
  const char* summary;  // one line, shown in --help and the window's tooltip
  bool equalsSerial;    // synchronous: must reproduce the serial loss trajectory
  bool threadOnly;      // needs ranks that share memory (Hogwild)
  std::unique_ptr<Strategy> (*make)(RankContext& ctx);
  ChosenBy chosenBy = ChosenBy::StrategyFlag;
  // The settings of the schema (schema.h) this strategy reads besides the run's own ones:
  // a setting listed by some rows applies only under those rows.
  std::vector<std::string> uses = {};
  // Settings this strategy declares for itself (schema.h extraSetting), kept in
  // RunConfig::extra; they apply under this row only.
  std::vector<Setting> settings = {};
  // Why a configuration this row runs cannot run, as "setting: reason" (nullptr: any can).
  // RunConfig::validate() asks it before anything else that involves several settings.
  Setting::Why (*incompatible)(const RunConfig&) = nullptr;
};
const std::vector<StrategyInfo>& strategyTable();
// The row that runs `config`: the layout chosen by --model moe or tp x pp > 1, else the row of
// --strategy (with --zero picking the ZeRO variants of "sync"); throws ConfigError naming the
// allowed values.
const StrategyInfo& strategyFor(const RunConfig& config);
// With --device cuda: why this run cannot go on the GPU (its backend moves host buffers only),
// or nothing. Part of RunConfig::validate().
std::optional<std::string> cudaRefusal(const RunConfig& config);

}  // namespace paralab
