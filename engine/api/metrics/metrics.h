// The per-step record every view and export reads: what each rank measured in one step
// (RankMetrics) and the step they make together (StepMetrics). One record travels from the rank
// program to rank 0 (under MPI, as its JSON), into the Session's snapshots, the `--json` lines,
// the window's run file and its charts, with one set of names: toJson and the *FromJson
// functions below, defined in prose once in lessons/reference/metrics.md.
// See tests/engine/tst_metrics.cpp (the round trip) and `paralab-run --steps 3 --json`.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "comm/comm_traffic.h"  // TierBytes
#include "memory/memory_tracker.h"
#include "metrics/overlap.h"

namespace paralab {

// The version written as "schema" in every JSON line; a reader refuses newer ones.
inline constexpr int kMetricsSchema = 1;

// The refusal of a line of another schema: "schema: version 7 (this build reads version 1)".
std::string schemaRefusal(int schema);

// One rank's traffic in one step of one kind of call on one communicator group (the
// communicator's CommOpTotals, algorithms summed): what the per-rank traffic bars stack.
struct OpTraffic {
  std::string op;     // "allreduce", "reducescatter", ... (commOpName)
  std::string group;  // "world", "dp", "tp", "pp", ...
  int64_t calls = 0;
  int64_t bytesSent = 0, bytesRecv = 0;  // over links, this rank
  double ms = 0;                         // inside these calls
  bool operator==(const OpTraffic&) const = default;
};

// A pipeline stage's work in one step (steady clock, ns): its first and last forward/backward
// span, and the time it was busy between them (pipeline.h, stageTimes). The bubble of every
// stage is measured from all stages' times together.
struct StageTimes {
  int64_t firstNs = 0, lastNs = 0, busyNs = 0;
  bool any = false;  // the stage ran a forward or backward in the step
  bool operator==(const StageTimes&) const = default;
};

// What one rank did during one step. Times in milliseconds of wall clock, bytes as counted
// by the communicator, memory from the rank's MemoryTracker at the end of the step (its peak:
// the high-water mark of the sum during the step, and each category's).
struct RankMetrics {
  int rank = 0;
  double lossSum = 0;    // summed per-sample losses of this rank's samples, nats
  int64_t samples = 0;   // samples this rank computed the loss of
  double computeMs = 0;  // data + forward + backward + optimizer spans
  double commMs = 0;     // communication spans
  double idleMs = 0;     // step time not covered by any span
  double dataMs = 0, forwardMs = 0, backwardMs = 0, optimizerMs = 0;  // the parts of computeMs
  int64_t bytesSent = 0;
  int64_t bytesRecv = 0;
  std::vector<int64_t> sentTo;  // bytes sent to each world rank (a row of the link heatmap)
  std::vector<OpTraffic> ops;   // bytesSent/bytesRecv split by (op, group)
  // --gpus-per-node G: bytesSent and bytesRecv split by tier, inside this rank's node and to
  // other nodes (comm/link_model.h)
  std::optional<TierBytes> tiers;
  // Some of the bytes above are the algorithm's model, not counted transfers: a library's
  // collective (MPI's, NCCL's) moves them where ParaLab cannot see (metrics.md).
  bool bytesModelled = false;
  std::optional<double> staleness;  // ps-async, Hogwild: mean updates missed (metrics.md)
  std::optional<double> spread;     // local SGD, gossip: max distance from the mean model
  std::optional<StageTimes> stage;  // --pp > 1: the stage's pipeline work, when it had any
  std::optional<double> bubble;     // --pp > 1: share of the pipeline's time this stage idled
  // --cp > 1: the ring attention's transfers (ringOverlap, ring_attention.h), ms: the time a
  // K/V block this rank sent was in flight, the part of it the rank computed through (hidden)
  // and the part it sat in the ring's send/recv (exposed)
  std::optional<double> cpTransferMs, cpHiddenMs, cpExposedMs;
  // --straggler: the slowed rank's emulated extra compute (a sleep), ms; part of backwardMs
  std::optional<double> emulatedStragglerMs;
  // --model moe, this rank's share: token choices of its tokens routed to each expert per block
  // [L][E] (before capacity), those dropped over capacity, the token rows its experts ran (all
  // blocks), its part of the load-balancing loss (nats).
  std::vector<std::vector<int64_t>> expertTokens;
  std::optional<int64_t> droppedTokens;
  std::optional<int64_t> tokens;
  std::optional<double> auxLoss;
  // --precision bf16|fp16: this rank's loss scale, skipped steps and flushed gradient entries
  // (StepMetrics says what each is).
  std::optional<double> lossScale;
  std::optional<int64_t> skippedSteps;
  std::optional<int64_t> flushedGrads;
  // The overlap meter of the rank's step (metrics/overlap.h): present when its spans were
  // recorded (not under --no-instrument).
  std::optional<OverlapMeter> overlap;
  MemorySnapshot mem;
};

struct StepMetrics {
  int64_t step = 0;        // 1-based index of the step just finished
  double loss = 0;         // mean cross-entropy over the samples the ranks processed, nats
  double stepMs = 0;       // wall time of the whole step, ms
  double samplesPerS = 0;  // the samples the ranks processed / step time
  // The model's arithmetic (modelFlopsPerSample, model.h) x samplesPerS, GFLOP/s: what MFU
  // divides by a peak. Absent from runs recorded before it was.
  std::optional<double> modelGflops;
  double forwardMs = 0, backwardMs = 0, optimizerMs = 0, dataMs = 0;  // rank 0's breakdown
  std::optional<double> testAccuracy;     // fraction in [0,1], on steps where it was evaluated
  std::optional<double> testLoss;         // held-out loss per sample, nats (GPT: per character)
  std::optional<double> staleness;        // ps-async, Hogwild: mean over ranks
  std::optional<double> spread;           // local SGD, gossip: max over ranks
  std::optional<double> bubble;           // --pp > 1: mean over ranks of RankMetrics::bubble
  std::optional<double> bubbleReference;  // --pp > 1: (P-1)/(M+P-1), reference
  // --accumulate K > 1: the micro-batches (of global batch / K samples) summed into this
  // optimizer step
  std::optional<int> accumulate;
  // --elastic: the ranks that trained this step (the group shrinks when a replica fails and
  // grows when it rejoins; train/elastic.h)
  std::optional<int> world;
  // --model moe, over the global batch (the ranks' shares summed): token choices routed to each
  // expert per block [L][E], those dropped over capacity, the load-balancing loss (nats).
  std::vector<std::vector<int64_t>> expertTokens;
  std::optional<int64_t> droppedTokens;
  std::optional<double> auxLoss;
  // --precision bf16|fp16 (lessons/reference/precision.md): the loss scale the step ran at (1
  // but with fp16), the optimizer steps skipped so far on an inf/NaN gradient, and the weight
  // gradient entries (all ranks') nonzero in fp32 and zero once rounded to the 16-bit dtype.
  std::optional<double> lossScale;
  std::optional<int64_t> skippedSteps;
  std::optional<int64_t> flushedGrads;
  std::string emulated;  // the emulated link's name, "" when links are real
  // --gpus-per-node G: ranks r and q share a node when r / G == q / G (each rank's `tiers`)
  std::optional<int> gpusPerNode;
  std::vector<RankMetrics> ranks;
};

// The JSON of metrics.md. A step's object is one `--json` line: its "schema" version, its
// figures and "ranks", each rank's object as toJson(RankMetrics). Optional figures appear only
// when set. The readers take what the writers write and throw std::runtime_error naming the
// field that is missing or of the wrong type (or a schema newer than kMetricsSchema).
nlohmann::json toJson(const StepMetrics& m);
nlohmann::json toJson(const RankMetrics& r);
nlohmann::json toJson(const MemorySnapshot& m);
StepMetrics stepMetricsFromJson(const nlohmann::json& j);
RankMetrics rankMetricsFromJson(const nlohmann::json& j);

// Whether any rank's bytes in `m` are modelled rather than counted (RankMetrics::bytesModelled).
bool bytesModelled(const StepMetrics& m);

// Field-by-field equality, doubles compared exactly: what a JSON round trip must preserve.
bool operator==(const RankMetrics& a, const RankMetrics& b);
bool operator==(const StepMetrics& a, const StepMetrics& b);

}  // namespace paralab
