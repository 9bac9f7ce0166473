// The window on a laptop's screen: offscreen on a 1280×720 screen (a 1920×1080 laptop at 150 %),
// it opens inside the screen, and so does Run > Project to a Cluster; every step of every lesson
// has its prediction box, Lock in, Run and Back / Next in view (the lesson page scrolls) with the
// window never past 1280×720; the step text stays as tall as its lines after a result shows; the
// wheel over the Run settings scrolls the panel; every tab's title is whole; the status bar's
// throughput keeps its digits and a new Start clears the last failure; the welcome leaves the
// Lessons tab it points at in view and counts the lessons.
// Run: ctest -R tst_window_screen --output-on-failure
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyleOptionTab>
#include <QTabBar>
#include <QTest>
#include <QTextBrowser>
#include <QWheelEvent>

#include "charts/projection_chart.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/lesson_dock.h"
#include "panels/welcome_page.h"
#include "window/run_text.h"
#include "window_test.h"

using namespace paralab;

namespace {

constexpr QSize kScreen(1280, 720);

// Scrolls every scroll area around `w` so that all of it is in view (ensureWidgetVisible
// would bring only a line edit's cursor into view).
void scrollTo(QWidget* w) {
  for (QWidget* p = w->parentWidget(); p; p = p->parentWidget())
    if (auto* area = qobject_cast<QScrollArea*>(p); area && area->widget()->isAncestorOf(w)) {
      const QPoint centre = w->mapTo(area->widget(), w->rect().center());
      area->ensureVisible(centre.x(), centre.y(), w->width() / 2 + 1, w->height() / 2 + 1);
    }
  QApplication::processEvents();
}

// "" when all of `w` can be seen inside the window, else what is hidden.
QString outOfView(const QWidget* w, const QMainWindow& window) {
  const QRect seen = w->visibleRegion().boundingRect();
  const QRect inWindow(w->mapTo(&window, QPoint()), w->size());
  if (seen == w->rect() && window.rect().contains(inWindow)) return {};
  QString chain;
  for (const QWidget* p = w->parentWidget(); p && p != &window; p = p->parentWidget())
    chain += QString(" < %1 %2,%3 %4×%5")
                 .arg(p->objectName().isEmpty() ? p->metaObject()->className() : p->objectName())
                 .arg(p->mapTo(&window, QPoint()).x())
                 .arg(p->mapTo(&window, QPoint()).y())
                 .arg(p->width())
                 .arg(p->height());
  return QString("%1 '%2' at %3,%4 %5×%6, seen %7×%8%9")
      .arg(w->objectName(), w->property("text").toString())
      .arg(inWindow.x())
      .arg(inWindow.y())
      .arg(w->width())
      .arg(w->height())
      .arg(seen.width())
      .arg(seen.height())
      .arg(chain);
}

// What holds the window tall: each visible dock's and bar's least height.
QString leastHeights(const QMainWindow& w) {
  QStringList out{QString("window %1").arg(w.minimumSizeHint().height())};
  for (const QWidget* d : w.findChildren<QWidget*>(Qt::FindDirectChildrenOnly))
    if (d->isVisible())
      out << QString("%1 %2").arg(d->objectName().isEmpty() ? d->metaObject()->className()
                                                              : d->objectName())
                 .arg(d->minimumSizeHint().height());
  return out.join(", ");
}

// Each tab whose title is not shown whole, as QTabBar draws it: elided to the width its style
// leaves for the text, or scrolled out of its bar.
QStringList cutTabTitles(const QMainWindow& w) {
  QStringList out;
  for (const QTabBar* bar : w.findChildren<QTabBar*>()) {
    if (!bar->isVisible()) continue;
    for (int i = 0; i < bar->count(); ++i) {
      QStyleOptionTab opt;
      opt.initFrom(bar);
      opt.shape = bar->shape();
      opt.documentMode = bar->documentMode();
      opt.rect = bar->tabRect(i);
      opt.text = bar->tabText(i);
      const QRect room = bar->style()->subElementRect(QStyle::SE_TabBarTabText, &opt, bar);
      const QString shown = bar->fontMetrics().elidedText(opt.text, Qt::ElideRight, room.width(),
                                                          Qt::TextShowMnemonic);
      if (shown != opt.text || !bar->rect().contains(opt.rect))
        out << QString("'%1' shows as '%2' (tab %3 px, bar %4 px)")
                   .arg(opt.text, shown)
                   .arg(opt.rect.width())
                   .arg(bar->width());
    }
  }
  return out;
}

int lessonNamed(const LessonDock* dock, const QString& slug) {
  for (int i = 0; i < dock->lessons().size(); ++i)
    if (dock->lessons()[i].slug == slug) return i;
  return -1;
}

// The window at the screen's size, shown, with the lessons' tab raised; null if it never
// showed.
LessonDock* showLessonsOnTheScreen(MainWindow& w) {
  w.resize(kScreen);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return nullptr;
  w.lessonDock()->raise();
  return w.lessonDock();
}

}  // namespace

