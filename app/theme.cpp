// Theme: light and dark palettes (see theme.h). See tests/app/tst_window.cpp (themes).
#include "theme.h"

#include <QApplication>
#include <QStyle>
#include <optional>

namespace paralab {

namespace {

std::optional<QPalette>& desktopPalette() {
  static std::optional<QPalette> palette;
  return palette;
}

}  // namespace

void captureDesktopPalette() {
  if (!desktopPalette()) desktopPalette() = QApplication::palette();
}

bool desktopIsDark() {
  captureDesktopPalette();
  return desktopPalette()->color(QPalette::Window).lightness() < 128;
}

QPalette lightPalette() {
  // The style's own light palette, with placeholder text dark enough to read as a caption.
  QPalette p = QApplication::style()->standardPalette();
  p.setColor(QPalette::PlaceholderText, QColor(100, 100, 100));
  return p;
}

QPalette darkPalette() {
  // Grey, not black, so the charts' Base background reads as a surface; text at about 87 %
  // white (Material's high-emphasis level); links and selections in the charts' blue.
  const QColor window(45, 45, 48), base(30, 30, 32), text(225, 225, 225), disabled(120, 120, 120);
  const QColor highlight(42, 130, 218);
  QPalette p(window);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(160, 160, 160));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(55, 55, 58));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(255, 90, 90));
  p.setColor(QPalette::Light, QColor(75, 75, 78));
  p.setColor(QPalette::Midlight, QColor(62, 62, 66));
  p.setColor(QPalette::Mid, QColor(100, 100, 104));
  p.setColor(QPalette::Dark, QColor(25, 25, 27));
  p.setColor(QPalette::Shadow, QColor(10, 10, 10));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(100, 170, 240));
  p.setColor(QPalette::LinkVisited, QColor(170, 140, 230));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  p.setColor(QPalette::Disabled, QPalette::Base, window);
  p.setColor(QPalette::Disabled, QPalette::Button, QColor(50, 50, 53));
  return p;
}

bool themeIsDark(Theme theme) {
  return theme == Theme::Dark || (theme == Theme::System && desktopIsDark());
}

void applyTheme(Theme theme) {
  captureDesktopPalette();
  switch (theme) {
    case Theme::Light:
      QApplication::setPalette(lightPalette());
      break;
    case Theme::Dark:
      QApplication::setPalette(darkPalette());
      break;
    case Theme::System:
      QApplication::setPalette(*desktopPalette());
      break;
  }
}

}  // namespace paralab
