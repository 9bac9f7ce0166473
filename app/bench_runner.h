// BenchRunner: runs a lesson step's teaching benchmark (engine/teach/: the GEMM ladder, SIMD
// width, false sharing, CPU against GPU layer by layer (roofline), layouts projected on a
// cluster; engine/train/latency_sweep.h: latency vs throughput) on a worker thread and
// reports progress and the result to the GUI thread through queued calls, as SweepRunner does;
// cancel() makes the next progress callback return false. See tests/app/tst_window.cpp
// (benchStepDrawsItsChart).
#pragma once
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <atomic>
#include <optional>
#include <thread>

#include "lesson.h"
#include "teach/false_sharing.h"
#include "teach/gemm_ladder.h"
#include "teach/layout_projection.h"
#include "teach/roofline.h"
#include "teach/simd_width.h"
#include "train/latency_sweep.h"

namespace paralab {

// What a benchmark measured: one of these, as its kind says.
struct BenchResult {
  QString kind;     // lessons::Bench::kind
  int repeats = 0;  // timed runs behind each median, where the kind takes `repeats`
  std::optional<teach::GemmLadderResult> ladder;
  std::optional<teach::FalseSharingSweep> falseSharing;
  std::optional<teach::SimdWidthResult> simd;
  // Latency vs throughput: the CPU's sweep, the GPU's where there is one (else why not).
  std::optional<LatencySweepResult> latencyCpu, latencyGpu;
  QString gpuNotRun;
  QString latencyModel;  // "mlp H=128, L=2, 365,706 parameters, fashion-mnist test samples"
  // The time a GPT batch size may take to be timed (LatencySweepOptions::maxMsPerSize): the
  // chart says which sizes it left out.
  double latencyBudgetMs = 0;
  // CPU against GPU: each layer measured on this CPU, projected for real GPUs (and measured on
  // one where it answers).
  std::optional<teach::RooflineResult> roofline;
  // Layouts of one model projected on a cluster (every figure projected).
  std::optional<teach::LayoutProjection> layouts;
  bool cancelled() const {
    return (ladder && ladder->cancelled) || (falseSharing && falseSharing->cancelled) ||
           (simd && simd->cancelled) || (latencyCpu && latencyCpu->cancelled) ||
           (latencyGpu && latencyGpu->cancelled) || (roofline && roofline->cancelled);
  }
};

// What a benchmark measured as the metric paths of a step's ```compare read it (defined in
// lessons/reference/metrics.md): `widths[lanes=16].gflops`, `rungs[kernel=vendor].gflops`,
// `peak_gflops`, `false_sharing[threads=2].slowdown`, `latency[batch=1].ms_per_forward` (and,
// for the GPT, `latency[batch=1].tokens_per_s`), `batches[batch=1].layers[layer=fc1].cpu_ms`,
// `batches[batch=1].layers[layer=fc1].flops_per_byte`,
// `batches[batch=4096].layers[layer=fc1].projected[gpu=h100-sxm].ms`,
// `layouts[tp=16].tp_comm_ms`, `layouts[tp=16].tp_share`.
QJsonObject benchJson(const BenchResult& result);

class BenchRunner : public QObject {
  Q_OBJECT
 public:
  explicit BenchRunner(QObject* parent = nullptr);
  ~BenchRunner() override;  // cancels a benchmark in flight and waits for its piece to end

  // Starts `bench` (a step's block with a kind) unless one is running (then returns false).
  // `settings`: the run settings, for what the block leaves to them (the roofline's H, L and
  // CPU GEMM).
  bool start(const lessons::Bench& bench, const RunConfig& settings = {});
  void cancel();
  bool isRunning() const { return m_running; }
  // The engine's options for a step's block: its keys, or their defaults ("threads" 0: every
  // core this machine has; false sharing at least 2 threads, so that something is shared).
  static teach::GemmLadderOptions ladderOptions(const lessons::Bench& bench);
  static teach::FalseSharingOptions falseSharingOptions(const lessons::Bench& bench);
  // The model and batch sizes a latency block sweeps: 1, 2, 4, ... up to its max-batch (for
  // "model": "gpt", windows of its seq characters, on its own text).
  static RunConfig latencyConfig(const lessons::Bench& bench);
  static std::vector<int> latencyBatches(const lessons::Bench& bench);
  // The roofline block's options: hidden and layers from the block or else the run settings'
  // MLP, batch 1 and max-batch, the projection's precision.
  static teach::RooflineOptions rooflineOptions(const lessons::Bench& bench,
                                                const RunConfig& settings);
  static teach::LayoutProjectionOptions layoutOptions(const lessons::Bench& bench);

 signals:
  void progress(int done, int total);
  // What was measured (all of it, or what finished before a cancel), or `error` set.
  void finished(const paralab::BenchResult& result, const QString& error);

 private:
  void finish(const BenchResult& result, const QString& error);

  std::thread m_thread;
  std::atomic<bool> m_cancel{false};
  bool m_running = false;  // GUI thread only
};

}  // namespace paralab
