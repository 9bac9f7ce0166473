// RectLayer: many rectangles of one colour in plot coordinates, drawn in one pass (a Gantt
// row's spans, the holdings map's slices). QCPItemRect per rectangle would be hundreds of items.
// Seen in TimelineChart and HoldingsMap; see tests/app/tst_charts.cpp.
#pragma once
#include <qcustomplot.h>

#include "charts/hatch.h"

namespace paralab {

class RectLayer : public QCPAbstractPlottable {
 public:
  struct Rect {
    double x0, x1, y0, y1;  // key and value coordinates
  };
  RectLayer(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPAbstractPlottable(keyAxis, valueAxis) {}
  QVector<Rect> rects;
  // Rectangles under a pixel wide: drawn 1 px wide (a short span still shows), or left out
  // (gaps, whose hatching would read as lines).
  bool keepThin = true;

  double selectTest(const QPointF&, bool, QVariant*) const override {
    return -1;
  }  // hover is the chart's
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    return range(found, [](const Rect& r) { return QCPRange(r.x0, r.x1); });
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    return range(found, [](const Rect& r) { return QCPRange(r.y0, r.y1); });
  }

 protected:
  void draw(QCPPainter* painter) override {
    painter->setPen(mPen);
    painter->setBrush(mBrush);
    const bool hatched = isHatch(mBrush);
    const QRectF clip = clipRect();
    for (const Rect& r : rects) {
      QRectF px = QRectF(coordsToPixels(r.x0, r.y0), coordsToPixels(r.x1, r.y1)).normalized();
      if (px.width() < 1) {
        if (!keepThin) continue;
        px.setWidth(1);
      }
      if (!px.intersects(clip)) continue;
      if (hatched)
        hatchRect(painter, px.intersected(clip), mBrush, mPen);
      else
        painter->drawRect(px);
    }
  }
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {
    hatchRect(painter, rect.adjusted(1, 3, -1, -3), mBrush, mPen, 4);
  }

 private:
  template <typename F>
  QCPRange range(bool& found, F of) const {
    found = !rects.isEmpty();
    QCPRange out;
    for (int i = 0; i < rects.size(); ++i) {
      if (i == 0)
        out = of(rects[i]);
      else
        out.expand(of(rects[i]));
    }
    return out;
  }
};

}  // namespace paralab
