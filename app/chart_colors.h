// The chart colours (Tableau 10, readable on light and dark backgrounds), one place for all
// charts so a metric keeps its colour everywhere. Seen in every chart and export.
#pragma once
#include <QColor>

namespace paralab::chartcolors {

inline const QColor kBlue{31, 119, 180};
inline const QColor kOrange{255, 127, 14};
inline const QColor kGreen{44, 160, 44};
inline const QColor kRed{214, 39, 40};

// The same hue, see-through: raw per-step values under their mean.
inline QColor faint(QColor c) {
  c.setAlpha(80);
  return c;
}

}  // namespace paralab::chartcolors
