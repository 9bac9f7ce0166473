// Faults on purpose in the window, offscreen: a failing rank set in the settings panel ends the
// run with its one message while the window stays responsive, and Reset then Start runs again;
// a straggler set while training is applied live and labelled "emulated" in the charts'
// subtitle and the steps' figures. Run: ctest -R tst_window_faults --output-on-failure
#include <QApplication>
#include <QLineEdit>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTest>
#include <QTimer>

#include "charts/chart.h"
#include "charts/chart_hub.h"
#include "charts/loss_chart.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "settings.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;
using paralab::test::quickConfig;

namespace {

// Types `text` into the panel's control for `key` as a learner would: the text, then Enter.
void type(ConfigPanel* panel, const char* key, const QString& text) {
  auto* edit = child<QLineEdit>(panel, key);
  QVERIFY2(edit && edit->isEnabled(), key);
  edit->setFocus();
  edit->selectAll();
  QTest::keyClicks(edit, text);
  QTest::keyClick(edit, Qt::Key_Return);
}

QString subtitleOf(MainWindow& w) {
  for (Chart* c : w.charts())
    if (qobject_cast<LossChart*>(c)) return c->subtitle();
  return {};
}

}  // namespace

class TestWindowFaults : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // settings never go to a learner's store
    QFile::remove(Settings::open()->fileName());
  }

  void failingRankIsReportedAndResetRunsAgain() {
    MainWindow w;
    w.configPanel()->setConfig(quickConfig(0, 2));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    type(w.configPanel(), "fail", "1@3");
    QCOMPARE(QString::fromStdString(w.configPanel()->config().fail), QString("1@3"));
    w.startAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Failed, 20000);
    const QString message =
        "rank 1 failed at step 3 after its backward: injected failure "
        "(--fail 1@3)";
    QVERIFY2(w.statusBar()->currentMessage().contains(message),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(w.history().stepsSeen(), int64_t(2));  // the steps before the failure are kept
    QVERIFY(!QApplication::activeModalWidget());    // no dialog holds the learner up
    // Responsive: the event loop turns while the failed run is shown.
    bool turned = false;
    QTimer::singleShot(0, [&] { turned = true; });
    QTRY_VERIFY_WITH_TIMEOUT(turned, 1000);

    // Reset, take the failure out, Start again: a healthy run.
    QVERIFY(w.resetAction()->isEnabled());
    w.resetAction()->trigger();
    type(w.configPanel(), "fail", "none");
    w.startAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 5, 20000);
    QVERIFY(w.runState() == RunState::Running || w.runState() == RunState::Finished);
    w.reset();
  }

  void stragglerChangesLiveAndIsLabelled() {
    MainWindow w;
    RunConfig c = quickConfig(0, 2);
    c.evalEvery = 0;
    w.configPanel()->setConfig(c);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.startAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 3, 20000);
    QVERIFY(!subtitleOf(w).contains("straggler"));
    type(w.configPanel(), "straggler", "1=3");
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(w.runConfig().straggler), QString("1=3"),
                              10000);
    QCOMPARE(w.liveChanges().size(), 1);
    QVERIFY2(w.liveChanges().front().contains("straggler"), qPrintable(w.liveChanges().front()));
    QVERIFY2(subtitleOf(w).contains("straggler 1=3 (emulated)"), qPrintable(subtitleOf(w)));
    // The steps after the change carry rank 1's emulated time, and only rank 1's.
    const int64_t changedAt = w.history().stepsSeen();
    QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= changedAt + 3, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(!w.chartHub()->lastSnapshot().steps.empty(), 5000);
    const StepMetrics& last = w.chartHub()->lastSnapshot().steps.back();
    QVERIFY(last.step > changedAt);
    QCOMPARE(int(last.ranks.size()), 2);
    QVERIFY(last.ranks[1].emulatedStragglerMs.value_or(0) > 0);
    QVERIFY(!last.ranks[0].emulatedStragglerMs);
    QCOMPARE(w.runState(), RunState::Running);
    w.reset();
  }
};

QTEST_MAIN(TestWindowFaults)
#include "tst_window_faults.moc"
