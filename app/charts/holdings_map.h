// HoldingsMap: what every rank holds, a column per rank and a row per layer (and per expert):
// which part of each layer's parameters, gradients and optimizer state (and, under mixed
// precision, its fp32 master copy), which rows of the batch and activations, and under each
// column whom it exchanged how much with last step.
// See tests/app/tst_charts_ranks.cpp (holdingsMap*: slices, labels, the MLP's layouts),
// tests/app/tst_holdings_layouts.cpp (cp and ep layouts), tst_holdings_precision.cpp (the
// master copy) and screenshots/holdings*.png.
#pragma once
#include <QString>
#include <array>
#include <limits>
#include <vector>

#include "charts/chart.h"
#include "parallel/holdings.h"

namespace paralab {

class RectLayer;

class HoldingsMap : public Chart {
  Q_OBJECT
 public:
  explicit HoldingsMap(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  // The ranks' holdings between two steps (Trainer::holdings, as the session will pass them).
  void showHoldings(const std::vector<RankHoldings>& holdings);
  void clear();
  void writeCsv(QTextStream& out) const override;  // the holdings drawn, one row per slice
  int pointCount() const override;
  // What the empty map says (an opened file without holdings says why).
  using Chart::setPlaceholderText;

  // What one bar shows: the parts of a row (layer, or "batch" / "activations" / "recomputed",
  // the GPT's --recompute buffers) a rank holds of one kind, as fractions [begin, end) of the
  // whole row.
  struct Cell {
    int rank = 0;
    QString row;
    HoldingKind kind = HoldingKind::Params;
    Dtype dtype = Dtype::Fp32;  // of its values: bf16 or fp16 for mixed precision's parameters
    std::vector<std::pair<double, double>> parts;
    int64_t bytes = 0;
    QStringList items;  // the slices it is drawn from, described (the hover text)
  };
  const std::vector<Cell>& cells() const { return m_cells; }
  const QStringList& rows() const { return m_rows; }
  // The layer a tensor belongs to: "block0.fc1.weight" -> "block0", "block1 (flat)" ->
  // "block1", "block0.expert2.fc1.weight" (and the GPT's "block0.moe.expert2.fc1.weight") ->
  // "block0.expert2". ZeRO-3's flat unit of a block's experts is the row "block0.experts": all
  // the block's experts end to end, of which expert parallelism's rank e of G holds the e-th 1/G
  // (its run of experts).
  static QString rowOf(const std::string& tensor);
  // Every (rank, row, kind) bar with the parts held: the map's data, before any drawing.
  static std::vector<Cell> cellsOf(const std::vector<RankHoldings>& holdings);

 protected:
  bool event(QEvent* event) override;                // hover: the slices under the pointer
  void applyLook(const QPalette& palette) override;  // the bars' byte labels too

 private:
  // Lays the chart out with labels fitted to the plot that layout gives: the labels take
  // margins of their own, so it lays out again until they settle, and the frame drawn shows
  // labels fitted to it, not to the plot of the layout before.
  void updateLayout() override;
  // The columns' and rows' labels the plot as laid out allows, none wider than `maxWidth` px
  // a column nor closer than every `minEvery` rows; whether they changed.
  bool fitLabels(int maxWidth = std::numeric_limits<int>::max(), int minEvery = 1);
  void fitByteLabels();  // each byte label's longest wording its bar's filled part fits
  void styleByteLabels(const QPalette& palette);  // their font and colours

  // The bytes on an activations or recomputed bar (stored against recomputed is what
  // --recompute trades), longest wording first, over [x0, x1) of row `row`.
  struct ByteLabel {
    QCPItemText* item = nullptr;
    QStringList texts;
    double x0 = 0, x1 = 0;
    int row = 0;
  };
  std::vector<ByteLabel> m_byteLabels;

  // What can be said under a rank's column.
  struct Column {
    int rank = 0;
    QString groups;       // "dp 4 · tp 2"
    QStringList traffic;  // bytes sent last step, to whom
  };
  std::vector<Column> m_columns;
  QStringList m_columnLabels, m_rowLabels;  // the labels fitted last, as the tickers hold them
  int m_columnWidth = 0;                    // px a column, and every how many rows a row is
  int m_rowsEvery = 1;                      // named, that fitted them
  std::array<RectLayer*, kHoldingKinds> m_layers{};  // by HoldingKind
  bool m_master = false;              // mixed precision: layer rows have a master copy's bar
  RectLayer* m_outlines = nullptr;    // the whole of each row, per rank
  RectLayer* m_recomputed = nullptr;  // the "recomputed" row's parts, hatched
  RectLayer* m_inFlight = nullptr;    // cp: the ring's K/V blocks, cross-hatched
  std::vector<Cell> m_cells;
  QStringList m_rows;
  std::vector<RankHoldings> m_holdings;  // as given, for the CSV
};

}  // namespace paralab
