// Chart: shared look, CSV writing and export hooks of every ParaLab plot (see chart.h).
// See tests/app/tst_app.cpp (exportFormats) and the screenshots it saves.
#include "charts/chart.h"

#include <QMenu>
#include <cmath>
#include <map>
#include <optional>

#include "charts/change_markers.h"
#include "charts/metric_history.h"

namespace paralab {

Chart::Chart(const QString& stem, const QString& title, QWidget* parent)
    : QCustomPlot(parent), m_stem(stem), m_title(title) {
  setObjectName(stem + "Chart");
  setMinimumSize(320, 200);
  setAntialiasedElements(QCP::aeAll);
  setNoAntialiasingOnDrag(true);

  // Rows: title, [subtitle while there is one], legend, plot.
  plotLayout()->insertRow(0);
  m_titleElement = new QCPTextElement(this, title);
  m_subtitleElement = new QCPTextElement(this, QString());
  plotLayout()->addElement(0, 0, m_titleElement);
  // m_subtitleElement joins the layout when it has text (the plot, its QObject parent, owns it).
  plotLayout()->setRowSpacing(0);
  m_titleElement->setMargins(QMargins(0, 8, 0, 0));
  m_subtitleElement->setMargins(QMargins(0, 2, 0, 2));

  for (QCPAxis* axis : {xAxis, yAxis, yAxis2}) styleAxis(axis);
  // Wide enough for typical tick labels, so stacked charts line their step axes up.
  axisRect()->setMinimumMargins(QMargins(84, 8, 68, 8));

  // The legend sits in its own row between the titles and the plot: inside the plot it would
  // hide data wherever the curves happen to go (accuracy climbs into the top-right corner).
  legend->setVisible(true);
  axisRect()->insetLayout()->take(legend);
  // Centred at its natural width: empty cells either side take the rest of the row.
  plotLayout()->insertRow(1);
  auto* legendRow = new QCPLayoutGrid;
  plotLayout()->addElement(1, 0, legendRow);
  plotLayout()->setRowStretchFactor(1, 0.001);
  legendRow->addElement(0, 0, new QCPLayoutElement(this));
  legendRow->addElement(0, 1, legend);
  legendRow->addElement(0, 2, new QCPLayoutElement(this));
  legendRow->setColumnStretchFactors({1, 0.001, 1});
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setColumnSpacing(24);
  legend->setMargins(QMargins(8, 2, 8, 2));
  legend->setMinimumMargins(QMargins(0, 0, 0, 0));
  // Tick labels with thousands separators: 48,000 samples/s reads faster than 48000.
  QLocale numbers;
  numbers.setNumberOptions(QLocale::DefaultNumberOptions);
  setLocale(numbers);

  // Each axis's label fits its axis as laid out (setAxisLabel).
  connect(this, &QCustomPlot::afterLayout, this, &Chart::fitAxisLabels);

  m_placeholder = new QCPItemText(this);
  m_placeholder->position->setType(QCPItemPosition::ptAxisRectRatio);
  m_placeholder->position->setCoords(0.5, 0.5);
  m_placeholderText = tr("No data yet: press Start (F5) to train");
  m_placeholder->setText(m_placeholderText);

  applyLook(palette());
}

Chart::~Chart() = default;

// A hidden layout element still takes its row's height, so the subtitle leaves the layout
// while it is empty.
void Chart::setSubtitle(const QString& text) {
  m_subtitle = text;
  fitSubtitle(width());
  const bool shown = m_subtitleElement->layout() != nullptr;
  if (!text.isEmpty() && !shown) {
    plotLayout()->insertRow(1);
    plotLayout()->addElement(1, 0, m_subtitleElement);
    plotLayout()->setRowStretchFactor(1, 0.001);
  } else if (text.isEmpty() && shown) {
    plotLayout()->take(m_subtitleElement);
    plotLayout()->simplify();
  }
  requestRedraw();
}

void Chart::requestRedraw() {
  if (m_redrawRequest)
    m_redrawRequest();
  else
    replot(rpQueuedReplot);
}

namespace {

// `text` in lines of at most `room` px: broken at the coarsest separator that makes it fit
// (" · " between the parts of a run's description, then ", ", then spaces; a comma stays at
// the end of its line), a single word wider than a line elided in its middle.
QStringList wrapText(const QString& text, const QFontMetrics& fm, int room, int level = 0) {
  static const QString seps[] = {QStringLiteral(" · "), QStringLiteral(", "), QStringLiteral(" ")};
  if (fm.horizontalAdvance(text) <= room) return {text};
  if (level == 3) return {fm.elidedText(text, Qt::ElideMiddle, room)};
  const QString& sep = seps[level];
  const QString keep = sep.trimmed() == "," ? QStringLiteral(",") : QString();
  QStringList lines;
  QString line;
  for (const QString& part : text.split(sep, Qt::SkipEmptyParts)) {
    if (line.isEmpty() || fm.horizontalAdvance(line + sep + part + keep) > room) {
      if (!line.isEmpty()) lines << line + keep;
      QStringList sub = wrapText(part, fm, room, level + 1);
      line = sub.takeLast();
      lines += sub;
    } else {
      line += sep + part;
    }
  }
  if (!line.isEmpty()) lines << line;
  return lines;
}

}  // namespace

// Centred text wider than the chart would lose both ends, so it wraps to the chart's width;
// the placeholder likewise, to the plot's (the chart less its axes' least margins).
void Chart::fitSubtitle(int width) {
  width = width > 0 ? width : 800;
  const QString text =
      wrapText(m_subtitle, QFontMetrics(m_subtitleElement->font()), std::max(80, width - 16))
          .join('\n');
  const QMargins axes = axisRect()->minimumMargins();
  const QString placeholder = wrapText(m_placeholderText, QFontMetrics(m_placeholder->font()),
                                       std::max(80, width - axes.left() - axes.right() - 16))
                                  .join('\n');
  if (text == m_subtitleElement->text() && placeholder == m_placeholder->text()) return;
  m_subtitleElement->setText(text);
  m_placeholder->setText(placeholder);
  requestRedraw();
}

void Chart::styleAxis(QCPAxis* axis) {
  axis->setLabelPadding(8);
  axis->setTickLabelPadding(6);
  axis->setPadding(4);
  axis->grid()->setSubGridVisible(false);
}

void Chart::setAxisLabel(QCPAxis* axis, const QString& label, const QString& shortLabel) {
  m_axisLabels[axis] = {label, shortLabel.isEmpty() ? label : shortLabel};
  axis->setLabel(label);
  axis->setVisible(true);
  fitAxisLabels();
}

void Chart::fitAxisLabels() {
  bool changed = false;
  for (auto it = m_axisLabels.begin(); it != m_axisLabels.end(); ++it) {
    QCPAxis* axis = it.key();
    const int length = axis->orientation() == Qt::Vertical ? axis->axisRect()->height()
                                                           : axis->axisRect()->width();
    const int needs = QFontMetrics(axis->labelFont()).horizontalAdvance(it.value().first);
    const QString& label = length <= 0 || needs <= length ? it.value().first : it.value().second;
    if (axis->label() != label) axis->setLabel(label), changed = true;
  }
  if (changed) replot(rpQueuedReplot);
}

QCPGraph* Chart::addSeries(const QString& legendName, const QString& csvColumn, QCPAxis* valueAxis,
                           const QColor& color, double width) {
  QCPGraph* g = addGraph(xAxis, valueAxis);
  g->setName(legendName);
  QPen pen(color, width);
  pen.setCapStyle(Qt::RoundCap);
  pen.setJoinStyle(Qt::RoundJoin);
  g->setPen(pen);
  g->setAdaptiveSampling(true);
  m_columns.push_back(csvColumn);
  return g;
}

QPalette Chart::printLook() {
  QPalette pal;
  pal.setColor(QPalette::Base, Qt::white);
  pal.setColor(QPalette::WindowText, Qt::black);
  pal.setColor(QPalette::Mid, QColor(160, 160, 160));
  pal.setColor(QPalette::PlaceholderText, QColor(110, 110, 110));
  return pal;
}

void Chart::applyLook(const QPalette& pal) {
  const QColor text = pal.color(QPalette::WindowText);
  QColor grid = pal.color(QPalette::Mid);
  grid.setAlpha(90);
  setBackground(pal.color(QPalette::Base));

  QFont base = font();
  QFont tickFont = base;
  QFont labelFont = base;
  labelFont.setPointSizeF(base.pointSizeF() + 1);
  QFont titleFont = base;
  titleFont.setPointSizeF(base.pointSizeF() + 3);
  titleFont.setBold(true);
  QFont subtitleFont = base;
  subtitleFont.setPointSizeF(std::max(base.pointSizeF() - 0.5, 7.0));

  for (QCPAxis* axis : {xAxis, yAxis, yAxis2}) {
    axis->setBasePen(QPen(text, 1));
    axis->setTickPen(QPen(text, 1));
    axis->setSubTickPen(QPen(text, 1));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->setTickLabelFont(tickFont);
    axis->setLabelFont(labelFont);
    axis->grid()->setPen(QPen(grid, 1, Qt::SolidLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
  }
  yAxis2->grid()->setVisible(false);
  m_titleElement->setFont(titleFont);
  m_titleElement->setTextColor(text);
  m_subtitleElement->setFont(subtitleFont);
  m_subtitleElement->setTextColor(pal.color(QPalette::PlaceholderText));
  m_placeholder->setFont(labelFont);
  m_placeholder->setColor(pal.color(QPalette::PlaceholderText));

  QColor legendBack = pal.color(QPalette::Base);
  legendBack.setAlpha(220);
  legend->setBrush(legendBack);
  legend->setBorderPen(Qt::NoPen);
  legend->setFont(tickFont);  // every item's too: a compact legend is made compact again
  legend->setTextColor(text);
  if (m_markers) m_markers->applyLook(text);
  setLegendCompact(m_legendCompact);
}

void Chart::showChanges(const MetricHistory& history) {
  if (!m_markers) m_markers = std::make_unique<ChangeMarkers>(this);
  if (m_markers->show(history.changes())) fitLegend();
}

QString Chart::csvNumber(double v) {
  return std::isnan(v) ? QString() : QString::number(v, 'g', 10);
}

void Chart::setPlaceholderVisible(bool visible) { m_placeholder->setVisible(visible); }
bool Chart::showsNothing() const { return m_placeholder->visible(); }

void Chart::showEmpty(QCPRange keys, QCPRange values) {
  setPlaceholderText(tr("No data yet: press Start (F5) to train"));
  xAxis->setRange(keys);
  yAxis->setRange(values);
  setPlaceholderVisible(true);
  replot(rpQueuedReplot);
}
void Chart::setPlaceholderText(const QString& text) {
  m_placeholderText = text;
  fitSubtitle(width());
}

void Chart::removeSeries(QCPGraph* graph) {
  for (int i = 0; i < graphCount(); ++i)
    if (QCustomPlot::graph(i) == graph) {
      if (i < m_columns.size()) m_columns.removeAt(i);
      removeGraph(graph);
      return;
    }
}

namespace {

// QCustomPlot's ticker, its steps rounded to whole numbers (at least 1, with no sub-ticks
// between whole steps).
class StepTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    const double step = QCPAxisTicker::getTickStep(range);
    return step <= 1 ? 1 : std::floor(step);
  }
  int getSubTickCount(double tickStep) override {
    return tickStep <= 1 ? 0 : QCPAxisTicker::getSubTickCount(tickStep);
  }
};

}  // namespace

void Chart::useStepTicks(QCPAxis* axis) { axis->setTicker(QSharedPointer<StepTicker>::create()); }

void Chart::setLegendColumns(int maxColumns) {
  m_legendColumns = maxColumns;
  fitLegend();
}

void Chart::fitLegend() {
  const QList<QCPAbstractPlottable*> optional = legendOptional();
  for (QCPAbstractPlottable* p : optional) p->addToLegend();  // (no-op where it is there)
  fitLegendColumns();
  for (QCPAbstractPlottable* p : optional) {
    if (height() <= 0 || legend->minimumOuterSizeHint().height() <= height() / kLegendShare) break;
    p->removeFromLegend();
    fitLegendColumns();
  }
  requestRedraw();
}

void Chart::fitLegendColumns() {
  const int items = legend->itemCount();
  if (items == 0) return;
  const int room = (width() > 0 ? width() : 800) - 16;
  for (bool compact : {false, true}) {
    setLegendCompact(compact);
    int columns = m_legendColumns > 0 ? std::min(m_legendColumns, items) : items;
    if (compact) columns = items;  // as many as fit: rows are what there is too little of
    for (;; --columns) {
      legend->setWrap(columns);
      legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-lays the items out
      if (columns == 1 || legend->minimumOuterSizeHint().width() <= room) break;
    }
    if (height() <= 0 || legend->minimumOuterSizeHint().height() <= height() / 6) break;
  }
}

void Chart::setLegendCompact(bool compact) {
  m_legendCompact = compact;
  QFont f = legend->font();
  if (compact) f.setPointSizeF(std::max(f.pointSizeF() - 1, 7.0));
  legend->setIconSize(compact ? QSize(18, 9) : QSize(32, 18));
  legend->setColumnSpacing(compact ? 12 : 24);
  legend->setIconTextPadding(compact ? 4 : 7);
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i)) item->setFont(f);  // a grid has gaps
}

