// The room a screen has for a top-level window: its available area less the title bar and
// borders a desktop draws outside the size a window is given. The main window (dock_layout.cpp)
// and the windows of their own it opens (Run > Project to a Cluster) size themselves by it, so
// each fits a laptop's 1366×768, or 1280×720 at 150 %. See tests/app/tst_window_screen.cpp.
#pragma once
#include <QScreen>
#include <QSize>
#include <QWidget>

namespace paralab {

// `window`'s screen's room, or `preferred` where it is on no screen yet.
inline QSize roomOnScreen(const QWidget* window, QSize preferred) {
  const QScreen* screen = window->screen();
  return screen ? screen->availableGeometry().size() - QSize(16, 48) : preferred;
}

// `preferred`, made smaller where the screen has less room.
inline QSize fittedToScreen(const QWidget* window, QSize preferred) {
  return preferred.boundedTo(roomOnScreen(window, preferred));
}

}  // namespace paralab
