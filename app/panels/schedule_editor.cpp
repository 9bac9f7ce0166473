// ScheduleEditor: the learner's pipeline schedule as an editable grid (see schedule_editor.h).
// The grid is the file's table; the engine checks it (checkSchedule) on every edit, and the
// run reads the same file. See tests/app/tst_schedule_editor.cpp.
#include "panels/schedule_editor.h"

#include <QAbstractButton>
#include <QButtonGroup>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "charts/chart_colors.h"
#include "panels/config_panel.h"

namespace paralab {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QColor cellColor(char kind) {
  switch (kind) {
    case 'F':
      return chartcolors::spanColor(SpanKind::Forward).lighter(150);
    case 'W':
      return chartcolors::kPurple.lighter(150);
    default:
      return chartcolors::spanColor(SpanKind::Backward).lighter(140);
  }
}

}  // namespace

QString ScheduleEditor::path() {
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  QDir().mkpath(dir);
  return dir + "/custom-schedule.csv";
}

ScheduleEditor::ScheduleEditor(QWidget* parent) : QDialog(parent) {
  setObjectName("scheduleEditor");
  setWindowTitle(tr("Custom pipeline schedule"));
  auto* layout = new QVBoxLayout(this);

  // The tools: an action and its micro-batch (and chunk); a click places it.
  auto* tools = new QHBoxLayout;
  m_tools = new QButtonGroup(this);
  const std::pair<char, QString> kinds[] = {{'F', tr("F forward")},
                                            {'B', tr("B backward")},
                                            {'W', tr("W weight grad")},
                                            {0, tr("Erase")}};
  for (const auto& [kind, label] : kinds) {
    auto* b = new QToolButton;
    b->setText(label);
    b->setCheckable(true);
    b->setObjectName(kind ? QString("tool%1").arg(kind) : QString("toolErase"));
    m_tools->addButton(b, kind);
    tools->addWidget(b);
  }
  m_tools->button('F')->setChecked(true);
  tools->addSpacing(8);
  tools->addWidget(new QLabel(tr("micro-batch")));
  m_micro = new QSpinBox;
  m_micro->setObjectName("scheduleMicro");
  tools->addWidget(m_micro);
  auto* chunkLabel = new QLabel(tr("chunk"));
  m_chunk = new QSpinBox;
  m_chunk->setObjectName("scheduleChunk");
  tools->addWidget(chunkLabel);
  tools->addWidget(m_chunk);
  tools->addStretch(1);
  const auto button = [&](const QString& text, const QString& tip, auto slot) {
    auto* b = new QPushButton(text);
    b->setToolTip(tip);
    b->setAutoDefault(false);
    connect(b, &QPushButton::clicked, this, slot);
    tools->addWidget(b);
  };
  button(tr("1F1B"), tr("Start from 1F1B's order"), [this] { fillFrom(PipeSchedule::OneFOneB); });
  button(tr("GPipe"), tr("Start from GPipe's order"), [this] { fillFrom(PipeSchedule::GPipe); });
  button(tr("Clear"), tr("An empty grid"), [this] { setGrid({}); });
  button(tr("Load…"), tr("Read a schedule file (CSV)"), [this] { load(); });
  button(tr("Save as…"), tr("Write the grid as a schedule file (CSV) for paralab-run --schedule"),
         [this] { saveAs(); });
  layout->addLayout(tools);

  auto* hint = new QLabel(
      tr("Click a cell to place the tool's action (the micro-batch then advances), drag a cell "
         "to move it, Delete erases. A B followed on its rank by a W of the same micro-batch is "
         "the input-gradient half of a split backward; alone it is the whole backward. Sends "
         "and receives are derived."));
  hint->setWordWrap(true);
  layout->addWidget(hint);

  m_table = new QTableWidget(this);
  m_table->setObjectName("scheduleGrid");
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setDragDropMode(QAbstractItemView::InternalMove);
  m_table->setDragDropOverwriteMode(true);
  m_table->setDefaultDropAction(Qt::MoveAction);
  m_table->horizontalHeader()->setDefaultSectionSize(44);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  m_table->verticalHeader()->setDefaultSectionSize(30);
  // The selected cell outlined, its action's colour kept.
  m_table->setStyleSheet(
      "QTableWidget { selection-background-color: transparent; selection-color: black; }"
      "QTableWidget::item:selected { border: 2px solid #222; }");
  layout->addWidget(m_table);
  connect(m_table, &QTableWidget::cellClicked, this, &ScheduleEditor::placeAt);
  connect(m_table, &QTableWidget::itemChanged, this, [this] {
    if (!m_filling) edited();  // a cell dragged to another
  });
  auto* erase = new QShortcut(QKeySequence::Delete, m_table);
  connect(erase, &QShortcut::activated, this, [this] {
    for (QTableWidgetItem* item : m_table->selectedItems())
      delete m_table->takeItem(item->row(), item->column());
    edited();
  });

  m_verdict = new QLabel;
  m_verdict->setObjectName("scheduleVerdict");
  m_verdict->setWordWrap(true);
  m_verdict->setTextFormat(Qt::PlainText);
  m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_verdict);

  connect(m_tools, &QButtonGroup::idClicked, this, [this] { m_micro->setFocus(); });
  chunkLabel->setVisible(false);
  m_chunk->setVisible(false);
  m_chunk->setProperty("label", QVariant::fromValue<QObject*>(chunkLabel));
  resize(900, 380);
  setShape(2, 4, 1);
  // The file from the last session, where there is one; else 1F1B to start from.
  QFile f(path());
  std::string why;
  const auto kept = f.open(QIODevice::ReadOnly)
                        ? parseScheduleCsv(f.readAll().toStdString(), m_shape.stages, &why)
                        : std::nullopt;
  if (kept && !kept->empty())
    setGrid(*kept);
  else
    fillFrom(PipeSchedule::OneFOneB);
}

