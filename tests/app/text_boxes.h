// Every text a window shows, with the box it needs and the room it has, measured from the
// widgets as laid out: labels, buttons, group-box titles, tabs, combo boxes, table headers and
// cells by their geometry and font metrics; inside each chart (QCustomPlot) its title and
// subtitle, legend entries, axis labels, tick labels and item texts against the chart and its
// plot. A text whose box does not fit its room is clipped; two texts whose boxes meet overlap.
// Used by tests/app/tst_window_look.cpp.
#pragma once
#include <qcustomplot.h>

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QStyleOption>
#include <QTabBar>
#include <QTableWidget>
#include <QTextDocument>
#include <QToolButton>

namespace paralab::test {

struct TextBox {
  QString owner;  // object name or class of the widget (and chart part) showing it
  QString text;
  QRect box;   // where the text is drawn, window coordinates
  QRect room;  // where it must fit (its widget, or its chart's plot), window coordinates
  const QWidget* widget = nullptr;
  QRect seen;  // the part of its widget not scrolled away or covered, window coordinates
  QString describe() const {
    return QString("%1 '%2' box %3,%4 %5x%6 room %7,%8 %9x%10")
        .arg(owner, text.simplified().left(70))
        .arg(box.x())
        .arg(box.y())
        .arg(box.width())
        .arg(box.height())
        .arg(room.x())
        .arg(room.y())
        .arg(room.width())
        .arg(room.height());
  }
};

namespace detail {

inline QString plain(QString text) {
  text.remove('&');
  return text;
}

inline QString ownerOf(const QWidget* w) {
  return w->objectName().isEmpty() ? QString(w->metaObject()->className()) : w->objectName();
}

inline QRect inWindow(const QWidget* w, const QRect& r) {
  return QRect(w->mapTo(w->window(), r.topLeft()), r.size());
}

// Seen now: shown, not in a background tab or a scrolled-away part, not covered by `cover`.
inline bool seen(const QWidget* w, const QWidget* cover) {
  if (!w->isVisible() || w->visibleRegion().isEmpty()) return false;
  if (cover && cover->isVisible() && !cover->isAncestorOf(w) &&
      cover->geometry().contains(inWindow(w, w->rect())))
    return false;
  return true;
}

// A rich-text label's text as laid out at `width` (0: its natural width).
inline QSize richSize(const QLabel* l, int width) {
  QTextDocument doc;
  doc.setDefaultFont(l->font());
  doc.setDocumentMargin(0);
  doc.setHtml(l->text());
  if (width > 0) doc.setTextWidth(width);
  return QSize(int(std::ceil(width > 0 ? width : doc.idealWidth())),
               int(std::ceil(doc.size().height())));
}

inline void addLabel(const QLabel* l, QList<TextBox>* out) {
  if (l->text().isEmpty() || !l->pixmap().isNull()) return;
  const QRect room =
      l->contentsRect().adjusted(l->margin(), l->margin(), -l->margin(), -l->margin());
  const bool rich = l->textFormat() == Qt::RichText ||
                    (l->textFormat() == Qt::AutoText && Qt::mightBeRichText(l->text()));
  QSize need;
  if (l->wordWrap())
    need = QSize(room.width(), l->heightForWidth(l->width()) - (l->height() - room.height()));
  else if (rich)
    need = richSize(l, 0);
  else
    need = l->fontMetrics().size(Qt::TextShowMnemonic, l->text());
  const QRect box = QStyle::alignedRect(l->layoutDirection(), l->alignment(), need, room);
  out->push_back({ownerOf(l), l->text(), inWindow(l, box), inWindow(l, room), l});
}

inline void addButton(const QAbstractButton* b, QList<TextBox>* out) {
  if (b->text().isEmpty()) return;
  const QFontMetrics fm = b->fontMetrics();
  const QString text = plain(b->text());
  QSize need(fm.horizontalAdvance(text), fm.height());
  QRect room = b->rect();
  if (auto* p = qobject_cast<const QPushButton*>(b)) {
    QStyleOptionButton o;
    o.initFrom(p);
    o.text = p->text();
    o.icon = p->icon();
    o.iconSize = p->iconSize();
    room = p->style()->subElementRect(QStyle::SE_PushButtonContents, &o, p);
    if (!p->icon().isNull()) need.rwidth() += p->iconSize().width() + 4;
  } else if (auto* c = qobject_cast<const QCheckBox*>(b)) {
    QStyleOptionButton o;
    o.initFrom(c);
    o.text = c->text();
    room = c->style()->subElementRect(QStyle::SE_CheckBoxContents, &o, c);
  } else if (auto* t = qobject_cast<const QToolButton*>(b)) {
    if (t->toolButtonStyle() == Qt::ToolButtonIconOnly) return;
    // A tool button's text is drawn right of (or under) its icon: it needs its hint's width.
    need = t->sizeHint();
    room = t->rect();
  }
  const QRect box = QStyle::alignedRect(b->layoutDirection(), Qt::AlignCenter, need, room);
  out->push_back({ownerOf(b), text, inWindow(b, box), inWindow(b, room), b});
}

inline void addGroupBox(const QGroupBox* g, QList<TextBox>* out) {
  if (g->title().isEmpty()) return;
  QStyleOptionGroupBox o;
  o.initFrom(g);
  o.text = g->title();
  o.subControls = QStyle::SC_GroupBoxLabel;
  o.lineWidth = 1;
  o.textAlignment = g->alignment();
  const QRect label =
      g->style()->subControlRect(QStyle::CC_GroupBox, &o, QStyle::SC_GroupBoxLabel, g);
  const QSize need(g->fontMetrics().horizontalAdvance(plain(g->title())),
                   g->fontMetrics().height());
  const QRect box(label.topLeft(), need);
  out->push_back({ownerOf(g) + " title", g->title(), inWindow(g, box), inWindow(g, g->rect()), g});
}

inline void addTabs(const QTabBar* bar, QList<TextBox>* out) {
  const int space = bar->style()->pixelMetric(QStyle::PM_TabBarTabHSpace, nullptr, bar);
  for (int i = 0; i < bar->count(); ++i) {
    const QRect tab = bar->tabRect(i);
    const QSize need(bar->fontMetrics().horizontalAdvance(plain(bar->tabText(i))),
                     bar->fontMetrics().height());
    // The style's padding either side of the text is part of what a tab needs.
    const QRect room = tab.adjusted(space / 2 - 2, 0, -(space / 2 - 2), 0);
    const QRect box = QStyle::alignedRect(bar->layoutDirection(), Qt::AlignCenter, need, room);
    out->push_back({"tab", bar->tabText(i), inWindow(bar, box), inWindow(bar, room), bar});
  }
}

inline void addCombo(const QComboBox* c, QList<TextBox>* out) {
  if (c->currentText().isEmpty() || c->isEditable()) return;
  QStyleOptionComboBox o;
  o.initFrom(c);
  o.editable = false;
  o.currentText = c->currentText();
  const QRect room =
      c->style()->subControlRect(QStyle::CC_ComboBox, &o, QStyle::SC_ComboBoxEditField, c);
  const QSize need(c->fontMetrics().horizontalAdvance(c->currentText()), c->fontMetrics().height());
  const QRect box =
      QStyle::alignedRect(c->layoutDirection(), Qt::AlignLeft | Qt::AlignVCenter, need, room);
  out->push_back({ownerOf(c), c->currentText(), inWindow(c, box), inWindow(c, room), c});
}

// A table's header sections and cells: the view elides what does not fit, so each text must
// fit its section (the cells' boxes are in the viewport, the headers' in the header).
inline void addTable(const QTableWidget* t, QList<TextBox>* out) {
  const QHeaderView* h = t->horizontalHeader();
  const int pad = 2 * (t->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h) + 1);
  for (int c = 0; c < t->columnCount(); ++c) {
    const int x = h->sectionViewportPosition(c), w = h->sectionSize(c);
    const QRect room(x + pad / 2, 0, w - pad, h->height());
    if (QTableWidgetItem* item = t->horizontalHeaderItem(c)) {
      const QSize need(h->fontMetrics().horizontalAdvance(item->text()), h->fontMetrics().height());
      out->push_back(
          {"table header", item->text(),
           inWindow(h, QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, need, room)),
           inWindow(h, room), h});
    }
    for (int r = 0; r < t->rowCount(); ++r)
      if (QTableWidgetItem* item = t->item(r, c)) {
        const QRect cell = t->visualItemRect(item).adjusted(3, 0, -3, 0);
        const QSize need(t->fontMetrics().horizontalAdvance(item->text()),
                         t->fontMetrics().height());
        out->push_back({"table cell", item->text(),
                        inWindow(t->viewport(), QStyle::alignedRect(
                                                    Qt::LeftToRight,
                                                    Qt::AlignRight | Qt::AlignVCenter, need, cell)),
                        inWindow(t->viewport(), cell), t->viewport()});
      }
  }
}

}  // namespace detail

