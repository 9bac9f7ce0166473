// FlightRecorderChart: a hung run's flight recorders as a table, a row per rank and a column per
// recent collective (its number on its group, operation, group), each cell the rank's state in it
// (done, waiting, never issued); the cell where the ranks diverge (a rank that never issued the
// collective the others wait in) is framed in red. Fills from Snapshot::flight when the watchdog
// ends a run (`--hang 2@5`); empty otherwise. See tests/app/tst_window_failures.cpp.
#pragma once
#include <string>
#include <vector>

#include "charts/chart.h"
#include "comm/flight_record.h"
#include "session.h"

namespace paralab {

class FlightRecorderChart : public Chart {
  Q_OBJECT
 public:
  static constexpr int kColumns = 6;  // the newest collectives shown (the divergent one among them)

  // What a rank's cell says of a column's collective.
  enum class CellState { Done, Waiting, NeverIssued, NotInGroup };
  // A column: one collective, named by its group and its number there (the same on every rank).
  struct Column {
    std::string group, op, purpose;
    int64_t seq = 0, step = 0, bytes = 0;
  };

  explicit FlightRecorderChart(QWidget* parent = nullptr);
  void showHistory(const MetricHistory& history) override;  // an empty history clears
  void showSnapshot(const Snapshot& snapshot);              // its flight report; none: as it is
  void showFlight(const FlightReport& report);
  void clear();
  void writeCsv(QTextStream& out) const override;
  int pointCount() const override;
  void applyLook(const QPalette& palette) override;  // the cells' words too

  const std::vector<Column>& columns() const { return m_columns; }
  const std::vector<int>& rowRanks() const { return m_rowRanks; }  // world rank of each row
  CellState cell(int row, int column) const { return m_cells[size_t(row)][size_t(column)]; }
  // The marked cells, (row, column): ranks that never issued the collective the others wait in.
  const std::vector<std::pair<int, int>>& marked() const { return m_marked; }
  const HangDiagnosis& diagnosis() const { return m_report.diagnosis; }

 private:
  void fitCellLabels();  // after each layout: each cell's word where its cell holds it

  FlightReport m_report;
  std::vector<Column> m_columns;
  std::vector<int> m_rowRanks;
  std::vector<std::vector<CellState>> m_cells;  // [row][column]
  std::vector<std::pair<int, int>> m_marked;
  QStringList m_headers;  // the columns' headers as worded last (fitCellLabels)
  QList<QCPItemText*> m_words;
  QList<QCPItemRect*> m_rects;
  QCPTextElement* m_line = nullptr;  // the diagnosis in words, under the table
};

const char* cellStateName(FlightRecorderChart::CellState s);  // "done", "waiting", ...

}  // namespace paralab
