// FlightRecorderChart: the recorders of a hung run as a rank × collective table
// (flight_recorder_chart.h); columns are collectives by group and number, merged in the order the
// ranks issued them. See tests/app/tst_window_failures.cpp.
#include "charts/flight_recorder_chart.h"

#include <algorithm>

#include "charts/byte_units.h"
#include "charts/chart_colors.h"
#include "charts/metric_history.h"

namespace paralab {

const char* cellStateName(FlightRecorderChart::CellState s) {
  switch (s) {
    case FlightRecorderChart::CellState::Done:
      return "done";
    case FlightRecorderChart::CellState::Waiting:
      return "waiting";
    case FlightRecorderChart::CellState::NeverIssued:
      return "never issued";
    case FlightRecorderChart::CellState::NotInGroup:
      return "not in group";
  }
  return "";
}

namespace {

using CellState = FlightRecorderChart::CellState;

const FlightEntry* entryOf(const RankFlight& r, const std::string& group, int64_t seq) {
  for (const FlightEntry& e : r.entries)
    if (e.seq == seq && e.group == group) return &e;
  return nullptr;
}

// Whether world rank `rank` belongs to a group named `group`, by any rank's record of it.
bool inGroup(const std::vector<RankFlight>& ranks, int rank, const std::string& group) {
  for (const RankFlight& r : ranks)
    for (const auto& [name, members] : r.groups)
      if (name == group && (r.rank == rank || std::count(members.begin(), members.end(), rank)))
        return true;
  return false;
}

QColor fillOf(CellState s) {
  switch (s) {
    case CellState::Done:
      return chartcolors::faint(chartcolors::kGreen);
    case CellState::Waiting:
      return chartcolors::faint(chartcolors::kOrange);
    case CellState::NeverIssued:
      return chartcolors::faint(chartcolors::kRed);
    case CellState::NotInGroup:
      break;
  }
  return Qt::transparent;
}

}  // namespace

FlightRecorderChart::FlightRecorderChart(QWidget* parent)
    : Chart("flight_recorder", tr("Flight recorder of the hung run"), parent) {
  setTabTitle(tr("Recorder"));
  setKeyColumn("rank");
  setAxisLabel(xAxis, tr("collective: operation #number on its group, oldest to newest"),
               tr("collective"));
  setAxisLabel(yAxis, tr("rank"));
  yAxis->setRangeReversed(true);  // rank 0 on top, as a table is read
  for (QCPAxis* a : {xAxis, yAxis}) {
    a->grid()->setVisible(false);
    a->setSubTicks(false);
    a->setTickLength(0, 0);
  }
  legend->setVisible(false);
  m_line = new QCPTextElement(this, QString());
  plotLayout()->insertRow(plotLayout()->rowCount());
  plotLayout()->addElement(plotLayout()->rowCount() - 1, 0, m_line);
  connect(this, &QCustomPlot::afterLayout, this, &FlightRecorderChart::fitCellLabels);
  setToolTip(
      tr("<p>When the watchdog ends a hung run, each rank's flight recorder: its last "
         "collectives, each numbered on its group (the same number on every rank of the "
         "group). <b>done</b>: the rank finished it; <b>waiting</b>: it issued it and waits "
         "for the others; <b>never issued</b>: it is in the group but never called it. The "
         "red frame is where the ranks diverge: the rank that the others wait for.</p>"
         "<p>Try it: <tt>--hang 2@5</tt> on 4 ranks (lessons/16-when-ranks-fail).</p>"));
  applyLook(palette());
  clear();
}

void FlightRecorderChart::applyLook(const QPalette& pal) {
  Chart::applyLook(pal);
  if (!m_line) return;  // Chart's constructor: the items come later
  m_line->setTextColor(pal.color(QPalette::WindowText));
  m_line->setFont(xAxis->tickLabelFont());
  for (QCPItemText* t : m_words) {
    t->setColor(pal.color(QPalette::WindowText));
    t->setFont(xAxis->tickLabelFont());
  }
}

void FlightRecorderChart::clear() {
  for (QCPItemText* t : m_words) removeItem(t);
  for (QCPItemRect* r : m_rects) removeItem(r);
  m_words.clear();
  m_rects.clear();
  m_report = {};
  m_columns.clear();
  m_rowRanks.clear();
  m_cells.clear();
  m_marked.clear();
  m_headers.clear();
  m_line->setText(QString());
  m_line->setVisible(false);
  xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  showEmpty({-0.5, 0.5}, {-0.5, 0.5});
  setPlaceholderText(
      tr("No hang: this table fills when the watchdog ends a hung run (try --hang 2@5)"));
}

void FlightRecorderChart::showHistory(const MetricHistory& history) {
  if (history.isEmpty()) clear();
}

void FlightRecorderChart::showSnapshot(const Snapshot& s) {
  if (s.flight) showFlight(*s.flight);
}

void FlightRecorderChart::showFlight(const FlightReport& report) {
  clear();
  m_report = report;
  std::sort(m_report.ranks.begin(), m_report.ranks.end(),
            [](const RankFlight& a, const RankFlight& b) { return a.rank < b.rank; });
  // Columns in the order the ranks issued them: each rank's collectives go in after the last of
  // its own already placed, so a collective one rank alone issued keeps its place.
  std::vector<Column> all;
  auto find = [&all](const std::string& group, int64_t seq) {
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].seq == seq && all[i].group == group) return int(i);
    return -1;
  };
  for (const RankFlight& r : m_report.ranks) {
    int after = -1;
    for (const FlightEntry& e : r.entries) {
      int i = find(e.group, e.seq);
      if (i < 0) {
        i = after + 1;
        all.insert(all.begin() + i, Column{e.group, e.op, e.purpose, e.seq, e.step, e.bytes});
      }
      after = std::max(after, i);
    }
  }
  const HangDiagnosis& d = m_report.diagnosis;
  const int divergent = d.found ? find(d.group, d.seq) : -1;
  // The newest kColumns, and the divergent collective among them with what followed it.
  int first = std::max(0, int(all.size()) - kColumns);
  if (divergent >= 0 && divergent < first) first = std::max(0, divergent - kColumns / 2);
  const int count = std::min(kColumns, int(all.size()) - first);
  m_columns.assign(all.begin() + first, all.begin() + first + count);

  for (const RankFlight& r : m_report.ranks) {
    const int row = int(m_rowRanks.size());
    m_rowRanks.push_back(r.rank);
    std::vector<CellState> cells;
    for (int c = 0; c < count; ++c) {
      const Column& col = m_columns[size_t(c)];
      const FlightEntry* e = entryOf(r, col.group, col.seq);
      cells.push_back(e ? (e->done ? CellState::Done : CellState::Waiting)
                      : inGroup(m_report.ranks, r.rank, col.group) ? CellState::NeverIssued
                                                                   : CellState::NotInGroup);
      const bool mark = d.found && col.group == d.group && col.seq == d.seq &&
                        std::count(d.missing.begin(), d.missing.end(), r.rank);
      if (mark) m_marked.emplace_back(row, c);
    }
    m_cells.push_back(std::move(cells));
  }
  const int rows = int(m_rowRanks.size());
  if (rows == 0 || count == 0) {
    setPlaceholderText(tr("The hung run's recorders hold no collective"));
    replot(rpQueuedReplot);
    return;
  }

  auto rowTicker = QSharedPointer<QCPAxisTickerText>::create();
  for (int row = 0; row < rows; ++row)
    rowTicker->addTick(row, tr("rank %1").arg(m_rowRanks[size_t(row)]));
  yAxis->setTicker(rowTicker);
  for (int row = 0; row < rows; ++row)
    for (int c = 0; c < count; ++c) {
      const CellState s = m_cells[size_t(row)][size_t(c)];
      if (s == CellState::NotInGroup) continue;
      const bool mark =
          std::find(m_marked.begin(), m_marked.end(), std::pair(row, c)) != m_marked.end();
      auto* rect = new QCPItemRect(this);
      rect->topLeft->setCoords(c - 0.46, row - 0.44);
      rect->bottomRight->setCoords(c + 0.46, row + 0.44);
      rect->setBrush(fillOf(s));
      rect->setPen(mark ? QPen(chartcolors::kRed, 3) : QPen(fillOf(s).darker(110), 1));
      rect->setClipToAxisRect(true);
      m_rects.push_back(rect);
      auto* word = new QCPItemText(this);
      word->position->setCoords(c, row);
      word->setText(tr(cellStateName(s)));
      word->setProperty("full", word->text());
      word->setFont(xAxis->tickLabelFont());
      word->setColor(palette().color(QPalette::WindowText));
      word->setClipToAxisRect(true);
      m_words.push_back(word);
    }
  xAxis->setRange(-0.5, count - 0.5);
  yAxis->setRange(-0.5, rows - 0.5);
  if (d.found) {
    // Who waits, then who never came: the line's two halves on two lines.
    m_line->setText(QString::fromStdString(d.line).replace("; ", ";\n"));
    m_line->setVisible(true);
  }
  setPlaceholderVisible(false);
  fitCellLabels();
  replot(rpQueuedReplot);
}

