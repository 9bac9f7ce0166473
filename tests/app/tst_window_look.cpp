// The window as a learner sees it, at 1600×1000 and 1280×720, light and dark: the welcome page,
// the window after a run (a mixture of experts on 8 ranks) with each chart tab in front in
// turn, the speedup chart with a sweep that scales and one whose fit lies outside 0..1, the
// sweep panel, every page of every lesson, the export dialog. Each view is saved as a PNG under
// <build>/screenshots/look/<size>-<theme>/ for a person to look at, and every text in it is
// measured (tests/app/text_boxes.h): none clipped by its widget or its chart, none overlapping
// another. Growing the window back gives the charts their width back.
// Run: ctest -R tst_window_look --output-on-failure
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QLineEdit>
#include <QMap>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "charts/chart_hub.h"
#include "charts/speedup_chart.h"
#include "flashcards.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "panels/welcome_page.h"
#include "progress.h"
#include "settings.h"
#include "text_boxes.h"
#include "theme.h"
#include "train/sweep.h"

using namespace paralab;

namespace {

// A run that fills every chart: a mixture of experts, 8 ranks, the experts over 4 of them.
RunConfig moeConfig() {
  RunConfig c = ConfigPanel::defaults();
  c.dataset = "synthetic";
  c.model = ModelKind::Moe;
  c.hidden = 32;
  c.layers = 2;
  c.batch = 64;
  c.steps = 12;
  c.evalEvery = 4;
  c.evalSamples = 256;
  c.ranks = 8;
  c.experts = 4;
  c.ep = 4;
  return c;
}

// What every text of the window shows now, the charts' own texts included, measured; "" when
// none is clipped or overlaps another, else one line each (`where` names the view).
QStringList textProblems(MainWindow& w, const QString& where) {
  QApplication::processEvents();
  for (Chart* c : w.charts())
    if (c->isVisible()) c->replot(QCustomPlot::rpImmediateRefresh);
  const QWidget* cover =
      w.welcomePage() && w.welcomePage()->isVisible() ? w.welcomePage() : nullptr;
  QList<test::TextBox> boxes = test::widgetTextBoxes(&w, cover);
  for (Chart* c : w.charts())
    if (!cover && ChartHub::isInView(c)) boxes += test::chartTextBoxes(c);
  QStringList out;
  for (const QString& c : test::clipped(boxes)) out << where + ": clipped: " + c;
  for (const QString& o : test::overlapping(boxes)) out << where + ": overlap: " + o;
  return out;
}

QString lookDir(const QString& row) {
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots/look/" + row;
  QDir().mkpath(dir);
  return dir;
}

}  // namespace

