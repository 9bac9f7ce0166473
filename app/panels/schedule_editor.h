// ScheduleEditor: the learner's own pipeline schedule as a grid (rows the ranks, columns time
// slots, cells F/B/W of a micro-batch), checked as it is edited by the engine's checker
// (parallel/pipeline/schedule_file.h) and saved to the file --schedule runs. It opens from
// Run settings when Schedule is "Custom (grid)"; Start runs it.
// See tests/app/tst_schedule_editor.cpp.
#pragma once
#include <QDialog>

#include "parallel/pipeline/schedule_file.h"

class QButtonGroup;
class QComboBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace paralab {

class ConfigPanel;

class ScheduleEditor : public QDialog {
  Q_OBJECT
 public:
  // Adds "Custom (grid)" to the panel's Schedule choices and an "Edit grid…" button under
  // them; choosing it opens the editor, which follows the panel's pp, micro-batches and
  // virtual stages.
  static ScheduleEditor* attach(ConfigPanel* panel);

  explicit ScheduleEditor(QWidget* parent = nullptr);
  // The file the grid is kept in: --schedule's value while the custom schedule is chosen.
  static QString path();

  void setShape(int stages, int micros, int chunks);
  PipeShape shape() const { return m_shape; }
  ScheduleGrid grid() const;
  void setGrid(const ScheduleGrid& grid);
  // A built-in schedule's computes as the grid (1F1B or GPipe), a start to edit from.
  void fillFrom(PipeSchedule s);
  // The current tool, 'F', 'B', 'W' or 0 (erase), and its micro-batch and chunk.
  void setTool(char kind, int micro, int chunk = 0);
  // The tool applied at a cell, as a click does: places the action (replacing any), or erases.
  void placeAt(int rank, int slot);
  // The checker's verdict under the grid: its line when refused, the peak per rank when not.
  QString verdict() const;
  bool valid() const { return m_check.ok(); }
  const ScheduleCheck& check() const { return m_check; }
  // Whether the settings run this grid (Schedule is "Custom (grid)"): only then is it the plan.
  void setChosen(bool chosen);

 signals:
  // The grid as written, on every edit (empty while the custom schedule is not chosen): the
  // timeline's plan.
  void planChanged(const ScheduleGrid& grid, int chunks);

 private:
  void edited();  // re-check, show, save
  void ensureColumns(int used);
  void showCell(int rank, int slot, const ScheduleCell& c);
  void load();
  void saveAs();

  PipeShape m_shape{.stages = 2, .micros = 4};
  ScheduleCheck m_check;
  QTableWidget* m_table;
  QButtonGroup* m_tools;
  QSpinBox* m_micro;
  QSpinBox* m_chunk;
  QLabel* m_verdict;
  bool m_filling = false;  // setGrid's own edits are one change
  bool m_chosen = false;
};

}  // namespace paralab