// A column's header in full ("allreduce #6 / dp, step 5") where the column is wide enough, else
// "#6"; a cell's word where it fits, else its first letters' worth of nothing (the colour says).
void FlightRecorderChart::fitCellLabels() {
  if (m_columns.empty()) return;
  const QFontMetrics fm(xAxis->tickLabelFont());
  const double cellPx = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0)) - 6;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  QStringList headers;
  for (size_t c = 0; c < m_columns.size(); ++c) {
    const Column& col = m_columns[c];
    const QString op = QString::fromStdString(col.op), group = QString::fromStdString(col.group);
    const QString full = tr("%1 #%2\n%3, step %4").arg(op).arg(col.seq).arg(group).arg(col.step);
    const QString mid = tr("%1\n#%2").arg(op).arg(col.seq);
    const int fullPx = std::max(fm.horizontalAdvance(full.section('\n', 0, 0)),
                                fm.horizontalAdvance(full.section('\n', 1, 1)));
    headers << (fullPx <= cellPx                     ? full
                : fm.horizontalAdvance(op) <= cellPx ? mid
                                                     : tr("#%1").arg(col.seq));
    ticker->addTick(double(c), headers.back());
  }
  // The axis took its ticks before this layout's end: a new wording shows at the next replot.
  if (headers != m_headers) {
    m_headers = headers;
    xAxis->setTicker(ticker);
    replot(rpQueuedReplot);
  }
  for (QCPItemText* word : m_words) {
    const QString full = word->property("full").toString();
    const QString two = QString(full).replace(' ', '\n');
    const int twoPx = fm.horizontalAdvance(full.section(' ', 0, 0));
    word->setText(fm.horizontalAdvance(full) <= cellPx ? full : two);
    word->setVisible(twoPx <= cellPx);
  }
}

