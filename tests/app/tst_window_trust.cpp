// The window never shows a learner something other than what it says: each chart's subtitle is
// the configuration of the data it holds (run A, sweep B, run C), a sweep never times steps
// beside a training run, a sweep that cannot run clears what it would have replaced, and no
// combination of the parallelism controls strands the learner behind a greyed-out setting.
// Nothing is lost unasked: a lesson's Run and Quit ask before they end a paused run or replace
// the learner's settings. A first start opens on a welcome that offers a way in and remembers
// it, the Lessons tab first. Run: ctest -R tst_window_trust --output-on-failure
#include <QAbstractButton>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <nlohmann/json.hpp>

#include "charts/chart_hub.h"
#include "charts/loss_chart.h"
#include "charts/speedup_chart.h"
#include "export/chart_export.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "panels/welcome_page.h"
#include "settings.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;

namespace {

// The shared quick run (window_test.h), wider where asked and with no evaluation pauses.
RunConfig quickConfig(int steps, int ranks = 1, int hidden = 32) {
  RunConfig c = test::quickConfig(steps, ranks);
  c.hidden = hidden;
  c.evalEvery = 0;
  return c;
}

// Runs the window's settings to the end.
bool runToEnd(MainWindow& w) {
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  // A short run can end inside Start itself (its first poll): already caught counts.
  return (!ended.isEmpty() || ended.wait(30000)) && ended.at(0).at(0).toBool();
}

bool sweepToEnd(MainWindow& w, const QString& ranks) {
  w.sweepPanel()->setRanks(ranks);
  w.sweepPanel()->setSteps(4, 1);
  w.sweepAction()->trigger();
  if (!w.sweepPanel()->isRunning()) return false;
  QSignalSpy done(w.sweepPanel(), &SweepPanel::runningChanged);
  return done.wait(60000) && w.sweepPanel()->result().has_value();
}

// The question the window asks next (a QMessageBox it runs modally), answered with the button
// reading `button`: what it asked, and whether it asked at all.
struct Question {
  bool asked = false;
  QString text, losses;
};
void answerNextQuestion(const QString& button, Question* seen) {
  *seen = Question{};
  QTimer::singleShot(0, [button, seen] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    seen->asked = true;
    seen->text = box->text();
    seen->losses = box->informativeText();
    for (QAbstractButton* b : box->buttons())
      if (b->text().remove('&') == button) return b->click();
  });
}

// Opens lesson `slug` at its first step and locks a prediction there.
void openFirstStep(LessonDock* dock, const QString& slug) {
  for (int i = 0; i < dock->lessons().size(); ++i)
    if (dock->lessons()[i].slug == slug) dock->openLesson(i);
  dock->openPage(1);
  if (!dock->predictionLocked()) {
    dock->findChild<QLineEdit*>("lessonPrediction")->setText("2");
    dock->findChild<QPushButton*>("lessonLock")->click();
  }
}

// The tab bar of the dock group holding the dock titled `title`.
QTabBar* tabBarWith(QMainWindow& w, const QString& title) {
  for (QTabBar* bar : w.findChildren<QTabBar*>())
    for (int i = 0; i < bar->count(); ++i)
      if (bar->tabText(i) == title) return bar;
  return nullptr;
}

// The control whose form label reads `text` ("ZeRO stage"), or nullptr.
QWidget* controlLabelled(ConfigPanel* panel, const QString& text) {
  for (QLabel* label : panel->findChildren<QLabel*>())
    if (label->buddy() && label->text().remove('&').trimmed() == text) return label->buddy();
  return nullptr;
}

}  // namespace

class TestWindowTrust : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void chartsNameTheRunTheirDataCameFrom();
  void sweepPausesATrainingRunFirst();
  void sweepThatCannotRunClearsItsTable();
  void noSettingStrandsTheLearner();
  void exportsCreateTheirFolder();
  void welcomeOffersAWayIn();
  void lessonAsksBeforeReplacing();
  void quitAsksWhileARunIsOpen();
  void openRunShowsTheRecordedRun();
};

void TestWindowTrust::initTestCase() {
  // Settings, lesson progress and cards go to Qt's test locations, never a learner's.
  QStandardPaths::setTestModeEnabled(true);
  Settings::open()->clear();
  // Lesson progress too: a prediction locked by an earlier run of this test would stay locked.
  QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
}

