// WelcomePage: what the window shows over the empty charts on a first start — a few lines on
// what ParaLab is and one button per way in ("Start lesson 1", "Free play", "Open a run").
// Not modal: the lessons and the
// settings beside it stay usable, and its arrow points at the Lessons tab.
// See tests/app/tst_window_trust.cpp (welcomeOffersAWayIn).
#pragma once
#include <QFrame>
#include <QString>

class QVBoxLayout;
class QLabel;

namespace paralab {

class WelcomePage : public QFrame {
  Q_OBJECT
 public:
  explicit WelcomePage(QWidget* parent = nullptr);

  // One way in: a button reading `title` (object name "welcome-<id>") with `description` under
  // it; choosing it emits chosen(id).
  void addChoice(const QString& id, const QString& title, const QString& description);
  // Covers `area` of its parent (the charts' part of the window), the card centred in it.
  void cover(const QRect& area);

 signals:
  void chosen(const QString& id);

 private:
  QFrame* m_card = nullptr;
  QVBoxLayout* m_choices = nullptr;
};

}  // namespace paralab
