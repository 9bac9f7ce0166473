// Hatching drawn as lines: a rectangle filled with a brush whose style is one of Qt's diagonal
// patterns is drawn as its outline and the pattern's lines, cut to the rectangle by arithmetic.
// Pattern fills do not survive every SVG renderer (ImageMagick's own draws them black; a
// <pattern> with a <mask> is outside SVG Tiny), lines do. See tests/app/tst_export.cpp
// (svgUsesOnlyWhatEveryRendererDraws).
#pragma once
#include <qcustomplot.h>

#include <cmath>

namespace paralab {

// Whether `brush` is drawn by hatchRect as lines.
inline bool isHatch(const QBrush& brush) {
  const Qt::BrushStyle s = brush.style();
  return s == Qt::BDiagPattern || s == Qt::FDiagPattern || s == Qt::DiagCrossPattern;
}

// Draws `rect` (pixels) with `pen` as its outline and `brush`: a plain brush as a fill, a
// diagonal pattern as lines `spacing` px apart (on a grid common to every rectangle, so the
// hatching of neighbours lines up), in the brush's colour.
inline void hatchRect(QPainter* painter, const QRectF& rect, const QBrush& brush, const QPen& pen,
                      double spacing = 8) {
  if (!isHatch(brush)) {
    painter->setPen(pen);
    painter->setBrush(brush);
    painter->drawRect(rect);
    return;
  }
  const double l = rect.left(), r = rect.right(), t = rect.top(), b = rect.bottom();
  painter->setPen(QPen(brush.color(), 1));
  painter->setBrush(Qt::NoBrush);
  const Qt::BrushStyle s = brush.style();
  if (s == Qt::BDiagPattern || s == Qt::DiagCrossPattern)  // "/": x + y = c
    for (double c = std::ceil((l + t) / spacing) * spacing; c <= r + b; c += spacing) {
      const double x0 = std::max(l, c - b), x1 = std::min(r, c - t);
      if (x1 > x0) painter->drawLine(QPointF(x0, c - x0), QPointF(x1, c - x1));
    }
  if (s == Qt::FDiagPattern || s == Qt::DiagCrossPattern)  // "\": x - y = c
    for (double c = std::ceil((l - b) / spacing) * spacing; c <= r - t; c += spacing) {
      const double x0 = std::max(l, c + t), x1 = std::min(r, c + b);
      if (x1 > x0) painter->drawLine(QPointF(x0, x0 - c), QPointF(x1, x1 - c));
    }
  painter->setPen(pen);
  painter->drawRect(rect);
}

// Bars whose brush may be a hatch: QCPBars draws the outlines, the hatching is lines.
class HatchedBars : public QCPBars {
 public:
  using QCPBars::QCPBars;

 protected:
  void draw(QCPPainter* painter) override {
    if (!isHatch(mBrush)) return QCPBars::draw(painter);
    const QBrush hatch = mBrush;
    mBrush = Qt::NoBrush;
    QCPBars::draw(painter);  // outlines, selection and clipping as QCPBars does them
    mBrush = hatch;
    const QRectF clip = clipRect();
    for (auto it = mDataContainer->constBegin(); it != mDataContainer->constEnd(); ++it) {
      const QRectF bar = getBarRect(it->key, it->value).normalized().intersected(clip);
      if (!bar.isEmpty()) hatchRect(painter, bar, hatch, Qt::NoPen);
    }
  }
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {
    QRectF icon(0, 0, rect.width() * 0.67, rect.height() * 0.67);  // QCPBars' own icon size
    icon.moveCenter(rect.center());
    hatchRect(painter, icon, mBrush, mPen, 4);
  }
};

}  // namespace paralab