// Run A (H=32), sweep B (H=48, 1 and 2 ranks), run C (H=64, 2 ranks), Reset: each chart says
// the settings of the data it draws, and a run brings its own charts to the front.
void TestWindowTrust::chartsNameTheRunTheirDataCameFrom() {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  auto* loss = w.chartHub()->find<LossChart>();
  auto* speedup = w.chartHub()->find<SpeedupChart>();

  w.configPanel()->setConfig(quickConfig(20, 1, 32));
  QVERIFY(runToEnd(w));
  QVERIFY2(loss->subtitle().contains("H=32"), qPrintable(loss->subtitle()));
  QVERIFY(ChartHub::isInView(loss));

  w.configPanel()->setConfig(quickConfig(20, 1, 48));
  QVERIFY(sweepToEnd(w, "1, 2"));
  // The fit, in range or not, says what it stands on: the ranks and whether they had a core.
  const QString fit = child<QLabel>(w.sweepPanel(), "sweepStatus")->text();
  QVERIFY2(fit.contains("ranks 1–2, " +
                        QString(machineCores() >= 2 ? "a core each" : "cores shared past 1")),
           qPrintable(fit));
  // The same steps at 1 and 2 ranks (strong scaling, sync): the loss curves coincide, said
  // with the measured gap.
  const QRegularExpressionMatch gap =
      QRegularExpression("Loss curves: at most ([0-9.e+-]+) nats").match(fit);
  QVERIFY2(gap.hasMatch() && gap.captured(1).toDouble() < 1e-5, qPrintable(fit));
  QVERIFY2(speedup->subtitle().contains("H=48"), qPrintable(speedup->subtitle()));
  QVERIFY2(speedup->subtitle().contains("ranks 1, 2"), qPrintable(speedup->subtitle()));
  QVERIFY(ChartHub::isInView(speedup));  // a new sweep comes forward
  QVERIFY2(loss->subtitle().contains("H=32"), qPrintable(loss->subtitle()));  // still run A's
  const int sweepPoints = speedup->measured()->dataCount();
  QCOMPARE(sweepPoints, 2);

  w.configPanel()->setConfig(quickConfig(20, 2, 64));
  QVERIFY(runToEnd(w));
  QTest::qWait(50);
  QVERIFY2(loss->subtitle().contains("H=64"), qPrintable(loss->subtitle()));
  QVERIFY2(loss->subtitle().contains("2 ranks"), qPrintable(loss->subtitle()));
  // The sweep keeps its own data and its own words; the run's charts are in front of it.
  QVERIFY2(speedup->subtitle().contains("H=48"), qPrintable(speedup->subtitle()));
  QVERIFY2(!speedup->subtitle().contains("H=64"), qPrintable(speedup->subtitle()));
  QCOMPARE(speedup->measured()->dataCount(), sweepPoints);
  QVERIFY(ChartHub::isInView(loss));
  QVERIFY(!ChartHub::isInView(speedup));

  w.resetAction()->trigger();
  QVERIFY(loss->subtitle().isEmpty());
  QVERIFY2(speedup->subtitle().contains("H=48"), qPrintable(speedup->subtitle()));
  QCOMPARE(speedup->measured()->dataCount(), sweepPoints);
  QVERIFY(ChartHub::isInView(loss));
}

// A sweep times steps; a run training beside it would halve what each measures. Starting a
// sweep pauses the run and says so; nothing starts while the sweep measures.
void TestWindowTrust::sweepPausesATrainingRunFirst() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(1000000));
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() > 5, 20000);
  QCOMPARE(w.runState(), RunState::Running);

  w.sweepPanel()->setRanks("1, 2");
  w.sweepPanel()->setSteps(300, 1);
  w.sweepAction()->trigger();
  QVERIFY(w.sweepPanel()->isRunning());
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Paused, 5000);
  auto* status = child<QLabel>(w.sweepPanel(), "sweepStatus");
  QVERIFY2(status->text().contains("paused"), qPrintable(status->text()));
  // While it measures, the run cannot be resumed or stepped.
  QVERIFY(!w.startAction()->isEnabled());
  QVERIFY(!w.stepAction()->isEnabled());
  QVERIFY(w.startAction()->toolTip().contains("sweep"));
  const int64_t steps = w.history().stepsSeen();
  w.start();  // a shortcut or a lesson cannot sneak past it either
  QTest::qWait(200);
  QCOMPARE(w.runState(), RunState::Paused);
  QCOMPARE(w.history().stepsSeen(), steps);

  QTRY_VERIFY_WITH_TIMEOUT(!w.sweepPanel()->isRunning(), 60000);
  QVERIFY(w.startAction()->isEnabled());
  QVERIFY(w.startAction()->text().remove('&').contains("Resume"));
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Running, 5000);
  w.resetAction()->trigger();
}

