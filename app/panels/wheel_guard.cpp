// Spin boxes and combo boxes that take the wheel only with the focus (see wheel_guard.h).
// See tests/app/tst_window_screen.cpp (wheelScrollsTheSettings).
#include "panels/wheel_guard.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QWidget>

namespace paralab {

void WheelGuard::guard(QWidget* root) {
  auto* guard = root->findChild<WheelGuard*>(QString(), Qt::FindDirectChildrenOnly);
  if (!guard) guard = new WheelGuard(root);
  QList<QWidget*> fields;
  for (QAbstractSpinBox* s : root->findChildren<QAbstractSpinBox*>()) fields << s;
  for (QComboBox* c : root->findChildren<QComboBox*>()) fields << c;
  for (QWidget* w : fields) {
    w->setFocusPolicy(Qt::StrongFocus);  // not WheelFocus: the wheel does not take the focus
    w->removeEventFilter(guard);         // once, however often guard() is called
    w->installEventFilter(guard);
  }
}

// Unfocused, the wheel event is ignored and stopped here: Qt then offers it to the parents,
// and the scroll area around the panel scrolls.
bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Wheel)
    if (auto* w = qobject_cast<QWidget*>(watched); w && !w->hasFocus()) {
      event->ignore();
      return true;
    }
  return QObject::eventFilter(watched, event);
}

}  // namespace paralab
