// When ranks fail, in the window (offscreen): a hung run (--hang 2@5 on 4 thread ranks) fills the
// "Flight recorder" table, its marked cell rank 2's missing collective, and the exported CSV
// agrees with paralab-run's failure line for the same run; a run that did not hang leaves the
// table empty and out of Export All. A straggler set on purpose is marked from the measured
// compute (status bar, timeline); an even run marks nobody. The goodput sweep runs from the
// sweep panel into its chart. Run: ctest -R tst_window_failures
// --output-on-failure
#include <QDir>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "charts/flight_recorder_chart.h"
#include "charts/goodput_chart.h"
#include "charts/timeline_chart.h"
#include "export/chart_export.h"
#include "main_window.h"
#include "panels/sweep_panel.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::quickConfig;
using paralab::test::readLines;

namespace {

RunConfig hungConfig() {
  RunConfig c = quickConfig(8, 4);
  c.hang = "2@5";
  c.timeoutS = 1;
  c.evalEvery = 0;
  return c;
}

FlightRecorderChart* recorderOf(MainWindow& w) {
  for (Chart* c : w.charts())
    if (auto* f = qobject_cast<FlightRecorderChart*>(c)) return f;
  return nullptr;
}

// paralab-run's last line for the settings the window exported (run-config.json):
// {"failure", "flight_recorder"}.
nlohmann::json failureLineOfCli(const QString& configFile) {
  QProcess p;
  p.start(PARALAB_RUN_EXE, {"--config", configFile, "--json"});
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    return {};
  }
  const QStringList lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  return nlohmann::json::parse(lines.back().toStdString(), nullptr, false);
}

// Trains 3 thread ranks, compute-heavy enough that a step's compute is milliseconds, with
// `straggler` set; the rank the window marks at the end (-1: none), checked alike in the status
// bar and on the timeline.
int stragglerMarkedIn(const char* straggler) {
  MainWindow w;
  RunConfig c = quickConfig(16, 3);
  c.hidden = 256;
  c.batch = 192;
  c.evalEvery = 0;
  c.straggler = straggler;
  w.configPanel()->setConfig(c);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return -2;
  w.startAction()->trigger();
  if (!QTest::qWaitFor([&] { return w.runState() == RunState::Finished; }, 120000)) return -6;
  auto* label = w.findChild<QLabel*>("stragglerLabel");
  auto* timeline = [&]() -> TimelineChart* {
    for (Chart* ch : w.charts())
      if (auto* t = qobject_cast<TimelineChart*>(ch)) return t;
    return nullptr;
  }();
  if (!label || !timeline) return -3;
  QString onTimeline;
  for (int i = 0; i < timeline->itemCount(); ++i)
    if (auto* t = qobject_cast<QCPItemText*>(timeline->item(i));
        t && t->visible() && t->text().startsWith("straggler: "))
      onTimeline = t->text();
  if (label->isHidden()) return onTimeline.isEmpty() ? -1 : -4;
  qInfo("%s", qPrintable(label->text()));
  const QString rank = label->text().section(' ', 2, 2);  // "Straggler: rank R (..."
  if (onTimeline != "straggler: rank " + rank) return -5;
  if (w.grab().save(test::screenshotDir() + "/straggler_window.png")) {
  }
  return rank.toInt();
}

}  // namespace