// Every text of `window`'s widgets that can be seen now (charts' own texts: chartTextBoxes).
// Texts under `cover` (an overlay such as the welcome page) are not seen.
inline QList<TextBox> widgetTextBoxes(const QWidget* window, const QWidget* cover = nullptr) {
  QList<TextBox> out;
  for (const QWidget* w : window->findChildren<QWidget*>()) {
    if (!detail::seen(w, cover) || w->window() != window) continue;
    if (auto* l = qobject_cast<const QLabel*>(w))
      detail::addLabel(l, &out);
    else if (auto* b = qobject_cast<const QAbstractButton*>(w))
      detail::addButton(b, &out);
    else if (auto* g = qobject_cast<const QGroupBox*>(w))
      detail::addGroupBox(g, &out);
    else if (auto* t = qobject_cast<const QTabBar*>(w))
      detail::addTabs(t, &out);
    else if (auto* c = qobject_cast<const QComboBox*>(w))
      detail::addCombo(c, &out);
    else if (auto* tw = qobject_cast<const QTableWidget*>(w))
      detail::addTable(tw, &out);
  }
  for (TextBox& b : out)
    b.seen = detail::inWindow(b.widget, b.widget->visibleRegion().boundingRect());
  return out;
}

namespace detail {

// The box of a text QCustomPlot draws centred on, or aligned to, a point.
inline QRect textAt(const QFont& font, const QString& text, QPointF at, Qt::Alignment align,
                    const QMargins& padding = {}) {
  QRect r = QFontMetrics(font).boundingRect(0, 0, 0, 0, Qt::TextDontClip | Qt::AlignCenter, text);
  r = QRect(0, 0, r.width(), r.height()) + padding;
  r.moveTopLeft(QPoint(0, 0));
  QPoint p = at.toPoint();
  if (align & Qt::AlignRight)
    p.rx() -= r.width();
  else if (align & Qt::AlignHCenter)
    p.rx() -= r.width() / 2;
  if (align & Qt::AlignBottom)
    p.ry() -= r.height();
  else if (align & Qt::AlignVCenter)
    p.ry() -= r.height() / 2;
  r.moveTopLeft(p);
  // Leading empty lines (a label set one line lower) take room but draw nothing.
  int blank = 0;
  while (blank < text.size() && text[blank] == '\n') ++blank;
  r.setTop(r.top() + blank * QFontMetrics(font).lineSpacing());
  return r;
}

inline void addAxis(const QCPAxis* a, const QString& owner, const QRect& plot,
                    QList<TextBox>* out) {
  if (!a->visible()) return;
  const QRect rect = a->axisRect()->rect();
  const bool vertical = a->orientation() == Qt::Vertical;
  const int out0 = a->offset() + std::max(0, std::max(a->tickLengthOut(), a->subTickLengthOut())) +
                   a->tickLabelPadding();
  if (a->tickLabels()) {
    const QVector<double> ticks = a->tickVector();
    const QVector<QString> labels = a->tickVectorLabels();
    for (int i = 0; i < ticks.size() && i < labels.size(); ++i) {
      if (!a->range().contains(ticks[i]) || labels[i].isEmpty()) continue;
      const double px = a->coordToPixel(ticks[i]);
      QPointF at;
      Qt::Alignment align;
      switch (a->axisType()) {
        case QCPAxis::atLeft:
          at = {double(rect.left() - out0), px}, align = Qt::AlignRight | Qt::AlignVCenter;
          break;
        case QCPAxis::atRight:
          at = {double(rect.right() + 1 + out0), px}, align = Qt::AlignLeft | Qt::AlignVCenter;
          break;
        case QCPAxis::atBottom:
          at = {px, double(rect.bottom() + 1 + out0)}, align = Qt::AlignHCenter | Qt::AlignTop;
          break;
        case QCPAxis::atTop:
          at = {px, double(rect.top() - out0)}, align = Qt::AlignHCenter | Qt::AlignBottom;
          break;
      }
      out->push_back({owner + " tick label", labels[i],
                      textAt(a->tickLabelFont(), labels[i], at, align), plot, nullptr});
    }
  }
  if (!a->label().isEmpty()) {
    // The label runs along the axis, centred on it: it needs the axis's length.
    const QSize text = QFontMetrics(a->labelFont()).size(0, a->label());
    const int length = vertical ? rect.height() : rect.width();
    const QRect along = vertical ? QRect(0, rect.center().y() - text.width() / 2, 1, text.width())
                                 : QRect(rect.center().x() - text.width() / 2, 0, text.width(), 1);
    const QRect room =
        vertical ? QRect(0, rect.top(), 1, length) : QRect(rect.left(), 0, length, 1);
    out->push_back({owner + " axis label", a->label(), along, room, nullptr});
  }
}

}  // namespace detail