// [SECTION] The grid

void ScheduleEditor::setShape(int stages, int micros, int chunks) {
  stages = std::max(2, stages), micros = std::max(1, micros), chunks = std::max(1, chunks);
  const bool same =
      stages == m_shape.stages && micros == m_shape.micros && chunks == m_shape.chunks;
  const ScheduleGrid g = grid();
  m_shape = PipeShape{.stages = stages, .micros = micros, .chunks = chunks};
  m_micro->setRange(0, micros - 1);
  m_chunk->setRange(0, chunks - 1);
  m_chunk->setVisible(chunks > 1);
  if (auto* l = qobject_cast<QWidget*>(m_chunk->property("label").value<QObject*>()))
    l->setVisible(chunks > 1);
  if (same && m_table->rowCount() == stages) return;
  setGrid(g);  // the rows of the new pipeline, the cells kept where they fit
}

ScheduleGrid ScheduleEditor::grid() const {
  ScheduleGrid g(static_cast<size_t>(m_table->rowCount()));
  for (int r = 0; r < m_table->rowCount(); ++r) {
    auto& row = g[size_t(r)];
    for (int j = 0; j < m_table->columnCount(); ++j) {
      const QTableWidgetItem* item = m_table->item(r, j);
      std::string why;
      const auto c = item ? parseScheduleCell(item->text().toStdString(), r, m_shape.stages, &why)
                          : std::nullopt;
      row.push_back(c.value_or(ScheduleCell{}));
    }
    while (!row.empty() && row.back().empty()) row.pop_back();
  }
  return g;
}

void ScheduleEditor::ensureColumns(int used) {
  const int want =
      std::max(used + 3, 2 * m_shape.micros * m_shape.chunks + 2 * (m_shape.stages - 1));
  if (m_table->columnCount() >= want) return;
  const int from = m_table->columnCount();
  m_table->setColumnCount(want);
  for (int j = from; j < want; ++j)
    m_table->setHorizontalHeaderItem(j, new QTableWidgetItem(QString::number(j + 1)));
}

