// The learner's own pipeline schedule in the window, offscreen: Schedule "Custom (grid)" and
// its grid editor; a cell edited into a broken order shows the checker's line in red and stops
// Start, fixed it runs with Start, and the timeline draws the planned grid beside the measured
// steps. Saves screenshots of the editor and the window at 1280×720 (build/screenshots/).
// Run: ctest -R tst_schedule_editor --output-on-failure
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>

#include "charts/timeline_chart.h"
#include "main_window.h"
#include "panels/schedule_editor.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;

class TestScheduleEditor : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::startAsANewLearner(); }
  void editCheckAndRun();
};

namespace {

void clickCell(QTableWidget* grid, int row, int column) {
  const QRect cell = grid->visualRect(grid->model()->index(row, column));
  QTest::mouseClick(grid->viewport(), Qt::LeftButton, {}, cell.center());
}

bool legendSays(QCustomPlot* plot, const QString& words) {
  for (int i = 0; i < plot->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
      if (item->plottable()->name().contains(words)) return true;
  return false;
}

}  // namespace

void TestScheduleEditor::editCheckAndRun() {
  MainWindow w;
  w.resize(1280, 720);
  RunConfig c = test::quickConfig(6, 2);
  c.pp = 2;
  c.microbatches = 2;
  c.evalEvery = 0;
  w.configPanel()->setConfig(c);
  auto* editor = w.findChild<ScheduleEditor*>("scheduleEditor");
  QVERIFY(editor);
  auto* box = child<QComboBox>(w.configPanel(), "schedule");
  const int custom = box->findData(ScheduleEditor::path());
  QVERIFY(custom >= 0);
  box->setCurrentIndex(custom);
  QCOMPARE(w.configPanel()->config().schedule, ScheduleEditor::path().toStdString());
  child<QPushButton>(w.configPanel(), "editSchedule")->click();
  QVERIFY(editor->isVisible());
  QCOMPARE(editor->shape().stages, 2);
  QCOMPARE(editor->shape().micros, 2);

  // 1F1B to start from: it runs, and says each rank's peak.
  editor->fillFrom(PipeSchedule::OneFOneB);
  QVERIFY2(editor->valid(), qPrintable(editor->verdict()));
  QVERIFY(editor->verdict().startsWith("Runs. Peak micro-batches in flight per rank: 2 · 1."));
  QVERIFY2(w.configPanel()->problem().isEmpty(), qPrintable(w.configPanel()->problem()));
  QVERIFY(w.startAction()->isEnabled());

  // B1 clicked into rank 1's first slot, before its F1: refused, in red, Start off.
  auto* grid = child<QTableWidget>(editor, "scheduleGrid");
  editor->setTool('B', 1);
  clickCell(grid, 1, 0);
  const QString line = "rank 1, action 1 (B1): B before its F (F1 is at action 3)";
  QCOMPARE(editor->verdict(), line);
  QVERIFY(child<QLabel>(editor, "scheduleVerdict")->styleSheet().contains("#c62828"));
  QVERIFY(w.configPanel()->problem().contains(line));
  QVERIFY(!w.startAction()->isEnabled());
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  editor->resize(900, 380);
  QVERIFY(editor->grab().save(dir + "/schedule-editor-refused.png"));

  // F0 back in its place: it runs again, and Start runs the grid.
  editor->setTool('F', 0);
  clickCell(grid, 1, 0);
  QVERIFY2(editor->valid(), qPrintable(editor->verdict()));
  QVERIFY(w.startAction()->isEnabled());
  QVERIFY(editor->grab().save(dir + "/schedule-editor.png"));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
  QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
  QCOMPARE(w.runConfig().schedule, ScheduleEditor::path().toStdString());

  // The timeline: the measured steps, and the planned grid beside them.
  auto* timeline = w.chartHub()->find<TimelineChart>();
  QVERIFY(timeline);
  QCOMPARE(timeline->plan(), editor->grid());
  QTRY_VERIFY_WITH_TIMEOUT(!timeline->bars().empty(), 10000);
  QVERIFY(legendSays(timeline, "planned grid"));
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.chartHub()->dockOf(timeline)->raise();
  QTest::qWait(150);
  QVERIFY(w.grab().save(dir + "/window-custom-schedule.png"));

  // Another schedule chosen: the timeline draws no plan.
  box->setCurrentIndex(box->findData("1f1b"));
  QVERIFY(timeline->plan().empty());
}

QTEST_MAIN(TestScheduleEditor)
#include "tst_schedule_editor.moc"
