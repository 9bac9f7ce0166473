// Latency vs throughput: the model of a RunConfig timed forward-only (inference) at each batch
// size, so a lesson can show one sample answered fastest alone and the pile served fastest in
// big batches. Try: paralab-run --latency-sweep batch=1,2,4,...,4096 [--json]
// A GPT sample is a window of T characters, T predictions per forward: its throughput is in
// tokens/s, and its larger batch sizes are only timed while they fit a time budget.
// See tests/engine/tst_cli.cpp (latencySweep*).
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config.h"

namespace paralab {

struct LatencyPoint {
  int batch = 1;
  double msPerForward = 0;    // median time of one forward over the whole batch, ms
  double samplesPerS = 0;     // batch / msPerForward: throughput
  double usPerSample = 0;     // msPerForward / batch, µs: what each sample costs inside the batch
  int repeats = 0;            // timed samples the median is taken over
  int forwardsPerRepeat = 1;  // forwards inside one timed sample (small batches are too quick
                              // to time one at a time)
  double tokensPerS = 0;      // --model gpt: batch x T predictions / msPerForward; 0 otherwise
};

struct LatencySweepResult {
  Device device = Device::Cpu;
  std::string kernel;
  ModelKind model = ModelKind::Mlp;
  int threads = 0;  // cpu: threads one GEMM runs on (the threaded and tiled rungs use the pool)
  std::string gpu;  // cuda: the GPU's name (the batch is copied to it from host memory each time)
  int64_t parameterCount = 0;
  std::vector<LatencyPoint> points;  // one per batch size, smallest first
  bool cancelled = false;            // progress said stop before the last batch size
  // --model gpt: T, the tokens of a window (a sample) the forward predicts; 0 for the MLP and
  // the MoE, whose sample is one image.
  int tokensPerSample = 0;
  // The batch sizes left untimed over LatencySweepOptions::maxMsPerSize (smallest first), and
  // why, in one sentence.
  std::vector<int> notTimed;
  std::string notTimedWhy;
};

// What a latency sweep measures and how.
struct LatencySweepOptions {
  int warmup = 3;            // untimed forwards at each batch size first (caches, allocations)
  int repeats = 7;           // timed samples per batch size; the median is reported
  double minRepeatMs = 2.0;  // a timed sample runs enough forwards to last at least this long
  // --model gpt: a batch size whose first warm-up forward says timing it (warmup + 1 + repeats
  // forwards) would take longer than this is not timed, nor any larger one. A GPT batch is
  // batch x T tokens, so a list made for the MLP (up to 4096) would run for minutes on a CPU;
  // the budget keeps a doubling sweep under about 20 s there and lets a GPU reach its larger
  // sizes.
  double maxMsPerSize = 5000;
};

// "batch=1,2,4,...,4096" -> {1, 2, 4, ..., 4096}: a list of sizes 1..65536, where "..." continues
// the ratio of the two sizes before it up to the size after it. Sorted, duplicates dropped.
// Throws ConfigError naming --latency-sweep and what is allowed.
std::vector<int> parseLatencySweep(const std::string& spec);

// Why `config` cannot be latency-swept at `batches` ("" when it can): one model on one rank, on
// a device and with a GEMM the model can run (RunConfig::validateDevice()), and the largest
// batch's activations (estimateMemory, memory_estimate.h) within this machine's memory, or the
// GPU's on cuda, naming the batch sizes that fit.
std::string latencySweepProblem(const RunConfig& config, const std::vector<int>& batches = {});

// Builds the model of `config` (model, hidden, layers, experts, top-k, and the GPT's seq and
// heads; input and classes from its dataset, which follows the model as datasetFollowsModel
// says) on rank 0's Compute (--device, --kernel) and times Model::evaluate / Moe::countCorrect
// on batches of the dataset's test samples (the GPT's: windows of T + 1 token ids), held in
// host memory as a server receives them.
// `progress(done, total)` after each batch size; returning false stops the sweep there (a
// lesson's Cancel), with the sizes measured so far.
LatencySweepResult runLatencySweep(const RunConfig& config, const std::vector<int>& batches,
                                   const LatencySweepOptions& options = {},
                                   const std::function<bool(int, int)>& progress = {});

// One JSON object: device, kernel, model, parameters, gemm_threads (cpu) or gpu (cuda), the
// configuration, a row per batch size
// {batch, ms_per_forward, samples_per_s, us_per_sample, repeats, forwards_per_repeat}; for the
// GPT also tokens_per_sample (T), each row's tokens, tokens_per_s and us_per_token, and
// not_timed [batch sizes] with not_timed_why where the budget left sizes out.
nlohmann::json toJson(const LatencySweepResult& result, const RunConfig& config);

}  // namespace paralab