// A sweep of settings that cannot run at one rank (tp × pp = 4) is refused in plain words and
// leaves no earlier table or full progress bar behind as if it had measured.
void TestWindowTrust::sweepThatCannotRunClearsItsTable() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(20));
  QVERIFY(sweepToEnd(w, "1, 2"));
  auto* table = child<QTableWidget>(w.sweepPanel(), "sweepTable");
  auto* progress = child<QProgressBar>(w.sweepPanel(), "sweepProgress");
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(progress->value(), progress->maximum());

  RunConfig c = quickConfig(20, 4);
  c.tp = 2;
  c.pp = 2;
  w.configPanel()->setConfig(c);
  QVERIFY(w.configPanel()->isValid());  // a fine run, but not at 1 rank
  const QString why = w.sweepPanel()->run();
  QVERIFY(!why.isEmpty());
  QVERIFY(!w.sweepPanel()->isRunning());
  QCOMPARE(table->rowCount(), 0);
  QCOMPARE(progress->value(), 0);
  const QString status = child<QLabel>(w.sweepPanel(), "sweepStatus")->text();
  QVERIFY2(status.startsWith("Cannot sweep: at 1 rank:"), qPrintable(status));
  QVERIFY2(status.contains("Change"), qPrintable(status));
}

// Every strategy × ZeRO stage × tp × pp the panel offers, picked in any order a learner might
// (ZeRO and the degrees first, then the strategy, then every other strategy): the settings
// run, or the line under the panel names a control the learner can reach and change.
void TestWindowTrust::noSettingStrandsTheLearner() {
  ConfigPanel panel;
  RunConfig base = quickConfig(20, 4);
  base.layers = 2;
  panel.setConfig(base);
  auto* strategy = child<QComboBox>(&panel, "strategy");
  auto* zero = child<QComboBox>(&panel, "zero");
  auto* tp = child<QSpinBox>(&panel, "tp");
  auto* pp = child<QSpinBox>(&panel, "pp");
  QVERIFY(strategy && zero && tp && pp);
  QVERIFY(strategy->count() >= 5);

  // "" when the settings shown run or say what to change with a control that can be changed.
  auto stranded = [&](const QString& how) -> QString {
    if (panel.isValid()) return {};
    const QString problem = panel.problem();
    QWidget* control = controlLabelled(&panel, problem.section(':', 0, 0));
    if (!control) return how + ": the problem names no control: " + problem;
    if (!control->isEnabled() || !control->isVisibleTo(&panel))
      return how + ": the problem names a control that cannot be changed: " + problem;
    return {};
  };
  auto pick = [](QComboBox* box, int i) {
    if (box->isEnabled()) box->setCurrentIndex(i);
  };
  int combinations = 0, valid = 0;
  for (int s = 0; s < strategy->count(); ++s)
    for (int z = 0; z < zero->count(); ++z)
      for (int t : {1, 2})
        for (int p : {1, 2}) {
          panel.setConfig(base);
          pick(strategy, strategy->findData("sync"));
          pick(zero, z);
          if (tp->isEnabled()) tp->setValue(t);
          if (pp->isEnabled()) pp->setValue(p);
          pick(strategy, s);
          const QString how = QString("strategy %1, ZeRO %2, tp %3, pp %4")
                                  .arg(strategy->itemText(s))
                                  .arg(z)
                                  .arg(t)
                                  .arg(p);
          QString why = stranded(how);
          QVERIFY2(why.isEmpty(), qPrintable(why));
          ++combinations;
          valid += panel.isValid();
          // Switching away to any strategy offered never strands either.
          for (int other = 0; other < strategy->count(); ++other) {
            if (!strategy->isEnabled()) break;
            strategy->setCurrentIndex(other);
            why = stranded(how + " → " + strategy->itemText(other));
            QVERIFY2(why.isEmpty(), qPrintable(why));
          }
        }
  qInfo("%d combinations walked, %d run as picked", combinations, valid);

  // The case a student met: ZeRO 2 with sync, then Hogwild. ZeRO greys out and the run goes.
  panel.setConfig(base);
  strategy->setCurrentIndex(strategy->findData("sync"));
  zero->setCurrentIndex(zero->findData("2"));
  strategy->setCurrentIndex(strategy->findData("hogwild"));
  QVERIFY(!zero->isEnabled());
  QVERIFY2(panel.isValid(), qPrintable(panel.problem()));
  QCOMPARE(panel.config().zero, 0);
  QCOMPARE(panel.config().strategy, std::string("hogwild"));
  // Greyed, ZeRO reads the stage in effect; back to sync it stays there, not the stage chosen
  // before, which would come back unasked.
  QCOMPARE(zero->currentData().toString(), QString("0"));
  strategy->setCurrentIndex(strategy->findData("sync"));
  QCOMPARE(panel.config().zero, 0);
}