class TestWindowFailures : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { test::startAsANewLearner(); }

  void hangFillsTheFlightRecorderTable() {
    MainWindow w;
    w.configPanel()->setConfig(hungConfig());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    FlightRecorderChart* table = recorderOf(w);
    QVERIFY(table);
    QVERIFY(table->showsNothing());
    w.startAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Failed, 30000);
    QVERIFY(!table->showsNothing());
    QCOMPARE(table->rowRanks(), (std::vector<int>{0, 1, 2, 3}));

    // One marked cell: rank 2's, in the collective ranks 0, 1 and 3 wait in.
    const HangDiagnosis& d = table->diagnosis();
    QVERIFY(d.found);
    QCOMPARE(d.missing, (std::vector<int>{2}));
    QCOMPARE(table->marked().size(), size_t(1));
    const auto [row, column] = table->marked().front();
    QCOMPARE(table->rowRanks()[size_t(row)], 2);
    const FlightRecorderChart::Column& col = table->columns()[size_t(column)];
    QCOMPARE(col.seq, d.seq);
    QCOMPARE(col.step, int64_t(5));
    QCOMPARE(table->cell(row, column), FlightRecorderChart::CellState::NeverIssued);
    for (int r : {0, 1, 3})
      QCOMPARE(table->cell(r, column), FlightRecorderChart::CellState::Waiting);
    // The collective before it, every rank finished.
    QVERIFY(column > 0);
    for (int r = 0; r < 4; ++r)
      QCOMPARE(table->cell(r, column - 1), FlightRecorderChart::CellState::Done);

    // Export All writes the table; its CSV agrees with paralab-run's failure line.
    QTemporaryDir dir;
    QStringList written;
    QCOMPARE(w.exportAllTo(dir.path(), &written), QString());
    QVERIFY(QFile::exists(dir.filePath("flight_recorder.png")));
    const QStringList csv = readLines(dir.filePath("flight_recorder.csv"));
    const nlohmann::json line = failureLineOfCli(dir.filePath("run-config.json"));
    QVERIFY2(line.is_object() && line.contains("flight_recorder"), "no failure line");
    const nlohmann::json& div = line.at("flight_recorder").at("divergence");
    QCOMPARE(div.at("seq").get<int64_t>(), d.seq);
    QCOMPARE(div.at("missing"), nlohmann::json::array({2}));
    // (rank, group, seq) -> (op, state) of the JSON's entries.
    std::map<std::tuple<int, std::string, int64_t>, std::pair<std::string, std::string>> json;
    for (const nlohmann::json& r : line.at("flight_recorder").at("ranks"))
      for (const nlohmann::json& e : r.at("entries"))
        json[{r.at("rank").get<int>(), e.at("group").get<std::string>(),
              e.at("seq").get<int64_t>()}] = {e.at("op").get<std::string>(),
                                              e.at("state").get<std::string>()};
    int rows = 0, compared = 0, marked = 0;
    for (const QString& l : csv) {
      if (l.startsWith('#') || l.startsWith("rank,")) continue;
      const QStringList f =
          l.split(',');  // rank,column,seq,op,group,step,bytes,purpose,state,divergent
      QVERIFY2(f.size() >= 10, qPrintable(l));
      ++rows;
      const std::tuple key{f[0].toInt(), f[4].toStdString(), f[2].toLongLong()};
      const QString state = f[f.size() - 2];
      if (f.back() == "1") {
        ++marked;
        QCOMPARE(f[0].toInt(), div.at("missing")[0].get<int>());
        QCOMPARE(f[2].toLongLong(), div.at("seq").get<int64_t>());
        QCOMPARE(state, QString("never issued"));
      }
      const auto it = json.find(key);
      if (state == "done" || state == "issued") {
        if (it == json.end()) continue;  // older than the JSON's last 8 of that rank
        ++compared;
        QCOMPARE(QString::fromStdString(it->second.first), f[3]);
        QCOMPARE(QString::fromStdString(it->second.second), state);
      } else {
        QVERIFY2(it == json.end(),
                 qPrintable("the JSON holds what the table says is absent: " + l));
      }
    }
    QCOMPARE(rows, 4 * int(table->columns().size()));
    QCOMPARE(marked, 1);
    QVERIFY(compared >= 4 * 3);  // at least the last three collectives of every rank
    w.grab().save(test::screenshotDir() + "/flight_recorder_window.png");
  }

  // An MPI job's processes each print their recorder beside their output (stderr): the job's
  // run control reads those lines into the same report, and the table marks the same cell.
  void mpiDumpLinesGiveTheSameTable() {
    std::string text = "paralab: allreduce on group 'dp' timed out after 1 s on world rank 0\n";
    for (int rank = 0; rank < 4; ++rank) {
      RankFlight f;
      f.rank = rank;
      f.groups = {{"dp", {0, 1, 2, 3}}};
      for (int64_t seq = 1; seq <= (rank == 2 ? 4 : 5); ++seq)
        f.entries.push_back({seq, "allreduce", "dp", 4096, seq, "gradients", seq < 5});
      text += "paralab: flight recorder of world rank " + std::to_string(rank) + ": " +
              flightToJson({f}, HangDiagnosis{}, 64).dump() + "\n";
    }
    const std::optional<FlightReport> report = flightFromDumpLines(text);
    QVERIFY(report);
    QCOMPARE(report->ranks.size(), size_t(4));
    QCOMPARE(report->diagnosis.missing, (std::vector<int>{2}));
    QCOMPARE(report->diagnosis.waiting, (std::vector<int>{0, 1, 3}));
    QCOMPARE(report->diagnosis.seq, int64_t(5));
    FlightRecorderChart table;
    table.showFlight(*report);
    QCOMPARE(table.marked(), (std::vector<std::pair<int, int>>{{2, 4}}));
    QVERIFY(!flightFromDumpLines("paralab: world rank 1 aborted the job\n"));
  }

  void noHangLeavesTheTableOutOfExports() {
    MainWindow w;
    w.configPanel()->setConfig(quickConfig(3, 2));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.startAction()->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Finished, 30000);
    FlightRecorderChart* table = recorderOf(w);
    QVERIFY(table && table->showsNothing());
    QTemporaryDir dir;
    QCOMPARE(w.exportAllTo(dir.path()), QString());
    QVERIFY(QFile::exists(dir.filePath("loss.csv")));
    QVERIFY(!QFile::exists(dir.filePath("flight_recorder.csv")));
    QVERIFY(!QFile::exists(dir.filePath("flight_recorder.png")));
  }

  // A rank slowed on purpose (--straggler 1=4, emulated) is marked from the measured compute:
  // the status bar names it and the timeline marks its row; an even run marks nobody.
  void stragglerIsMarked() {
    const int marked = stragglerMarkedIn("1=4");
    QCOMPARE(marked, 1);
  }

  void evenRunMarksNobody() { QCOMPARE(stragglerMarkedIn("none"), -1); }

  // The goodput sweep from the window: the sweep panel over "checkpoint interval K" runs the
  // engine's goodput sweep job and the Goodput chart draws its points beside Young/Daly's K; its
  // CSV holds the points and the measured C.
  void goodputSweepRunsFromTheWindow() {
    MainWindow w;
    w.configPanel()->setConfig(quickConfig(10, 1));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    SweepPanel* panel = w.sweepPanel();
    panel->setOver(SweepPanel::Over::CheckpointInterval, 0.05);
    panel->setRanks("2, 8, 32");
    panel->setSteps(300, 0);
    QCOMPARE(panel->run(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isRunning(), 240000);
    QVERIFY(panel->goodputResult());
    const GoodputSweepResult& r = *panel->goodputResult();
    QCOMPARE(r.points.size(), size_t(3));
    GoodputChart* chart = nullptr;
    for (Chart* c : w.charts())
      if (auto* g = qobject_cast<GoodputChart*>(c)) chart = g;
    QVERIFY(chart && !chart->showsNothing());
    QCOMPARE(chart->measured()->dataCount(), 3);
    for (const GoodputPoint& p : r.points) {
      QVERIFY(p.failures > 0 && p.goodput > 0);
      QCOMPARE(chart->measured()->data()->findBegin(p.checkpointEvery, false)->value, p.goodput);
    }
    QCOMPARE(chart->youngDaly()->dataCount(), 2);  // a vertical line at Young/Daly's K
    QCOMPARE(chart->youngDaly()->data()->at(0)->key, r.youngDalySteps);
    QTemporaryDir dir;
    QCOMPARE(exportChart(*chart, dir.filePath("goodput.csv"), ExportFormat::Csv), QString());
    const QStringList csv = readLines(dir.filePath("goodput.csv"));
    QVERIFY(csv.join('\n').contains(QString("best_k %1").arg(r.bestK)));
    QCOMPARE(csv.filter(QRegularExpression("^(2|8|32),")).size(), 3);
    w.grab().save(test::screenshotDir() + "/goodput_sweep_window.png");
  }
};

QTEST_MAIN(TestWindowFailures)
#include "tst_window_failures.moc"
