// ChangeMarkers: live changes as numbered vertical lines with legend entries (see
// change_markers.h). See tests/app/tst_run_data.cpp (liveChangesAreMarked).
#include "charts/change_markers.h"

namespace paralab {

namespace {

QPen markerPen(const QColor& text) { return QPen(text, 1.4, Qt::DashLine); }

// A legend entry that is not a plottable: a short dashed vertical line, then the text.
class MarkerLegendItem : public QCPAbstractLegendItem {
 public:
  MarkerLegendItem(QCPLegend* legend, const QString& text) : QCPAbstractLegendItem(legend) {
    m_text = text;
    setSelectable(false);
  }
  QString text() const { return m_text; }

 protected:
  void draw(QCPPainter* painter) override {
    const QSize icon = mParentLegend->iconSize();
    painter->setPen(markerPen(mTextColor));
    const double x = mRect.x() + icon.width() / 2.0;
    painter->drawLine(QLineF(x, mRect.y() + 1, x, mRect.y() + icon.height() - 1));
    painter->setFont(mFont);
    painter->setPen(QPen(mTextColor));
    const QRect text =
        painter->fontMetrics().boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
    painter->drawText(mRect.x() + icon.width() + mParentLegend->iconTextPadding(), mRect.y(),
                      text.width(), std::max(text.height(), icon.height()), Qt::TextDontClip,
                      m_text);
  }
  QSize minimumOuterSizeHint() const override {
    const QSize icon = mParentLegend->iconSize();
    const QRect text =
        QFontMetrics(mFont).boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
    return {icon.width() + mParentLegend->iconTextPadding() + text.width() + mMargins.left() +
                mMargins.right(),
            std::max(text.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
  }

 private:
  QString m_text;
};

}  // namespace

bool ChangeMarkers::show(const QVector<MetricHistory::Change>& changes) {
  if (changes.size() == m_shown.size() &&
      std::equal(changes.begin(), changes.end(), m_shown.begin(),
                 [](const auto& a, const auto& b) { return a.step == b.step && a.text == b.text; }))
    return false;
  for (QCPAbstractItem* item : m_items) m_plot->removeItem(item);
  for (QCPAbstractLegendItem* entry : m_legendItems) m_plot->legend->removeItem(entry);
  m_items.clear();
  m_legendItems.clear();
  m_shown = changes;
  const QColor text = m_plot->legend->textColor();
  for (int i = 0; i < changes.size(); ++i) {
    // Between the last step under the old settings and the first under the new.
    const double x = changes[i].step + 0.5;
    auto* line = new QCPItemStraightLine(m_plot);
    line->point1->setCoords(x, 0);
    line->point2->setCoords(x, 1);
    line->setPen(markerPen(text));
    auto* number = new QCPItemText(m_plot);
    number->position->setTypeX(QCPItemPosition::ptPlotCoords);
    number->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    number->position->setCoords(x, 0);
    number->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    number->setPadding(QMargins(3, 1, 0, 0));
    number->setText(QString::number(i + 1));
    number->setColor(text);
    number->setClipToAxisRect(true);
    m_items << line << number;
  }
  // The legend names the newest changes; the earlier ones, beyond its room, share an entry.
  const int n = int(changes.size());
  const int grouped = n > kMaxLegendEntries ? n - (kMaxLegendEntries - 1) : 0;
  QStringList entries;
  if (grouped > 0)
    entries << QObject::tr("1–%1 · earlier live changes (each one in summary.md)").arg(grouped);
  for (int i = grouped; i < n; ++i)
    entries << QObject::tr("%1 · after step %2: %3")
                   .arg(i + 1)
                   .arg(qlonglong(changes[i].step))
                   .arg(changes[i].text);
  for (const QString& e : entries) {
    auto* entry = new MarkerLegendItem(m_plot->legend, e);
    m_plot->legend->addItem(entry);
    m_legendItems << entry;
  }
  m_plot->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

QStringList ChangeMarkers::legendTexts() const {
  QStringList out;
  for (QCPAbstractLegendItem* e : m_legendItems) out << static_cast<MarkerLegendItem*>(e)->text();
  return out;
}

void ChangeMarkers::applyLook(const QColor& text) {
  for (QCPAbstractItem* item : m_items) {
    if (auto* line = qobject_cast<QCPItemStraightLine*>(item)) line->setPen(markerPen(text));
    if (auto* number = qobject_cast<QCPItemText*>(item)) number->setColor(text);
  }
}

}  // namespace paralab