// A first export on a new account goes to a Documents folder that does not exist yet; a
// settings file saved as "run" is "run.json".
void TestWindowTrust::exportsCreateTheirFolder() {
  QTemporaryDir dir;
  MainWindow w;
  const QString nested = dir.filePath("Documents/ParaLab/figures/loss.png");
  QCOMPARE(exportChart(*w.charts().first(), nested, ExportFormat::Png), QString());
  QVERIFY(QFileInfo(nested).size() > 0);
  const QString pdf = dir.filePath("other/loss.pdf");
  QCOMPARE(
      ExportPanel::exportChartAt(*w.charts().first(), pdf, ExportFormat::Pdf, QSize(800, 500), 96),
      QString());
  QVERIFY(QFileInfo(pdf).size() > 0);
  // A place that cannot be a folder is said, naming it.
  const QString blocked = dir.filePath("file");
  QFile(blocked).open(QIODevice::WriteOnly);
  const QString err = exportChart(*w.charts().first(), blocked + "/loss.png", ExportFormat::Png);
  QVERIFY2(err.contains(blocked), qPrintable(err));

  QCOMPARE(Settings::withJsonSuffix("/tmp/run"), QString("/tmp/run.json"));
  QCOMPARE(Settings::withJsonSuffix("/tmp/run.json"), QString("/tmp/run.json"));
  QCOMPARE(Settings::withJsonSuffix("/tmp/run.cfg"), QString("/tmp/run.cfg"));
}

// The first start opens on a welcome over the charts, not modal, offering "Start lesson 1" and
// "Free play"; the Lessons tab is the first of the left column and in front. The choice is
// remembered: the next start opens that way, with no welcome.
void TestWindowTrust::welcomeOffersAWayIn() {
  Settings::setStartChoice(QString());
  {
    MainWindow w;
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.restoreSettings(true);
    QTest::qWait(50);
    WelcomePage* welcome = w.welcomePage();
    QVERIFY(welcome && welcome->isVisible());
    QVERIFY(!QApplication::activeModalWidget());  // the rest of the window works
    QTabBar* left = tabBarWith(w, "Lessons");
    QVERIFY(left);
    QCOMPARE(left->tabText(0), QString("Lessons"));
    QCOMPARE(left->tabText(left->currentIndex()), QString("Lessons"));
    // It covers the charts, not the lessons it points at.
    const QRect lessons(w.lessonDock()->mapTo(&w, QPoint()), w.lessonDock()->size());
    QVERIFY(!welcome->geometry().intersects(lessons));
    QVERIFY(welcome->geometry().contains(
        QRect(w.charts().first()->mapTo(&w, QPoint()), w.charts().first()->size())));
    QVERIFY(welcome->findChild<QPushButton*>("welcome-free"));
    QVERIFY(welcome->findChild<QPushButton*>("welcome-open"));
    welcome->findChild<QPushButton*>("welcome-lesson")->click();
    QVERIFY(welcome->isHidden());
    QCOMPARE(w.lessonDock()->currentLesson(), 0);
    QCOMPARE(Settings::startChoice(), QString("lesson"));
  }
  {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.restoreSettings(true);
    QVERIFY(!w.welcomePage() || w.welcomePage()->isHidden());
    QTabBar* left = tabBarWith(w, "Lessons");
    QCOMPARE(left->tabText(left->currentIndex()), QString("Lessons"));
    w.showWelcome();  // Help > Welcome
    w.welcomePage()->findChild<QPushButton*>("welcome-free")->click();
    QCOMPARE(left->tabText(left->currentIndex()), QString("Run settings"));
    QCOMPARE(Settings::startChoice(), QString("free"));
  }
  MainWindow w;
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.restoreSettings(true);
  QTabBar* left = tabBarWith(w, "Lessons");
  QCOMPARE(left->tabText(left->currentIndex()), QString("Run settings"));
  Settings::setStartChoice(QString());
}

