// Where the window's panels sit (see dock_layout.h). See tests/app/tst_window_look.cpp.
#include "window/dock_layout.h"

#include <QAction>
#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QMenu>
#include <QScreen>
#include <QTimer>
#include <algorithm>

#include "settings.h"
#include "window/screen_room.h"

namespace paralab {

DockLayout::DockLayout(QMainWindow* window, QMenu* viewMenu)
    : QObject(window), m_window(window), m_viewMenu(viewMenu) {}

void DockLayout::createMovableAction() {
  m_movable = m_viewMenu->addAction(tr("&Movable Panels"));
  m_movable->setCheckable(true);
  m_movable->setStatusTip(
      tr("Show the panels' title bars, to drag, float or close them; "
         "tabs can be dragged either way"));
  connect(m_movable, &QAction::toggled, this, &DockLayout::setPanelsMovable);
}

void DockLayout::sizeToScreen() { m_window->resize(fittedToScreen(m_window, kPreferred)); }

void DockLayout::addPanel(QDockWidget* dock, Qt::DockWidgetArea area) {
  m_window->addDockWidget(area, dock);
  m_viewMenu->addAction(dock->toggleViewAction());
  if (m_movable && !m_movable->isChecked() && !dock->titleBarWidget())
    dock->setTitleBarWidget(new QWidget(dock));
}

// A dock's title bar repeats its tab and its chart's title; it is shown only while the
// learner wants to rearrange the panels.
void DockLayout::setPanelsMovable(bool movable) {
  for (QDockWidget* dock : m_window->findChildren<QDockWidget*>()) {
    QWidget* old = dock->titleBarWidget();
    dock->setTitleBarWidget(movable || dock->isFloating() ? nullptr : new QWidget(dock));
    delete old;
  }
  if (m_movable->isChecked() != movable) m_movable->setChecked(movable);
}

void DockLayout::setLeftColumn(const QList<QDockWidget*>& docks) {
  m_column = docks;
  for (int i = 1; i < docks.size(); ++i) m_window->tabifyDockWidget(docks[i - 1], docks[i]);
  for (QDockWidget* d : docks) watch(d);  // the learner dragging the column's edge
}

void DockLayout::watch(QDockWidget* dock) { dock->installEventFilter(this); }

// The dock in front in the left column (lessons, settings or sweep).
QDockWidget* DockLayout::leftColumn() const {
  for (QDockWidget* d : m_column)
    if (d && d->isVisible() && !d->visibleRegion().isEmpty() &&
        m_window->dockWidgetArea(d) == Qt::LeftDockWidgetArea && !d->isFloating())
      return d;
  return nullptr;
}

bool DockLayout::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Resize || event->type() == QEvent::Move) {
    emit moved();
    // The left column resized while the window kept its width: the learner dragged its edge,
    // and that is the width it keeps from now on (windowResized).
    if (watched == leftColumn() && m_window->width() == m_windowWidth && m_columnWidth > 0)
      m_columnWidth = leftColumn()->width();
  }
  return QObject::eventFilter(watched, event);
}

// Qt gives the left column its share of what the window gains: made small and grown back, the
// window would keep the column wide and the charts narrow. The column keeps the width it was
// given (or dragged to); the docks are laid out to the new size after this event, so the
// column is set right after.
void DockLayout::windowResized() {
  QTimer::singleShot(0, this, [this] {
    if (QDockWidget* column = leftColumn();
        column && m_columnWidth > 0 && column->width() > m_columnWidth) {
      // The chart columns take what the left column gives back, in their present proportion.
      QList<QDockWidget*> docks{column};
      QList<int> widths{m_columnWidth};
      const int spare = column->width() - m_columnWidth;
      int charts = 0;
      for (const char* stem : {"loss", "throughput"})
        if (auto* d = m_window->findChild<QDockWidget*>(QString(stem) + "Dock")) charts += d->width();
      for (const char* stem : {"loss", "throughput"})
        if (auto* d = m_window->findChild<QDockWidget*>(QString(stem) + "Dock"); d && charts > 0) {
          docks << d;
          widths << d->width() + spare * d->width() / charts;
        }
      m_window->resizeDocks(docks, widths, Qt::Horizontal);
    }
    m_windowWidth = m_window->width();  // from now on a column resize at this width is a drag
    emit moved();
  });
}

void DockLayout::windowShown(int settingsWidth) {
  // Before the first show the window's least height is taken from docks not yet laid out in
  // their columns, and a window sized to the screen can grow past it; shown, the docks are in
  // place and the window fits the screen again.
  if (const QScreen* screen = m_window->screen(); screen && !m_sized) {
    const QSize room = screen->availableGeometry().size();
    const QSize outer = m_window->frameGeometry().size().expandedTo(m_window->size());
    if (outer.width() > room.width() || outer.height() > room.height())
      m_window->resize(fittedToScreen(m_window, m_window->size()));
  }
  if (m_restored && !m_sized) {  // the column keeps the width the last session left
    m_sized = true;
    QTimer::singleShot(0, this, [this] {
      if (QDockWidget* column = leftColumn()) m_columnWidth = column->width();
      m_windowWidth = m_window->width();
    });
  }
  if (m_sized) return;
  m_sized = true;
  // The settings column as narrow as its controls; the two chart columns share the rest.
  auto* config = m_window->findChild<QDockWidget*>("configDock");
  const int chartWidth = std::max(300, (m_window->width() - settingsWidth) / 2);
  QList<QDockWidget*> docks = {config};
  QList<int> widths = {settingsWidth};
  for (const char* stem : {"loss", "throughput"})
    if (auto* d = m_window->findChild<QDockWidget*>(QString(stem) + "Dock")) {
      docks << d;
      widths << chartWidth;
    }
  m_window->resizeDocks(docks, widths, Qt::Horizontal);
  m_columnWidth = settingsWidth;
  m_windowWidth = m_window->width();
}

bool DockLayout::restore() {
  m_window->restoreGeometry(Settings::windowGeometry());
  m_restored = m_window->restoreState(Settings::windowState());
  setPanelsMovable(m_movable->isChecked());  // a dock restored floating keeps its bar
  return m_restored;
}

void DockLayout::save() const { Settings::setWindow(m_window->saveGeometry(), m_window->saveState()); }

}  // namespace paralab
