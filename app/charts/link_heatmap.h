// LinkHeatmap: who sent how many bytes to whom in the last step, an N x N map with a row per
// sending rank and a column per receiving rank (RankMetrics::sentTo), labelled in each cell.
// With nodes (--gpus-per-node G) each node's G x G block is framed: the cells inside a frame
// crossed the intra-node link, those outside the link between nodes.
// See tests/app/tst_charts_ranks.cpp (heatmapCellsAreSentTo), tst_charts_tiers.cpp and
// screenshots/links.png.
#pragma once
#include <cstdint>
#include <vector>

#include "charts/chart.h"
#include "session.h"

namespace paralab {

class LinkHeatmap : public Chart {
  Q_OBJECT
 public:
  explicit LinkHeatmap(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  void showSnapshot(const Snapshot& snapshot);              // its last step; none: left as it is
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;
  void applyLook(const QPalette& palette) override;  // the colour scale's axis too

  double unitBytes() const { return m_unit; }
  // The drawn value of cell (from, to): bytes / unitBytes(), NaN (no colour) where 0 bytes.
  double cell(int from, int to) const;
  const std::vector<std::vector<int64_t>>& bytes() const { return m_bytes; }
  // Ranks per node of the step shown (0: one node, no frames), and whether a cell's bytes
  // crossed the link between nodes.
  int gpusPerNode() const { return m_gpusPerNode; }
  bool betweenNodes(int from, int to) const {
    return m_gpusPerNode > 0 && from / m_gpusPerNode != to / m_gpusPerNode;
  }
  const QList<QCPItemRect*>& nodeFrames() const { return m_frames; }

 private:
  void fitCellLabels();  // after each layout: each cell's label as wide as its cell allows

  QCPColorMap* m_map = nullptr;
  QCPColorScale* m_scale = nullptr;
  QList<QCPItemText*> m_labels;
  QList<QCPItemStraightLine*> m_lines;        // between the cells
  QList<QCPItemRect*> m_frames;               // one per node, around its block
  int m_gpusPerNode = 0;
  std::vector<std::vector<int64_t>> m_bytes;  // [from][to], as sentTo
  double m_unit = 1;
};

}  // namespace paralab