// The texts a chart draws, in its window's coordinates: title and subtitle against the chart,
// legend entries against the chart, tick and axis labels, item texts against the plot when
// they are clipped to it (else the chart).
inline QList<TextBox> chartTextBoxes(const QCustomPlot* chart) {
  QList<TextBox> out;
  const QString name = detail::ownerOf(chart);
  const QRect whole = chart->rect();
  for (QCPLayoutElement* e : chart->plotLayout()->elements(true)) {
    if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->visible() && !t->text().isEmpty()) {
      const QRect need =
          QFontMetrics(t->font()).boundingRect(0, 0, 0, 0, Qt::AlignCenter, t->text());
      const QRect box =
          QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, need.size(), t->rect());
      out.push_back({name + " title", t->text(), box, t->rect() & whole, nullptr});
    }
    if (auto* scale = qobject_cast<QCPColorScale*>(e))
      detail::addAxis(scale->axis(), name + " scale", whole, &out);
  }
  if (chart->legend && chart->legend->visible() && chart->legend->layout())
    for (int i = 0; i < chart->legend->itemCount(); ++i) {
      auto* item = qobject_cast<QCPPlottableLegendItem*>(chart->legend->item(i));
      if (!item || !item->visible()) continue;
      const QString text = item->plottable()->name();
      const QFontMetrics fm(item->font());
      const QRect inner = item->rect();
      const int icon = chart->legend->iconSize().width() + chart->legend->iconTextPadding();
      // Measured as QCustomPlot lays the name out: a "\n" starts another line.
      const QSize need = fm.boundingRect(0, 0, 0, 0, Qt::TextDontClip, text).size();
      const QRect box(inner.left() + icon, inner.top(), need.width(), need.height());
      // An entry is drawn clipped to its cell of the legend's grid.
      out.push_back({name + " legend", text, box, item->outerRect() & whole, nullptr});
    }
  const QRect plot = chart->axisRect()->rect();
  for (QCPAxis* a : chart->axisRect()->axes()) detail::addAxis(a, name, whole, &out);
  for (int i = 0; i < chart->itemCount(); ++i) {
    auto* t = qobject_cast<QCPItemText*>(chart->item(i));
    if (!t || !t->visible() || t->text().isEmpty()) continue;
    const QRect box = detail::textAt(t->font(), t->text(), t->position->pixelPosition(),
                                     t->positionAlignment(), t->padding());
    out.push_back({name + " item", t->text(), box, t->clipToAxisRect() ? plot : whole, nullptr});
  }
  // Chart coordinates to window coordinates.
  const QPoint at = chart->mapTo(chart->window(), QPoint(0, 0));
  for (TextBox& b : out) {
    b.box.translate(at);
    b.room = b.room.isValid() ? b.room.translated(at) : b.room;
    b.widget = chart;
    b.seen = detail::inWindow(chart, chart->visibleRegion().boundingRect());
  }
  return out;
}