// A lesson's Run on top of a paused run of the learner's own settings asks first; Cancel keeps
// both, yes replaces them. With nothing to lose it asks nothing.
void TestWindowTrust::lessonAsksBeforeReplacing() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(1000000, 1, 40));
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() > 3, 20000);
  w.pauseAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Paused, 5000);
  const int64_t steps = w.history().stepsSeen();
  openFirstStep(w.lessonDock(), "01-serial-parallel");
  auto* run = w.lessonDock()->findChild<QPushButton*>("lessonRun");
  QVERIFY(run->isEnabled());

  Question q;
  answerNextQuestion("Cancel", &q);
  run->click();
  QVERIFY(q.asked);
  QVERIFY2(q.losses.contains("paused at step") && q.losses.contains("Your settings"),
           qPrintable(q.losses));
  QCOMPARE(w.runState(), RunState::Paused);  // nothing happened
  QCOMPARE(w.history().stepsSeen(), steps);
  QCOMPARE(w.configPanel()->config().hidden, 40);

  answerNextQuestion("Run the lesson", &q);
  QSignalSpy ended(&w, &MainWindow::runEnded);
  run->click();
  QVERIFY(q.asked);
  QCOMPARE(w.configPanel()->config().hidden, 256);
  QCOMPARE(w.runConfig().hidden, 256);
  QVERIFY(!ended.isEmpty() || ended.wait(60000));  // a run may end inside Start

  // The lesson's own settings, no run in progress: nothing to lose, nothing asked.
  answerNextQuestion("Cancel", &q);
  run->click();
  QTest::qWait(20);
  QVERIFY(!q.asked);
  QVERIFY(w.runState() == RunState::Loading || w.runState() == RunState::Running ||
          w.runState() == RunState::Finished);
  w.resetAction()->trigger();
}

// Quit (Ctrl+Q, the close button) with a paused run asks; Cancel keeps the window and the run.
void TestWindowTrust::quitAsksWhileARunIsOpen() {
  MainWindow w;
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  Question q;
  w.configPanel()->setConfig(quickConfig(1000000));
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() > 3, 20000);
  w.pauseAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Paused, 5000);
  answerNextQuestion("Cancel", &q);
  QVERIFY(!w.close());
  QVERIFY(q.asked);
  QVERIFY2(q.losses.contains("paused at step"), qPrintable(q.losses));
  QVERIFY(w.isVisible());
  QCOMPARE(w.runState(), RunState::Paused);
  answerNextQuestion("Quit", &q);
  QVERIFY(w.close());
  QVERIFY(q.asked);
  // Nothing open: it closes without a word.
  MainWindow idle;
  idle.show();
  answerNextQuestion("Cancel", &q);
  QVERIFY(idle.close());
  QVERIFY(!q.asked);
}

