// Theme: the window's light and dark palettes. "System" follows the desktop, judged by the
// lightness of the palette it gave at start-up (QStyleHints::colorScheme needs Qt 6.5).
// View > Theme switches it; see tests/app/tst_window.cpp (themes) and the dark screenshots.
#pragma once
#include <QPalette>

#include "settings.h"

namespace paralab {

// Remembers the desktop's palette; call once after QApplication exists, before applyTheme().
void captureDesktopPalette();
bool desktopIsDark();
QPalette lightPalette();
QPalette darkPalette();
// Sets the application palette (widgets and charts follow through their PaletteChange).
void applyTheme(Theme theme);
// Whether the palette now applied is a dark one.
bool themeIsDark(Theme theme);

}  // namespace paralab
