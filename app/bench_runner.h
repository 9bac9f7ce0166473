// BenchRunner: the window's handle on a lesson step's teaching benchmark, run as an engine job
// (engine/api/jobs/bench_job.h: the GEMM ladder, SIMD width, false sharing, CPU against GPU
// layer by layer, layouts projected on a cluster, latency vs throughput). Progress and the
// result arrive as signals on the GUI thread, as SweepRunner's do; cancel() stops it between
// pieces. See tests/app/tst_window.cpp (benchStepDrawsItsChart).
#pragma once
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <memory>

#include "jobs/bench_job.h"
#include "lesson.h"

namespace paralab {

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
  bool isRunning() const { return m_job != nullptr; }
  // A step's block as the engine's request: every key its kind takes (jobs::benchSettings()),
  // the block's value or else the default; `settings` for what the block leaves to them.
  static jobs::BenchRequest request(const lessons::Bench& bench, const RunConfig& settings = {});
  // The model and batch sizes a latency block sweeps (jobs::latencyConfig, latencyBatches).
  static RunConfig latencyConfig(const lessons::Bench& bench);
  static std::vector<int> latencyBatches(const lessons::Bench& bench);

 signals:
  void progress(int done, int total);
  // What was measured (all of it, or what finished before a cancel), or `error` set.
  void finished(const paralab::BenchResult& result, const QString& error);

 private:
  void finish();

  std::unique_ptr<jobs::Job<BenchResult>> m_job;  // GUI thread only
};

}  // namespace paralab
