// What the lessons panel's suites share: a dock on the lessons of the source tree with its
// progress and cards in a folder of the suite's own, and what a learner's hand and eye meet (a
// prediction typed and locked in, a widget's place, a label cut short, a step found by its kind).
// Used by tst_lessons_dock, tst_lessons_dock_layout and tst_lessons_dock_cards.
#pragma once
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>
#include <functional>

#include "panels/lesson_dock.h"

namespace paralab::test {

class LessonDockTest : public QObject {
 protected:
  QTemporaryDir m_dir;
  const QStringList m_caps{"device:cpu", "strategy:sync"};  // ZeRO and the rest: coming

  LessonDock::Paths paths() const {
    LessonDock::Paths p;
    p.lessons = PARALAB_SOURCE_DIR "/lessons";
    p.progress = m_dir.filePath("progress.json");
    p.flashcards = m_dir.filePath("flashcards.json");
    return p;
  }
  // The same, with a progress file of its own in `dir`: a test that locks predictions.
  LessonDock::Paths pathsIn(const QTemporaryDir& dir) const {
    LessonDock::Paths p = paths();
    p.progress = dir.filePath("progress.json");
    return p;
  }
  // Where pages are saved to be looked at as a learner would: build/screenshots/lessons/.
  static QString shotsDir() {
    const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots/lessons";
    QDir().mkpath(shots);
    return shots;
  }
  // Types `text` as the prediction and presses Lock in.
  static void lock(LessonDock& d, const QString& text) {
    auto* edit = d.findChild<QLineEdit*>("lessonPrediction");
    QVERIFY(!edit->isReadOnly());
    edit->setText(text);
    d.findChild<QPushButton*>("lessonLock")->click();
  }
  // Where `w` is in its window: what the pointer aims at.
  static QRect placeOf(const QWidget* w) {
    return QRect(w->mapTo(w->window(), QPoint(0, 0)), w->size());
  }
  // Shows the dock at the width it has beside the charts (~380 px).
  static void showNarrow(LessonDock& dock) {
    dock.resize(380, 900);
    dock.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dock));
  }
  static int slugIndex(const LessonDock& d, const QString& slug) {
    for (int i = 0; i < d.lessons().size(); ++i)
      if (d.lessons()[i].slug == slug) return i;
    return -1;
  }
  // Opens the open lesson's pages in turn until one shows a step that `is`, and returns that
  // page (0 when no step after the introduction is).
  static int openFirstStep(LessonDock& d, const std::function<bool(const lessons::Step&)>& is) {
    for (int p = 1; p < d.pageCount(); ++p) {
      d.openPage(p);
      if (d.currentStep() && is(*d.currentStep())) return p;
    }
    return 0;
  }
  // The first visible wrapped label that is cut (shorter than its lines need, or outside its
  // box), described; "" when none is.
  static QString cutLabel(const LessonDock& dock) {
    for (QLabel* label : dock.findChildren<QLabel*>())
      if (label->isVisible() && label->wordWrap() && !label->text().isEmpty() &&
          (label->height() < label->heightForWidth(label->width()) ||
           !label->parentWidget()->rect().contains(label->geometry())))
        return QString("'%1' has %2 of the %3 px it needs, or lies outside its box")
            .arg(label->text().left(60))
            .arg(label->height())
            .arg(label->heightForWidth(label->width()));
    return {};
  }
};

}  // namespace paralab::test
