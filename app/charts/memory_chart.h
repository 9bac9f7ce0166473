// MemoryChart: what each rank's tracking allocator counts at the end of the last step, as
// bars stacked by category (params, grads, optimizer, activations, comm, workspace, and the
// fp32 master copy of a mixed-precision run), each named with its dtype, the
// step's peak marked on each, and the lesson's model-states formula as a reference bar beside.
// See tests/app/tst_charts.cpp (memoryBarsAreTheSnapshotBytes) and screenshots/memory.png.
#pragma once
#include <array>
#include <optional>
#include <vector>

#include "charts/chart.h"
#include "charts/memory_reference.h"
#include "session.h"

namespace paralab {

class MemoryChart : public Chart {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  // The last step in `snapshot` (a snapshot without steps leaves the chart as it is).
  void showSnapshot(const Snapshot& snapshot);
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;

  // Bytes per drawn unit of the value axis (1024^k): bar values are bytes / unitBytes().
  double unitBytes() const { return m_unit; }
  QCPBars* bars(MemCategory c) const { return m_bars[size_t(c)]; }
  QCPBars* referenceBars() const { return m_reference; }
  const std::vector<MemorySnapshot>& shown() const { return m_mem; }

 private:
  std::array<QCPBars*, kMemCategories> m_bars{};
  QCPBars* m_reference = nullptr;
  QCPGraph* m_peakLegend = nullptr;  // legend entry of the peak lines
  QList<QCPItemLine*> m_peaks;
  std::vector<MemorySnapshot> m_mem;  // per rank, as in the snapshot
  std::vector<int> m_ranks;           // the rank of each
  std::optional<ModelStatesReference> m_ref;
  double m_unit = 1;
  Dtype m_precision = Dtype::Fp32;  // the run's --precision: its master copy, its dtypes
};

}  // namespace paralab