void ScheduleEditor::showCell(int rank, int slot, const ScheduleCell& c) {
  if (c.empty()) {
    delete m_table->takeItem(rank, slot);
    return;
  }
  auto* item = new QTableWidgetItem(qs(scheduleCellText(c, m_shape.chunks)));
  item->setTextAlignment(Qt::AlignCenter);
  item->setBackground(cellColor(c.kind));
  item->setForeground(QColor(Qt::black));
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled |
                 Qt::ItemIsDropEnabled);
  m_table->setItem(rank, slot, item);
}

void ScheduleEditor::setGrid(const ScheduleGrid& g) {
  m_filling = true;
  m_table->clearContents();
  m_table->setRowCount(m_shape.stages);
  for (int r = 0; r < m_shape.stages; ++r)
    m_table->setVerticalHeaderItem(r, new QTableWidgetItem(tr("rank %1").arg(r)));
  int used = 0;
  for (size_t r = 0; r < g.size() && int(r) < m_shape.stages; ++r)
    used = std::max(used, int(g[r].size()));
  ensureColumns(used);
  for (size_t r = 0; r < g.size() && int(r) < m_shape.stages; ++r)
    for (size_t j = 0; j < g[r].size(); ++j) showCell(int(r), int(j), g[r][j]);
  // As tall as its ranks (a scroll bar past 12 of them), the dialog no taller than that.
  const int rows = std::min(m_shape.stages, 12);
  m_table->setFixedHeight(m_table->horizontalHeader()->sizeHint().height() +
                          rows * m_table->verticalHeader()->defaultSectionSize() +
                          m_table->horizontalScrollBar()->sizeHint().height() +
                          2 * m_table->frameWidth() + 2);
  resize(width(), sizeHint().height());
  m_filling = false;
  edited();
}

void ScheduleEditor::fillFrom(PipeSchedule s) {
  ScheduleGrid g;
  for (const auto& steps : pipelinePlan(s, m_shape.stages, m_shape.micros)) {
    auto& row = g.emplace_back();
    for (const PipeStep& p : steps)
      if (p.action == PipeAction::Forward || p.action == PipeAction::Backward)
        row.push_back({p.action == PipeAction::Forward ? 'F' : 'B', p.micro, p.chunk});
  }
  setGrid(g);
}

void ScheduleEditor::setTool(char kind, int micro, int chunk) {
  m_tools->button(kind)->setChecked(true);
  m_micro->setValue(micro);
  m_chunk->setValue(chunk);
}

void ScheduleEditor::placeAt(int rank, int slot) {
  const char kind = char(m_tools->checkedId());
  m_filling = true;
  showCell(rank, slot,
           kind ? ScheduleCell{kind, m_micro->value(), m_chunk->value()} : ScheduleCell{});
  ensureColumns(slot + 1);
  m_filling = false;
  if (kind) m_micro->setValue((m_micro->value() + 1) % m_shape.micros);
  edited();
}

// [SECTION] Checked, shown, saved

void ScheduleEditor::edited() {
  const ScheduleGrid g = grid();
  m_check = checkSchedule(g, m_shape);
  QString text;
  if (m_check.fault) {
    text = qs(*m_check.fault);
  } else {
    QStringList peak, bubble;
    for (int p : m_check.peak) peak << QString::number(p);
    for (double b : m_check.bubble) bubble << QString("%1 %").arg(qRound(100 * b));
    // The checker's times: a forward 1, a whole backward 2, split into B 1 and W 1.
    const QString times = m_check.splitsBackward ? tr("F 1, B 1, W 1") : tr("F 1, backward 2");
    text = tr("Runs. Peak micro-batches in flight per rank: %1. Idle share per rank, with %2: "
              "%3.")
               .arg(peak.join(" · "), times, bubble.join(" · "));
  }
  m_verdict->setText(text);
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  m_verdict->setStyleSheet(m_check.fault ? (dark ? "color: #ff8a80;" : "color: #c62828;") : "");
  if (QFile f(path()); f.open(QIODevice::WriteOnly | QIODevice::Truncate))
    f.write(scheduleCsv(g, m_shape.chunks).c_str());  // closed here, before it is read
  emit planChanged(m_chosen ? g : ScheduleGrid{}, m_shape.chunks);
}