// The texts are fitted to the new width first, so the replot of the resize draws them.
void Chart::resizeEvent(QResizeEvent* event) {
  fitSubtitle(width());
  fitLegend();
  QCustomPlot::resizeEvent(event);
}

void Chart::finishUpdate() {
  double maxStep = 0;
  for (int i = 0; i < graphCount(); ++i)
    if (!graph(i)->data()->isEmpty())
      maxStep = std::max(maxStep, (graph(i)->data()->end() - 1)->key);
  // A little room after the last point; at least 10 steps so the first points are not a wall.
  xAxis->setRange(0, std::max(10.0, maxStep * 1.03));
  setPlaceholderVisible(pointCount() == 0);
  replot(rpQueuedReplot);
}

int Chart::pointCount() const {
  int n = 0;
  for (int i = 0; i < graphCount(); ++i) n += graph(i)->dataCount();
  return n;
}

void Chart::writeCsv(QTextStream& out) const {
  std::map<double, std::vector<std::optional<double>>> rows;
  const int series = graphCount();
  for (int i = 0; i < series; ++i)
    for (const QCPGraphData& d : *graph(i)->data()) {
      auto& row = rows[d.key];
      row.resize(series);
      row[i] = d.value;
    }
  out << m_keyColumn;
  for (int i = 0; i < series; ++i) out << ',' << m_columns.value(i, graph(i)->name());
  out << '\n';
  for (const auto& [key, values] : rows) {
    out << QString::number(key, 'g', 15);
    for (const auto& v : values) out << ',' << (v ? csvNumber(*v) : QString());
    out << '\n';
  }
}

void Chart::mousePressEvent(QMouseEvent* event) {
  emit activated(this);
  QCustomPlot::mousePressEvent(event);
}

void Chart::contextMenuEvent(QContextMenuEvent* event) {
  emit activated(this);
  QMenu menu(this);
  menu.addAction(tr("Export “%1” Chart…").arg(m_title), this,
                 [this] { emit exportRequested(this); });
  menu.exec(event->globalPos());
}

void Chart::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) {
    applyLook(palette());
    fitSubtitle(width());  // another font measures the parts anew
    replot(rpQueuedReplot);
  }
  QCustomPlot::changeEvent(event);
}

}  // namespace paralab
