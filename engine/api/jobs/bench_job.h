// A lesson step's teaching benchmark as a job: the GEMM ladder, SIMD width, false sharing,
// latency against throughput, CPU against GPU layer by layer (roofline), layouts projected
// on a cluster, the GPU kernels counted on the host and the GIL, each run on the job's thread with progress and cancel. The block's keys come
// resolved (defaults filled in) in a BenchRequest; this file chooses the engine's options from
// them. See tests/engine/tst_jobs.cpp and tests/app/tst_window.cpp (benchStepDrawsItsChart).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "jobs/job.h"
#include "teach/false_sharing.h"
#include "teach/gemm_ladder.h"
#include "teach/gil.h"
#include "teach/gpu_counts.h"
#include "teach/layout_projection.h"
#include "teach/roofline.h"
#include "teach/simd_width.h"
#include "train/latency_sweep.h"

namespace paralab {

// What a benchmark measured: one of these, as its kind says.
struct BenchResult {
  std::string kind;  // BenchRequest::kind
  int repeats = 0;   // timed runs behind each median, where the kind takes `repeats`
  std::optional<teach::GemmLadderResult> ladder;
  std::optional<teach::FalseSharingSweep> falseSharing;
  std::optional<teach::SimdWidthResult> simd;
  // Latency vs throughput: the CPU's sweep, the GPU's where there is one (else why not).
  std::optional<LatencySweepResult> latencyCpu, latencyGpu;
  std::string gpuNotRun;
  std::string latencyModel;  // "mlp H=128, L=2, 365,706 parameters, fashion-mnist test samples"
  // The time a GPT batch size may take to be timed (LatencySweepOptions::maxMsPerSize): the
  // chart says which sizes it left out.
  double latencyBudgetMs = 0;
  // CPU against GPU: each layer measured on this CPU, projected for real GPUs (and measured on
  // one where it answers).
  std::optional<teach::RooflineResult> roofline;
  // Layouts of one model projected on a cluster (every figure projected).
  std::optional<teach::LayoutProjection> layouts;
  // The GPU kernels counted on the host (counted by executing the kernel source, not timed).
  std::optional<teach::GpuCountsResult> gpuCounts;
  // The GIL: a Python loop on threads and on processes.
  std::optional<teach::GilResult> gil;
  bool cancelled() const {
    return (ladder && ladder->cancelled) || (falseSharing && falseSharing->cancelled) ||
           (simd && simd->cancelled) || (latencyCpu && latencyCpu->cancelled) ||
           (latencyGpu && latencyGpu->cancelled) || (roofline && roofline->cancelled) ||
           (gil && gil->cancelled);
  }
};

}  // namespace paralab

namespace paralab::jobs {

// A ```bench block of a lesson step: its kind and every key the kind takes, the block's value
// or else the key's default (benchRequest in jobs/bench_settings.h).
struct BenchRequest {
  std::string kind;  // one of benchKinds(): gemm-ladder, simd-width, ..., gpu-counts, gil
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> words;  // keys named by a word ("model": "gpt")
  std::set<std::string> given;               // the keys the block itself gave
  // The run settings, for what a block leaves to them (the roofline's H, L and CPU GEMM).
  RunConfig settings;

  // The request's value, else the key's default in the kind's row (jobs::benchSettings());
  // 0 or "" for a key the kind does not take.
  double number(const std::string& key) const;
  std::string word(const std::string& key) const;
};

// The engine's options for a block ("threads" 0: every core this machine has; false sharing
// at least 2 threads, so that something is shared).
teach::GemmLadderOptions ladderOptions(const BenchRequest& request);
teach::FalseSharingOptions falseSharingOptions(const BenchRequest& request);
// The model and batch sizes a latency block sweeps: 1, 2, 4, ... up to its max-batch (for
// "model": "gpt", windows of its seq characters, on its own text; without the data on disk,
// synthetic data).
RunConfig latencyConfig(const BenchRequest& request);
std::vector<int> latencyBatches(const BenchRequest& request);
// The roofline block's options: hidden and layers from the block or else the run settings'
// MLP, batch 1 and max-batch, the projection's precision.
teach::RooflineOptions rooflineOptions(const BenchRequest& request);
teach::LayoutProjectionOptions layoutOptions(const BenchRequest& request);

// Runs the block here; throws std::invalid_argument for a kind there is no benchmark of.
BenchResult runBench(const BenchRequest& request, const ReportProgress& progress = {});
std::unique_ptr<Job<BenchResult>> startBench(BenchRequest request, JobCallbacks callbacks);

}  // namespace paralab::jobs