class TestWindowScreen : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::startAsANewLearner(); }

  void opensInsideTheScreen() {
    QCOMPARE(QApplication::primaryScreen()->availableGeometry().size(), kScreen);
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTest::qWait(50);
    QVERIFY2(QApplication::primaryScreen()->availableGeometry().contains(w.frameGeometry()),
             qPrintable(QString("%1×%2 (%3)")
                            .arg(w.frameGeometry().width())
                            .arg(w.frameGeometry().height())
                            .arg(leastHeights(w))));
  }

  // Every step of every lesson, as tst_window_look shows them at 1280×720: the prediction box,
  // Lock in, Run, Back and Next can each be scrolled into view, and the window does not grow.
  void everyStepReachableOnALaptop() {
    MainWindow w;
    LessonDock* dock = showLessonsOnTheScreen(w);
    QVERIFY(dock);
    QStringList hidden;
    for (int l = 0; l < dock->lessons().size(); ++l) {
      dock->openLesson(l);
      for (int p = 1; p <= dock->lessons()[l].steps.size(); ++p) {
        dock->openPage(p);
        QApplication::processEvents();
        QList<QWidget*> controls;
        for (const char* name : {"lessonPrediction", "lessonLock", "lessonRun"})
          if (auto* c = dock->findChild<QWidget*>(name); c && c->isVisibleTo(dock)) controls << c;
        for (QPushButton* b : dock->findChildren<QPushButton*>())
          if (b->isVisibleTo(dock) && (b->text().contains("Back") || b->text().contains("Next")))
            controls << b;
        QVERIFY(controls.size() >= 2);
        for (QWidget* c : controls) {
          scrollTo(c);
          if (const QString why = outOfView(c, w); !why.isEmpty())
            hidden << QString("%1 step %2: %3").arg(dock->lessons()[l].slug).arg(p).arg(why);
        }
        QVERIFY2(w.width() <= kScreen.width() && w.height() <= kScreen.height(),
                 qPrintable(QString("%1 step %2: the window grew to %3×%4 (%5)")
                                .arg(dock->lessons()[l].slug)
                                .arg(p)
                                .arg(w.width())
                                .arg(w.height())
                                .arg(leastHeights(w))));
      }
    }
    QVERIFY2(hidden.isEmpty(), qPrintable(hidden.join('\n')));
  }

  // After a result shows (a locked prediction, the sweep's measurement and its explanation), the
  // step's text is as tall as its lines: not a few lines in a box of its own to scroll.
  void stepTextKeepsItsHeight() {
    MainWindow w;
    LessonDock* dock = showLessonsOnTheScreen(w);
    QVERIFY(dock);
    dock->openLesson(lessonNamed(dock, "02-amdahl"));
    dock->openPage(2);
    if (dock->predictionLocked()) dock->findChild<QPushButton*>("lessonLock")->click();
    dock->findChild<QLineEdit*>("lessonPrediction")->setText("6.5");
    dock->findChild<QPushButton*>("lessonLock")->click();
    QJsonArray points;
    for (auto [n, sp] : {std::pair{1, 1.0}, {2, 1.8}, {4, 3.1}, {8, 4.25}})
      points.append(QJsonObject{{"ranks", n}, {"speedup", sp}});
    dock->showSweepResult(QJsonObject{{"points", points}});
    QVERIFY(dock->comparisonText().contains("against reference"));
    QApplication::processEvents();
    auto* text = dock->findChild<QTextBrowser*>("lessonText");
    const int content = int(text->document()->size().height());
    QVERIFY2(text->viewport()->height() >= content,
             qPrintable(QString("the text shows %1 of its %2 px").arg(text->viewport()->height())
                            .arg(content)));
    QCOMPARE(text->verticalScrollBar()->maximum(), 0);
  }

  // The wheel over a spin box or combo box of the settings, none of them focused, leaves its
  // value alone (it scrolls the panel); once the field has the focus the wheel changes it.
  void wheelScrollsTheSettings() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.findChild<QDockWidget*>("configDock")->raise();
    QApplication::processEvents();
    const auto wheel = [](QWidget* field) {
      const QPointF at = QRectF(field->rect()).center();
      QWheelEvent e(at, field->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(field, &e);
    };
    int tried = 0;
    for (QSpinBox* spin : w.configPanel()->findChildren<QSpinBox*>()) {
      if (!spin->isEnabled() || !spin->isVisible() || spin->value() == spin->minimum()) continue;
      const int before = spin->value();
      wheel(spin);
      QVERIFY2(spin->value() == before, qPrintable(spin->objectName()));
      ++tried;
    }
    for (QComboBox* box : w.configPanel()->findChildren<QComboBox*>()) {
      if (!box->isEnabled() || !box->isVisible() || box->count() < 2) continue;
      const int before = box->currentIndex();
      wheel(box);
      QVERIFY2(box->currentIndex() == before, qPrintable(box->objectName()));
      ++tried;
    }
    QVERIFY(tried >= 3);
    // Focused, a field takes the wheel as it always did.
    QSpinBox* steps = test::child<QSpinBox>(w.configPanel(), "steps");
    QVERIFY(steps);
    QApplication::setActiveWindow(&w);
    steps->setFocus();
    if (!steps->hasFocus()) QSKIP("this platform gives no focus offscreen");
    const int before = steps->value();
    wheel(steps);
    QVERIFY(steps->value() != before);
  }

  // A slow run reads "0.29 samples/s", not "0"; a fast one without false digits.
  void throughputKeepsItsDigits() {
    QLocale::setDefault(QLocale::c());
    QCOMPARE(samplesPerSText(0.29), QString("0.29 samples/s"));
    QCOMPARE(samplesPerSText(0.0123), QString("0.012 samples/s"));
    QCOMPARE(samplesPerSText(2.345), QString("2.35 samples/s"));
    QCOMPARE(samplesPerSText(12.34), QString("12.3 samples/s"));
    QCOMPARE(samplesPerSText(4812.4).remove(',').remove(' '), QString("4812samples/s"));
    QLocale::setDefault(QLocale::system());
  }

  // The last run's failure ("training diverged", as the run controller words an engine error)
  // stays in the status bar until the next Start, which clears it.
  void newStartClearsTheFailure() {
    MainWindow w;
    w.statusBar()->showMessage(
        "The run failed: training diverged: the loss is not finite at step 12");
    w.configPanel()->setConfig(test::quickConfig(5));
    QSignalSpy ended(&w, &MainWindow::runEnded);
    w.startAction()->trigger();
    QVERIFY2(!w.statusBar()->currentMessage().contains("diverged"),
             qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(!ended.isEmpty() || ended.wait(30000));
    QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
  }

  // Every tab of the window shows its whole title on the laptop's screen, in the platform's
  // font and in the 11 pt many desktops use, as laid out and with the lessons column dragged
  // wide: the charts' cells keep the width their tabs need.
  void tabTitlesWhole_data() {
    QTest::addColumn<double>("points");
    QTest::newRow("platform font") << 0.0;
    QTest::newRow("11 pt") << 11.0;
  }
  void tabTitlesWhole() {
    QFETCH(double, points);
    const QFont platform = QApplication::font();
    QFont font = platform;
    if (points > 0) font.setPointSizeF(points);
    QApplication::setFont(font);
    QStringList cut;
    {
      MainWindow w;
      QVERIFY(showLessonsOnTheScreen(w));
      QTest::qWait(50);
      const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots/screen";
      QDir().mkpath(dir);
      const QString name = dir + "/tabs-" + QString(QTest::currentDataTag()).replace(' ', '-');
      cut += cutTabTitles(w);
      QVERIFY(w.grab().save(name + ".png"));
      w.resizeDocks({w.lessonDock()}, {kScreen.width() / 2}, Qt::Horizontal);  // a learner's drag
      QTest::qWait(50);
      cut += cutTabTitles(w);
      QVERIFY(w.grab().save(name + "-lessons-wide.png"));
      QVERIFY2(w.width() <= kScreen.width(), qPrintable(QString("window %1 px").arg(w.width())));
    }
    QApplication::setFont(platform);
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join('\n')));
  }

  // Started as the program starts (the settings restored before the first show), the welcome
  // covers the charts, not the Lessons tab it points at, and counts the lessons it offers.
  // Run > Project to a Cluster opens a window of its own: inside the screen too, its three
  // charts whole in it, and the end of its column (the check on this machine) scrolled to.
  void projectionWindowInsideTheScreen() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* action = w.findChild<QAction*>("projectAction");
    QVERIFY(action);
    action->trigger();
    auto* panel = w.findChild<QWidget*>("projectionPanel");
    QVERIFY(panel);
    QWidget* top = panel->window();
    QVERIFY(top != &w);
    QVERIFY(QTest::qWaitForWindowExposed(top));
    QTest::qWait(50);
    QVERIFY2(QApplication::primaryScreen()->availableGeometry().contains(top->frameGeometry()),
             qPrintable(QString("%1×%2").arg(top->frameGeometry().width())
                            .arg(top->frameGeometry().height())));
    const QList<ProjectionChart*> charts = panel->findChildren<ProjectionChart*>();
    QCOMPARE(charts.size(), 3);
    for (const ProjectionChart* c : charts)
      QVERIFY2(c->visibleRegion().boundingRect() == c->rect(),
               qPrintable(QString("a chart of %1×%2 seen %3×%4").arg(c->width()).arg(c->height())
                              .arg(c->visibleRegion().boundingRect().width())
                              .arg(c->visibleRegion().boundingRect().height())));
    auto* check = panel->findChild<QWidget*>("projectOnHost");
    QVERIFY(check);
    scrollTo(check);
    QCOMPARE(check->visibleRegion().boundingRect(), check->rect());
    top->close();
  }

  void welcomeLeavesTheLessonsInView() {
    Settings::setStartChoice(QString());
    MainWindow w;
    w.restoreSettings(true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTest::qWait(50);
    WelcomePage* welcome = w.welcomePage();
    QVERIFY(welcome && welcome->isVisible());
    const QRect lessons(w.lessonDock()->mapTo(&w, QPoint()), w.lessonDock()->size());
    QVERIFY2(!welcome->geometry().intersects(lessons),
             qPrintable(QString("the welcome starts at x = %1, the lessons end at %2")
                            .arg(welcome->geometry().left())
                            .arg(lessons.right())));
    QString words;
    for (QLabel* l : welcome->findChildren<QLabel*>()) words += l->text() + '\n';
    const int count = int(w.lessonDock()->lessons().size());
    QVERIFY(count > 0);
    QVERIFY2(words.contains(QString("%1 short lessons").arg(count)), qPrintable(words));
    Settings::setStartChoice(QString());
  }
};

// The offscreen platform with one screen of kScreen (its default is 800×600): a configuration
// file given before the application starts.
int main(int argc, char** argv) {
  const QString config = QString(PARALAB_BINARY_DIR) + "/tst_window_screen_screens.json";
  QFile file(config);
  if (!file.open(QIODevice::WriteOnly)) return 2;
  file.write(QJsonDocument(QJsonObject{
                               {"synchronousWindowSystemEvents", false},
                               {"windowFrameMargins", true},
                               {"screens", QJsonArray{QJsonObject{{"name", "laptop"},
                                                                  {"x", 0},
                                                                  {"y", 0},
                                                                  {"width", kScreen.width()},
                                                                  {"height", kScreen.height()},
                                                                  {"logicalDpi", 96},
                                                                  {"logicalBaseDpi", 96},
                                                                  {"dpr", 1}}}}})
                 .toJson());
  file.close();
  qputenv("QT_QPA_PLATFORM", ("offscreen:configfile=" + config).toUtf8());
  QApplication app(argc, argv);
  TestWindowScreen test;
  return QTest::qExec(&test, argc, argv);
}

#include "tst_window_screen.moc"
