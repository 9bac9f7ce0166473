// BenchChart: a lesson's teaching benchmark, as measured in the window (engine/teach/). The
// GEMM ladder: GFLOP/s per rung as bars, OpenBLAS's bar in its own colour, the cores' FMA peak
// a dashed reference line. SIMD width: one core's GFLOP/s at 1, 4, 8 and 16 lanes, each inside
// the dashed outline of lanes × the scalar rate (the reference). False sharing: ns per increment
// at 1..N threads, counters in one cache line beside counters padded to a line each. Latency vs
// throughput: samples/s per batch size as bars, ms per forward as a line on the right axis; the GPU
// beside the CPU, or said not run. The GPT's: tokens/s per batch of windows of T characters, and
// the sizes its time budget left untimed said on the chart. CPU against GPU (roofline): each
// layer's forward + backward time on a log axis, at batch 1 and at the largest batch, measured
// on this CPU beside projected for an H100 SXM and an A100 80GB, solid where the roofline says
// the GPU is compute-bound, hatched where memory-bound. Layouts: one GPT's projected step per
// tensor-parallel degree, stacked by where the time goes. GPU counts and the GIL: see
// bench_chart_counted.cpp. Exports like every chart (Export
// all). See tests/app/tst_window.cpp (benchStepDrawsItsChart) and tests/app/tst_charts_bench.cpp.
#pragma once
#include <optional>
#include <vector>

#include "bench_runner.h"
#include "charts/chart.h"

namespace paralab {

class BenchChart : public Chart {
  Q_OBJECT
 public:
  explicit BenchChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory&) override {}
  bool followsRun() const override { return false; }  // a benchmark, not the training run
  void showResult(const BenchResult& result);
  void clear();

  int pointCount() const override;
  void writeCsv(QTextStream& out) const override;
  const std::optional<BenchResult>& result() const { return m_result; }
  // The bars drawn, in order along the x axis (tests read them against result()).
  QCPBars* rungs() const { return m_rungs; }
  QCPBars* vendor() const { return m_vendor; }
  QCPBars* ideal() const { return m_ideal; }  // SIMD width: lanes × the scalar rate
  QCPBars* shared() const { return m_shared; }
  QCPBars* padded() const { return m_padded; }
  QCPGraph* peak() const { return m_peak; }
  QCPBars* cpuRate() const { return m_cpuRate; }  // latency: samples/s (GPT: tokens/s) per batch
  QCPBars* gpuRate() const { return m_gpuRate; }
  QCPGraph* cpuLatency() const { return m_cpuLatency; }  // ms per forward, right axis
  // Roofline: µs per layer measured on this CPU (and on a GPU where one answered); projected
  // per GPU of the result (0: H100, 1: A100), compute-bound bars and memory-bound bars.
  QCPBars* cpuLayers() const { return m_cpuLayers; }
  QCPBars* gpuLayers() const { return m_gpuLayers; }
  QCPBars* projectedLayers(int gpu, bool computeBound) const {
    return m_projected[gpu][computeBound ? 1 : 0];
  }
  // Layouts: the stacked parts of each projected step (compute, TP comm, pipeline, the rest).
  QCPBars* splitBars(int part) const { return m_split[part]; }
  // The texts drawn on the plot (value labels, group names, notes), in order.
  QStringList plotTexts() const;
  // Latency: "not timed", written in the slots of sizes no device timed (null: none, or hidden
  // where the slots are too narrow for it).
  const QCPItemText* notTimedNote() const {
    return m_notTimed && m_notTimed->visible() ? m_notTimed : nullptr;
  }
  // The names under the bars (x tick labels), left to right (all of them, also those a narrow
  // plot leaves out).
  QStringList tickLabels() const;

 private:
  void showLadder(const teach::GemmLadderResult& r);
  void showSimd(const teach::SimdWidthResult& r, int repeats);
  void showFalseSharing(const teach::FalseSharingSweep& s);
  void showLatency(const BenchResult& r);
  void showRoofline(const teach::RooflineResult& r);
  void showLayouts(const teach::LayoutProjection& p);
  void showGpuCounts(const teach::GpuCountsResult& r);  // bench_chart_counted.cpp
  void showGil(const teach::GilResult& r, int repeats);
  // The batch sizes of a latency result along the x axis (its bars and its CSV rows).
  static std::vector<int> latencySlots(const BenchResult& r);
  QCPItemText* addNote(double x, double yRatio, const QString& text, const QColor& color);
  void addValueLabel(double x, double y, const QString& text, const QColor& color);
  // The x axis names each bar (kernel, thread count, batch size); where the plot is too narrow
  // for all names side by side, every second (or third, ...) is shown, the first always.
  void setTickNames(const QStringList& names);
  void fitTickNames();
  void fitNotTimed(int plot);  // the "not timed" note, for a plot `plot` px wide
  void resizeEvent(QResizeEvent* event) override;

  std::optional<BenchResult> m_result;
  QCPBars *m_rungs, *m_vendor, *m_ideal, *m_shared, *m_padded, *m_cpuRate, *m_gpuRate;
  QCPGraph *m_cpuLatency, *m_gpuLatency;
  QCPBars *m_cpuLayers, *m_gpuLayers, *m_projected[2][2], *m_split[4], *m_boundKey;
  QList<QCPAbstractItem*> m_items;  // separators drawn with a result, removed by clear()
  // Roofline: each batch's note over its group of `m_groupSlots` slots, in full and short (the
  // batch alone) where the full one would not fit (fitNotes).
  struct GroupNote {
    QCPItemText* item;
    QString full, brief;
  };
  QList<GroupNote> m_groupNotes;
  int m_groupSlots = 0;
  void fitNotes(int plot);
  QCPBarsGroup* m_group;
  QCPGraph* m_peak;  // the FMA-peak reference, a line across the ladder
  QList<QCPItemText*> m_labels;
  QCPItemText* m_notTimed = nullptr;  // latency: in the slots no device timed (one of m_labels)
  int m_untimedSlots = 0;             // those slots, at the right end of the x axis
  QStringList m_tickNames;  // at x = 1, 2, ...
};

}  // namespace paralab
