// DockLayout: where the window's panels sit. The left column (lessons, settings, sweep) as
// narrow as its controls on the first show and keeping its width when the window grows (or
// the width the learner dragged it to); the panels' title bars shown only while the learner
// wants to move them; the layout restored from, and saved to, the last session.
// See tests/app/tst_window_look.cpp and tests/app/tst_window_trust.cpp.
#pragma once
#include <QList>
#include <QObject>
#include <QSize>

class QAction;
class QDockWidget;
class QMainWindow;
class QMenu;

namespace paralab {

class DockLayout : public QObject {
  Q_OBJECT
 public:
  // Panels added appear in `viewMenu`.
  DockLayout(QMainWindow* window, QMenu* viewMenu);

  // View > Movable Panels, added to the View menu here.
  void createMovableAction();
  // The window's first size: kPreferred where the screen has room for it with its frame,
  // else the screen's available room less the frame (a laptop's 1366×768, or 1280×720 at 150 %).
  void sizeToScreen();
  static constexpr QSize kPreferred{1440, 900};
  QAction* movableAction() const { return m_movable; }
  void addPanel(QDockWidget* dock, Qt::DockWidgetArea area);
  // Title bars on the docks (to drag, float, close them) or not (the tidy default).
  void setPanelsMovable(bool movable);
  // The left column's docks, tabbed in this order; the learner dragging its edge is watched.
  void setLeftColumn(const QList<QDockWidget*>& docks);
  // A dock whose moves and resizes are said by moved() (the welcome page covers the charts).
  void watch(QDockWidget* dock);

  // The window's own events: the first show lays the columns out (the settings column
  // `settingsWidth` wide, the charts sharing the rest), a resize keeps the column's width.
  void windowShown(int settingsWidth);
  void windowResized();
  // The geometry and docks of the last session; true when there was a layout to restore.
  bool restore();
  void save() const;

 signals:
  void moved();  // a watched dock or the window moved or resized

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QDockWidget* leftColumn() const;  // the dock in front in the left column

  QMainWindow* m_window;
  QMenu* m_viewMenu;
  QAction* m_movable = nullptr;
  QList<QDockWidget*> m_column;
  bool m_sized = false, m_restored = false;  // the first show lays the columns out
  int m_columnWidth = 0;  // of the left column, kept when the window grows (windowResized)
  int m_windowWidth = 0;  // at the last resize: a column resize at the same width is a drag
};

}  // namespace paralab