// "owner 'text' box … room …" for each text that needs more room than it has (1 px of slack
// for rounding).
inline QStringList clipped(const QList<TextBox>& boxes) {
  QStringList out;
  for (const TextBox& b : boxes) {
    const bool vertical = b.room.width() == 1 || b.room.height() == 1;
    const QRect room = b.room.adjusted(-1, -1, 1, 1);
    const bool fits = vertical ? (b.room.width() == 1 ? b.box.height() <= room.height()
                                                      : b.box.width() <= room.width())
                               : room.contains(b.box);
    if (!fits) out << b.describe();
  }
  return out;
}

// Pairs of texts whose boxes overlap (by more than 1 px), neither inside the other's widget.
inline QStringList overlapping(const QList<TextBox>& boxes) {
  QStringList out;
  for (int i = 0; i < boxes.size(); ++i)
    for (int j = i + 1; j < boxes.size(); ++j) {
      const TextBox &a = boxes[i], &b = boxes[j];
      if (a.room.width() == 1 || a.room.height() == 1 || b.room.width() == 1 ||
          b.room.height() == 1)
        continue;  // axis labels are checked for length only
      if (a.widget && b.widget && a.widget != b.widget &&
          (a.widget->isAncestorOf(b.widget) || b.widget->isAncestorOf(a.widget)))
        continue;
      const QRect both =
          (a.box.adjusted(1, 1, -1, -1) & a.seen) & (b.box.adjusted(1, 1, -1, -1) & b.seen);
      if (both.isValid() && !both.isEmpty()) out << a.describe() + "  ×  " + b.describe();
    }
  return out;
}

}  // namespace paralab::test