void ScheduleEditor::setChosen(bool chosen) {
  if (chosen == m_chosen) return;
  m_chosen = chosen;
  emit planChanged(m_chosen ? grid() : ScheduleGrid{}, m_shape.chunks);
}

QString ScheduleEditor::verdict() const { return m_verdict->text(); }

void ScheduleEditor::load() {
  const QString file = QFileDialog::getOpenFileName(this, tr("Load a schedule"), QString(),
                                                    tr("Schedules (*.csv);;All files (*)"));
  if (file.isEmpty()) return;
  QFile f(file);
  std::string why = "cannot be read";
  const auto g = f.open(QIODevice::ReadOnly)
                     ? parseScheduleCsv(f.readAll().toStdString(), m_shape.stages, &why)
                     : std::nullopt;
  if (!g) {
    m_verdict->setText(tr("%1: %2").arg(file, qs(why)));
    return;
  }
  setGrid(*g);
}

void ScheduleEditor::saveAs() {
  const QString file = QFileDialog::getSaveFileName(this, tr("Save the schedule"), "schedule.csv",
                                                    tr("Schedules (*.csv)"));
  if (file.isEmpty()) return;
  QFile f(file);
  if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
    f.write(scheduleCsv(grid(), m_shape.chunks).c_str());
}

// [SECTION] In Run settings

ScheduleEditor* ScheduleEditor::attach(ConfigPanel* panel) {
  auto* box = panel->findChild<QComboBox*>("schedule");
  auto* editor = new ScheduleEditor(panel);
  const QString file = path();
  box->addItem(tr("Custom (grid)"), file);
  box->setItemData(box->count() - 1,
                   tr("Your own schedule, written as a grid of F, B and W per rank"),
                   Qt::ToolTipRole);
  auto* edit = new QPushButton(tr("Edit grid…"));
  edit->setObjectName("editSchedule");
  connect(edit, &QPushButton::clicked, editor, [editor] {
    editor->show();
    editor->raise();
  });
  QFormLayout* form = nullptr;
  for (QWidget* w = box->parentWidget(); w && !form; w = w->parentWidget())
    form = qobject_cast<QFormLayout*>(w->layout());
  int row = -1;
  QFormLayout::ItemRole role;
  if (form) form->getWidgetPosition(box, &row, &role);
  if (row >= 0) form->insertRow(row + 1, QString(), edit);
  const auto follow = [panel, box, edit, form, editor, file] {
    const RunConfig c = panel->config();
    const bool custom = box->currentData().toString() == file;
    if (form) form->setRowVisible(edit, custom && box->isEnabled());
    editor->setShape(c.pp, c.microbatches,
                     pipelineChunks(file.toStdString(), c.pp, c.virtualStages));
    editor->setChosen(custom);
  };
  QObject::connect(panel, &ConfigPanel::configChanged, editor, follow);
  QObject::connect(box, &QComboBox::activated, editor, [box, editor, file] {
    if (box->currentData().toString() != file) return;
    editor->show();
    editor->raise();
  });
  // An edit changes the file the settings name: they are checked again (Start, the note).
  QObject::connect(editor, &ScheduleEditor::planChanged, panel,
                   [panel, editor](const ScheduleGrid& plan) {
                     if (!plan.empty() || editor->grid().empty()) panel->refresh();
                   });
  follow();
  return editor;
}

}  // namespace paralab
