// The mouse wheel over a panel of settings scrolls the panel: a spin box or combo box under the
// pointer takes the wheel only once it has the focus (clicked or tabbed into), as in a
// browser's forms. See tests/app/tst_window_screen.cpp (wheelScrollsTheSettings).
#pragma once
#include <QObject>

class QWidget;

namespace paralab {

class WheelGuard : public QObject {
  Q_OBJECT
 public:
  // Guards every spin box and combo box under `root` now (later ones: call again).
  static void guard(QWidget* root);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  using QObject::QObject;
};

}  // namespace paralab