// Export all writes the run's every step (run.jsonl); File > Open Run shows it again, under its
// own settings, whatever the panel holds: the same steps, the same CSV. A broken or unfinished
// file is refused naming the line, and the run shown stays.
void TestWindowTrust::openRunShowsTheRecordedRun() {
  MainWindow w;
  auto* loss = w.chartHub()->find<LossChart>();
  w.configPanel()->setConfig(quickConfig(30, 2, 48));
  QVERIFY(runToEnd(w));
  QTemporaryDir first, second;
  QCOMPARE(w.exportAllTo(first.path()), QString());
  const QString path = first.filePath("run.jsonl");
  QCOMPARE(test::readLines(path).size(), 31);  // 30 steps, then the summary
  QVector<double> losses;
  for (const auto& r : w.history().rows()) losses << r.loss;

  w.resetAction()->trigger();
  w.configPanel()->setConfig(quickConfig(5, 1, 32));  // other settings on the panel
  QCOMPARE(w.openRunFile(path), QString());
  QCOMPARE(w.recordedFrom(), QString("run.jsonl"));
  QCOMPARE(w.history().stepsSeen(), int64_t(30));
  QVector<double> shown;
  for (const auto& r : w.history().rows()) shown << r.loss;
  QCOMPARE(shown, losses);
  for (const QString& needle : {"recorded in run.jsonl", "H=48", "2 ranks"})
    QVERIFY2(loss->subtitle().contains(needle), qPrintable(loss->subtitle()));
  QCOMPARE(w.runConfig().hidden, 48);
  QCOMPARE(w.exportAllTo(second.path()), QString());
  QCOMPARE(test::readLines(second.filePath("loss.csv")),
           test::readLines(first.filePath("loss.csv")));

  // Refused, naming the file and the line; what is shown stays.
  const QStringList lines = test::readLines(path);
  const auto write = [&](const QString& name, const QStringList& content) {
    QFile f(second.filePath(name));
    f.open(QIODevice::WriteOnly);
    f.write((content.join('\n') + '\n').toUtf8());
    return f.fileName();
  };
  QString err = w.openRunFile(write("broken.jsonl", {lines[0], "{\"loss\": x}", lines[1]}));
  QVERIFY2(err.startsWith("broken.jsonl: line 2: not a JSON object"), qPrintable(err));
  QString newer = lines[0];
  newer.replace("\"schema\":1", "\"schema\":7");
  err = w.openRunFile(write("newer.jsonl", {newer}));
  QCOMPARE(err, QString("newer.jsonl: line 1: schema: version 7 (this build reads version 1)"));
  QVERIFY(w.openRunFile(second.filePath("missing.jsonl")).startsWith("cannot open"));
  QCOMPARE(w.recordedFrom(), QString("run.jsonl"));
  QCOMPARE(w.history().stepsSeen(), int64_t(30));
  // Cut short: every complete step shown, their settings unknown, said in one line.
  QString notice;
  QCOMPARE(w.openRunFile(write("cut.jsonl", {lines[0], lines[1], lines[2].left(40)}), &notice),
           QString());
  QCOMPARE(notice, QString("cut.jsonl: line 3 is incomplete; showing the 2 steps before it"));
  QCOMPARE(w.history().stepsSeen(), int64_t(2));
  QVERIFY2(loss->subtitle().contains("settings unknown"), qPrintable(loss->subtitle()));
  QVERIFY2(!loss->subtitle().contains("H=48"), qPrintable(loss->subtitle()));
  QCOMPARE(w.openRunFile(write("stopped.jsonl", lines.mid(0, 10)), &notice), QString());
  QVERIFY2(notice.startsWith("stopped.jsonl: no summary line"), qPrintable(notice));
  QCOMPARE(w.history().stepsSeen(), int64_t(10));
  QVERIFY(!test::readLines(first.filePath("traffic.csv")).first().startsWith("#"));

  // A run whose bytes a library moved (MPI's collectives) under an emulated link: its charts and
  // every CSV say both.
  QStringList mpi;
  for (const QString& line : lines) {
    nlohmann::json j = nlohmann::json::parse(line.toStdString());
    if (j.contains("config")) {
      j["config"]["backend"] = "mpi", j["config"]["link"] = "nvlink";
    } else {
      for (auto& r : j["ranks"]) r["bytes_modelled"] = true;
      j["emulated"] = "nvlink";
    }
    mpi << QString::fromStdString(j.dump());
  }
  QCOMPARE(w.openRunFile(write("mpi.jsonl", mpi)), QString());
  for (const QString& needle : {"times measured, bytes modelled", "nvlink (emulated)"})
    QVERIFY2(loss->subtitle().contains(needle), qPrintable(loss->subtitle()));
  QVERIFY2(!loss->subtitle().contains("· measured ·"), qPrintable(loss->subtitle()));
  QTemporaryDir third;
  QCOMPARE(w.exportAllTo(third.path()), QString());
  for (const char* csv : {"traffic.csv", "loss.csv", "links.csv"}) {
    const QStringList out = test::readLines(third.filePath(csv));
    QVERIFY2(out.size() > 2 && out[0].startsWith("# emulated: the nvlink link") &&
                 out[1].startsWith("# bytes modelled: the library's collectives (--backend mpi)"),
             csv);
  }

  // A new run replaces it and says so no more.
  w.configPanel()->setConfig(quickConfig(5, 1, 32));
  QVERIFY(runToEnd(w));
  QVERIFY(w.recordedFrom().isEmpty());
  QVERIFY2(!loss->subtitle().contains("recorded"), qPrintable(loss->subtitle()));
}

QTEST_MAIN(TestWindowTrust)
#include "tst_window_trust.moc"