class TestWindowLook : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // settings, progress, cards: never a learner's
    Settings::open()->clear();
    QFile::remove(lessons::Progress::defaultPath());  // every run starts as a new learner
    QFile::remove(lessons::FlashcardDeck::defaultPath());
    QApplication::setStyle("Fusion");
    captureDesktopPalette();
  }

  void window_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<int>("theme");
    QTest::newRow("1600x1000-light") << QSize(1600, 1000) << int(Theme::Light);
    QTest::newRow("1600x1000-dark") << QSize(1600, 1000) << int(Theme::Dark);
    QTest::newRow("1280x720-light") << QSize(1280, 720) << int(Theme::Light);
    QTest::newRow("1280x720-dark") << QSize(1280, 720) << int(Theme::Dark);
  }

  void window() {
    QFETCH(QSize, size);
    QFETCH(int, theme);
    const QString dir = lookDir(QTest::currentDataTag());
    QFile::remove(lessons::Progress::defaultPath());  // each view as a new learner sees it
    QFile::remove(lessons::FlashcardDeck::defaultPath());
    QStringList problems;
    MainWindow w;
    w.setTheme(Theme(theme));
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));

    // The first start: the welcome over the charts.
    w.showWelcome();
    problems += textProblems(w, "welcome");
    QVERIFY(w.grab().save(dir + "/welcome.png"));
    w.welcomePage()->findChild<QPushButton*>("welcome-free")->click();

    // A real run fills the run's charts; a real sweep of two points fills the sweep panel.
    const RunConfig moe = moeConfig();
    QVERIFY2(!moe.validate(), moe.validate().value_or("").c_str());
    w.configPanel()->setConfig(moe);
    QSignalSpy ended(&w, &MainWindow::runEnded);
    w.startAction()->trigger();
    QVERIFY(!ended.isEmpty() || ended.wait(60000));  // a run may end inside Start
    QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
    QTest::qWait(2 * ChartHub::kSnapshotChartMs);  // the last-step charts catch up
    problems += textProblems(w, "settings");
    QVERIFY(w.grab().save(dir + "/window.png"));
    // (The mixture of experts cannot run at 1 rank with ep 4: the sweep measures an MLP.)
    RunConfig mlp = moe;
    mlp.model = ModelKind::Mlp;
    mlp.ep = 1;
    w.configPanel()->setConfig(mlp);
    w.sweepPanel()->setRanks("1, 2");
    w.sweepPanel()->setSteps(2, 0);
    w.sweepAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(!w.sweepPanel()->isRunning(), 60000);
    problems += textProblems(w, "sweep panel");
    QVERIFY(w.grab().save(dir + "/sweep-panel.png"));

    // Every chart in front in turn.
    for (Chart* c : w.charts()) {
      w.chartHub()->dockOf(c)->raise();
      problems += textProblems(w, "chart " + c->stem());
      QVERIFY(w.grab().save(dir + "/chart-" + c->stem() + ".png"));
    }
    // The speedup chart with sweeps chosen to be hard to label: points close together (their
    // efficiency labels near each other), then a fit outside 0..1 (said in words).
    auto* speedup = w.chartHub()->find<SpeedupChart>();
    w.chartHub()->dockOf(speedup)->raise();
    const std::pair<const char*, std::vector<double>> sweeps[] = {
        {"crowded", {10, 6.2, 4.1, 3.3, 3.0}}, {"nofit", {10, 12, 15, 22, 30}}};
    for (const auto& [name, ms] : sweeps) {
      SweepResult r = analyseSweep(Scaling::Strong, {1, 2, 4, 8, 16}, ms, 512);
      r.cores = 2;
      emit w.sweepPanel()->sweepFinished(r);
      problems += textProblems(w, QString("speedup, %1 sweep").arg(name));
      QVERIFY(w.grab().save(dir + "/chart-speedup-" + name + ".png"));
    }

    // Every page of every lesson, in the window's lessons column.
    w.lessonDock()->raise();
    LessonDock* dock = w.lessonDock();
    for (int l = 0; l < dock->lessons().size(); ++l) {
      dock->openLesson(l);
      for (int p = 0; p < dock->pageCount(); ++p) {
        dock->openPage(p);
        const QString page =
            QString("%1-%2").arg(dock->lessons()[l].slug).arg(p, 2, 10, QChar('0'));
        problems += textProblems(w, "lesson " + page);
        QVERIFY(dock->grab().save(dir + "/lesson-" + page + ".png"));
      }
    }

    // A step's comparison at its longest: two attempts locked, the reference and the
    // measurement with its explanation.
    for (int l = 0; l < dock->lessons().size(); ++l)
      if (dock->lessons()[l].slug == "02-amdahl") dock->openLesson(l);
    dock->openPage(2);
    for (const char* typed : {"6.5", "5.9"}) {
      if (dock->predictionLocked()) dock->findChild<QPushButton*>("lessonLock")->click();
      dock->findChild<QLineEdit*>("lessonPrediction")->setText(typed);
      dock->findChild<QPushButton*>("lessonLock")->click();
    }
    QJsonArray points;
    for (auto [n, sp] : {std::pair{1, 1.0}, {2, 1.8}, {4, 3.1}, {8, 4.25}})
      points.append(QJsonObject{{"ranks", n}, {"speedup", sp}});
    dock->showSweepResult(QJsonObject{{"points", points}});
    problems += textProblems(w, "lesson comparison");
    QVERIFY(dock->grab().save(dir + "/lesson-compare.png"));

    // The export dialog over the window.
    ExportPanel panel(w.charts().first(), "/home/learner/coursework", &w);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QList<test::TextBox> boxes = test::widgetTextBoxes(&panel);
    for (const QString& c : test::clipped(boxes)) problems << "export dialog: clipped: " + c;
    for (const QString& o : test::overlapping(boxes)) problems << "export dialog: overlap: " + o;
    QVERIFY(panel.grab().save(dir + "/export-dialog.png"));

    QApplication::setPalette(lightPalette());
    // Each problem once, with the first view it was seen in and how many showed it.
    QMap<QString, QStringList> seen;
    for (const QString& p : problems) seen[p.section(": ", 1)] << p.section(": ", 0, 0);
    QStringList report;
    for (auto it = seen.begin(); it != seen.end(); ++it)
      report << QString("%1 (in %2 and %3 more views)")
                    .arg(it.key(), it.value().first())
                    .arg(it.value().size() - 1);
    for (const QString& r : report) qWarning("%s", qPrintable(r));
    QVERIFY2(
        report.isEmpty(),
        qPrintable(QString("%1 texts clipped or overlapping (listed above)").arg(report.size())));
  }

  // Made smaller and grown back, the window gives the charts their width back (the settings
  // column does not keep what the charts gave up).
  void chartsGetTheirWidthBack() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTest::qWait(50);
    auto widths = [&] {
      QList<int> out{w.lessonDock()->width()};
      for (Chart* c : w.charts())
        if (ChartHub::isInView(c)) out << w.chartHub()->dockOf(c)->width();
      return out;
    };
    const QList<int> before = widths();
    w.resize(1280, 720);
    QTest::qWait(100);
    QVERIFY(widths() != before);  // the charts gave up some width
    w.resize(1600, 1000);
    auto same = [&] {
      const QList<int> now = widths();
      if (now.size() != before.size()) return false;
      for (int i = 0; i < now.size(); ++i)
        if (std::abs(now[i] - before[i]) > 2) return false;
      return true;
    };
    QTRY_VERIFY_WITH_TIMEOUT(same(), 3000);
  }
};

QTEST_MAIN(TestWindowLook)
#include "tst_window_look.moc"