int FlightRecorderChart::pointCount() const {
  int n = 0;
  for (const auto& row : m_cells)
    for (CellState s : row) n += s == CellState::Done || s == CellState::Waiting;
  return n;
}

// One row per cell: the column's collective as the recorders name it and the rank's state in it
// ("done" and "issued" as in the failure line's JSON, else "never issued" or "not in group").
void FlightRecorderChart::writeCsv(QTextStream& out) const {
  if (m_report.diagnosis.found)
    out << "# " << QString::fromStdString(m_report.diagnosis.line) << '\n';
  out << "rank,column,seq,op,group,step,bytes,purpose,state,divergent\n";
  for (size_t row = 0; row < m_rowRanks.size(); ++row)
    for (size_t c = 0; c < m_columns.size(); ++c) {
      const Column& col = m_columns[c];
      const CellState s = m_cells[row][c];
      const bool mark = std::find(m_marked.begin(), m_marked.end(), std::pair(int(row), int(c))) !=
                        m_marked.end();
      out << m_rowRanks[row] << ',' << c << ',' << col.seq << ',' << col.op.c_str() << ','
          << col.group.c_str() << ',' << col.step << ',' << col.bytes << ",\""
          << QString::fromStdString(col.purpose).replace('"', "\"\"") << "\","
          << (s == CellState::Waiting ? "issued" : cellStateName(s)) << ',' << (mark ? 1 : 0)
          << '\n';
    }
}

}  // namespace paralab
