// StackBand: one band of a stacked area chart over steps, drawn as the columns of pixels it
// covers. Its data is the running sum up to it (its top); the band below it gives its bottom.
// Each step is a bar as wide as the room to its neighbours' middles; where several steps share a
// pixel column the column shows the highest top of each band among them, the picture a filled
// line through all of them would draw, at the cost of one rectangle per column instead of a
// polygon of thousands of edges (the latency chart's fills cost tens of ms a replot at 3,200
// steps; see `paralab --bench-frames`). Seen in LatencyChart; see tests/app/tst_charts.cpp.
#pragma once
#include <qcustomplot.h>

#include <QRect>
#include <QVector>
#include <algorithm>
#include <cmath>

namespace paralab {

class StackBand : public QCPAbstractPlottable {
 public:
  // `below` is the band under this one (nullptr: the bottom band, which starts at zero); it
  // must hold the same keys.
  StackBand(QCPAxis* keyAxis, QCPAxis* valueAxis, const StackBand* below)
      : QCPAbstractPlottable(keyAxis, valueAxis), m_below(below) {
    setPen(Qt::NoPen);
  }

  // Keys in ascending order, and this band's top at each.
  void setData(const QVector<double>& keys, const QVector<double>& tops) {
    m_keys = keys;
    m_tops = tops;
  }
  const QVector<double>& keys() const { return m_keys; }
  const QVector<double>& tops() const { return m_tops; }
  // The band's top at `key` (NaN where it has no step).
  double topAt(double key) const {
    const auto it = std::lower_bound(m_keys.begin(), m_keys.end(), key);
    return it != m_keys.end() && *it == key ? m_tops[int(it - m_keys.begin())] : std::nan("");
  }

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    found = !m_keys.isEmpty();
    return found ? QCPRange(spanStart(0), spanEnd(int(m_keys.size()) - 1)) : QCPRange();
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = !m_tops.isEmpty();
    return found ? QCPRange(0, *std::max_element(m_tops.begin(), m_tops.end())) : QCPRange();
  }

 protected:
  void draw(QCPPainter* painter) override {
    const QRect clip = clipRect();
    if (m_keys.isEmpty() || clip.width() <= 0) return;
    const QVector<double> top = columnTops(m_tops, clip);
    const QVector<double> bottom =
        m_below ? columnTops(m_below->m_tops, clip) : QVector<double>(clip.width(), 0.0);
    // Neighbouring columns of the same height are one rectangle; bounds are whole pixels, so
    // a band's top and the next band's bottom meet without a gap.
    QVector<QRect> rects;
    for (int c = 0; c < clip.width();) {
      if (std::isnan(top[c])) {
        ++c;
        continue;
      }
      const int y0 = int(std::lround(mValueAxis->coordToPixel(top[c])));
      const int y1 = int(std::lround(mValueAxis->coordToPixel(bottom[c])));
      int end = c + 1;
      while (end < clip.width() && top[end] == top[c] && bottom[end] == bottom[c]) ++end;
      if (y1 > y0) rects.push_back(QRect(clip.left() + c, y0, end - c, y1 - y0));
      c = end;
    }
    applyFillAntialiasingHint(painter);
    painter->setPen(Qt::NoPen);
    painter->setBrush(mBrush);
    painter->drawRects(rects);
  }
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {
    painter->setPen(Qt::NoPen);
    painter->setBrush(mBrush);
    painter->drawRect(rect.adjusted(1, 3, -1, -3));
  }

 private:
  // Step i spans from the middle between it and the step before to the middle between it and
  // the next (half a step at either end).
  double spanStart(int i) const { return i == 0 ? m_keys[0] - 0.5 : (m_keys[i - 1] + m_keys[i]) / 2; }
  double spanEnd(int i) const {
    return i + 1 == m_keys.size() ? m_keys[i] + 0.5 : (m_keys[i] + m_keys[i + 1]) / 2;
  }
  // For each pixel column of `clip`, the highest of `tops` among the steps whose span reaches
  // into it (NaN where none does).
  QVector<double> columnTops(const QVector<double>& tops, const QRect& clip) const {
    QVector<double> out(clip.width(), std::nan(""));
    for (int i = 0; i < m_keys.size(); ++i) {
      const double a = mKeyAxis->coordToPixel(spanStart(i)) - clip.left();
      const double b = mKeyAxis->coordToPixel(spanEnd(i)) - clip.left();
      if (b < 0 || a >= clip.width()) continue;
      const int first = std::max(0, int(std::floor(a)));
      const int last = std::min(clip.width() - 1, std::max(first, int(std::ceil(b)) - 1));
      for (int c = first; c <= last; ++c)
        if (std::isnan(out[c]) || tops[i] > out[c]) out[c] = tops[i];
    }
    return out;
  }

  const StackBand* m_below;
  QVector<double> m_keys, m_tops;
};

}  // namespace paralab
