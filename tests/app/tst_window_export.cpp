// The window's files, offscreen: the export panel writes a PNG at its dpi, Export All and the
// scripted export (paralab --steps N --export DIR) write every file in a form that parses, and
// an exported run.jsonl opens again with the same timeline and holdings map, saying what its
// lines left out. Settings stay out of the user's store. Run: ctest -R tst_window_export
// --output-on-failure
#include <algorithm>
#include <QAbstractItemView>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStyle>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocumentFragment>
#include <QThread>
#include <QXmlStreamReader>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "bench_runner.h"
#include "charts/bench_chart.h"
#include "charts/chart.h"
#include "cpu/gemm.h"
#include "engine_bridge.h"
#include "charts/chart_hub.h"
#include "charts/holdings_map.h"
#include "charts/loss_chart.h"
#include "charts/speedup_chart.h"
#include "charts/timeline_chart.h"
#include "export/chart_export.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "panels/lesson_dock.h"
#include "panels/sweep_panel.h"
#include "parallel/strategy.h"
#include "settings.h"
#include "theme.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::readLines;
using paralab::test::child;
using paralab::test::quickConfig;
using paralab::test::startAsANewLearner;
using paralab::test::drawnByARun;
using paralab::test::kSnapshotsHaveHoldings;
using paralab::test::screenshotDir;
using paralab::test::svgParses;

namespace {

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestWindowExport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void exportPanelWritesPngAtDpi();
  void exportAllWritesEverything();
  void exportedRunOpensWithItsTimeline();
  void timelineSaysWhatTheLinesLeftOut();
  void scriptedExportWritesEverything();
};

void TestWindowExport::initTestCase() {
  if (!kSnapshotsHaveHoldings)
    qInfo("snapshots carry no holdings yet: the holdings map stays empty");
  startAsANewLearner();
}

// [SECTION] Export

void TestWindowExport::exportPanelWritesPngAtDpi() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(20));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 15000);
  QTemporaryDir dir;
  ExportPanel panel(w.charts()[0], dir.path());
  panel.setSize(QSize(1950, 1219), 300);
  QCOMPARE(panel.exportNow(), QString());
  QImage png(dir.filePath("loss.png"));
  QCOMPARE(png.size(), QSize(1950, 1219));
  QCOMPARE(png.dotsPerMeterX(), qRound(300 / 0.0254));
  panel.setPath(dir.filePath("loss.svg"));
  QCOMPARE(panel.format(), ExportFormat::Svg);
  QCOMPARE(panel.exportNow(), QString());
  QString why;
  QVERIFY2(svgParses(dir.filePath("loss.svg"), &why), qPrintable(why));
}

void TestWindowExport::exportAllWritesEverything() {
  constexpr int kRanks = 2, kSteps = 40;
  MainWindow w;
  RunConfig c = quickConfig(kSteps, kRanks);
  c.link = "pcie";
  w.configPanel()->setConfig(c);
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 30000);
  QCOMPARE(ended.at(0).at(0).toBool(), true);

  QTemporaryDir dir;
  QStringList written;
  QCOMPARE(w.exportAllTo(dir.path(), &written), QString());
  for (Chart* chart : w.charts()) {
    const QString base = dir.filePath(chart->stem());
    if (chart->showsNothing()) {  // nothing measured (no sweep, no benchmark): no figure
      QVERIFY2(!drawnByARun(chart), qPrintable(base + " shows nothing after a run"));
      QVERIFY2(!QFile::exists(base + ".png") && !QFile::exists(base + ".csv"), qPrintable(base));
      continue;
    }
    QImage png(base + ".png");
    QVERIFY2(!png.isNull(), qPrintable(base));
    QCOMPARE(png.size(), QSize(1200, 750));
    QFile pdf(base + ".pdf");
    QVERIFY(pdf.open(QIODevice::ReadOnly) && pdf.read(5) == "%PDF-");
    QString why;
    QVERIFY2(svgParses(base + ".svg", &why), qPrintable(base + ": " + why));
    // Only what every renderer draws (rsvg, Chromium and Inkscape were checked by hand; Qt's
    // SVG Tiny renderer here): hatching as lines, no <pattern> or <mask>, and the SVG draws
    // what the PNG shows.
    QFile svgFile(base + ".svg");
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const QByteArray svgText = svgFile.readAll();
    QVERIFY2(!svgText.contains("<pattern") && !svgText.contains("<mask"), qPrintable(base));
    const double differs = paralab::test::svgDiffersFromPng(
        base + ".svg", base + ".png", paralab::test::screenshotDir() + "/" + chart->stem() + "-svg-drawn.png");
    QVERIFY2(differs < 0.01, qPrintable(QString("%1: %2% of the SVG's pixels differ from the PNG")
                                            .arg(base).arg(100 * differs, 0, 'f', 2)));
    const QStringList csv = readLines(base + ".csv");
    QVERIFY2(!csv.isEmpty() && !csv[0].isEmpty(), qPrintable(base));
    if (drawnByARun(chart)) QVERIFY2(csv.size() > 1, qPrintable(base));
    // The run's link was emulated: every table of it says so first (a "# " comment).
    if (drawnByARun(chart))
      QVERIFY2(csv[0].startsWith("# emulated: the pcie link"), qPrintable(base + ": " + csv[0]));
  }
  QCOMPARE(readLines(dir.filePath("loss.csv")).size(), 1 + kSteps + 1);  // label, header, steps

  // The settings, as paralab-run --config reads them.
  RunConfig back;
  applyJsonFile(back, dir.filePath("run-config.json").toStdString());
  QCOMPARE(back.toJson(), w.runConfig().toJson());

  // The timeline as a Chrome trace: complete events for every rank.
  const QJsonDocument trace =
      QJsonDocument::fromJson(readText(dir.filePath("trace.json")).toUtf8());
  QVERIFY(trace.isObject());
  std::set<int> ranksWithSpans;
  for (const QJsonValue& e : trace.object()["traceEvents"].toArray())
    if (e.toObject()["ph"].toString() == "X" && e.toObject()["dur"].toDouble() >= 0)
      ranksWithSpans.insert(e.toObject()["pid"].toInt());
  QCOMPARE(int(ranksWithSpans.size()), kRanks);

  // The summary names what was switched on and the measured numbers.
  const QString md = readText(dir.filePath("summary.md"));
  const QString html = readText(dir.filePath("summary.html"));
  QVERIFY(!html.isEmpty() && html.contains("<html"));
  const RunReport r = w.report();
  const QStringList expected = {QString::number(r.last->loss, 'f', 4),        // final loss
                                QString::number(*r.accuracyPercent, 'f', 2),  // test accuracy
                                QString::number(r.meanStepMs, 'f', 3),        // mean step ms
                                QString::number(r.samplesPerS, 'f', 0),       // samples/s
                                "emulated",
                                "PCIe",
                                "2 ranks",
                                "sync",
                                "Per rank",
                                "bytes sent",
                                "Reference formulas",
                                "2(N − 1)/N · 4P",
                                "= 12P"};
  for (const QString& s : expected) {
    QVERIFY2(md.contains(s), qPrintable("summary.md lacks " + s));
    QVERIFY2(html.contains(s.toHtmlEscaped()), qPrintable("summary.html lacks " + s));
  }
  for (int rank = 0; rank < kRanks; ++rank) QVERIFY(md.contains(QString("\n| %1 | ").arg(rank)));
  QVERIFY(written.contains(dir.filePath("summary.md")));
  // Every step again, as paralab-run --json prints them: what File > Open Run reads.
  QVERIFY(written.contains(dir.filePath("run.jsonl")));
  QCOMPARE(readLines(dir.filePath("run.jsonl")).size(), kSteps + 1);
  // The charts with nothing measured (no sweep was run) are left out, and the summary says so.
  const QList<Chart*> charts = w.charts();
  const auto empty =
      std::count_if(charts.begin(), charts.end(), [](const Chart* c) { return c->showsNothing(); });
  QVERIFY(empty > 0 && !QFile::exists(dir.filePath("speedup.png")));
  QVERIFY2(md.contains("Not exported, nothing was measured for them in this run: ") &&
               md.contains("Speedup vs ranks"),
           qPrintable(md));
  QCOMPARE(written.size(), (w.charts().size() - empty) * 4 + 5);
}

// A thread run exported with Export All and opened again (File > Open Run) draws the same
// timeline and holdings map: its run.jsonl carries each rank's spans of the last steps and the
// holdings, as paralab-run --json writes them.
void TestWindowExport::exportedRunOpensWithItsTimeline() {
  constexpr int kRanks = 2, kSteps = 12;
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(kSteps, kRanks));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 30000);
  QCOMPARE(ended.at(0).at(0).toBool(), true);
  QTemporaryDir dir;
  const QString live = dir.filePath("live"), opened = dir.filePath("opened");
  QCOMPARE(w.exportAllTo(live), QString());
  auto* timeline = w.chartHub()->find<TimelineChart>();
  auto* holdings = w.chartHub()->find<HoldingsMap>();
  QVERIFY(timeline && holdings);
  QVERIFY(!timeline->bars().empty() && !holdings->cells().empty());

  // The lines: every rank's spans on the last ones, the holdings on the first.
  const QStringList lines = readLines(live + "/run.jsonl");
  QCOMPARE(lines.size(), kSteps + 1);
  const nlohmann::json first = nlohmann::json::parse(lines[0].toStdString());
  QVERIFY(first.contains("holdings"));
  QCOMPARE(first.at("holdings").size(), size_t(kRanks));
  const nlohmann::json last = nlohmann::json::parse(lines[kSteps - 1].toStdString());
  QVERIFY(last.contains("started_ms"));
  for (const auto& r : last.at("ranks")) QVERIFY(!r.at("spans").empty());

  MainWindow again;
  QCOMPARE(again.openRunFile(live + "/run.jsonl"), QString());
  auto* timeline2 = again.chartHub()->find<TimelineChart>();
  auto* holdings2 = again.chartHub()->find<HoldingsMap>();
  QCOMPARE(timeline2->bars().size(), timeline->bars().size());
  for (size_t i = 0; i < timeline->bars().size(); ++i) {
    const TimelineChart::Bar &a = timeline->bars()[i], &b = timeline2->bars()[i];
    QCOMPARE(b.rank, a.rank);
    QCOMPARE(b.kind, a.kind);
    QCOMPARE(b.step, a.step);
    QCOMPARE(b.op, a.op);
    QCOMPARE(b.bytes, a.bytes);
    QCOMPARE(b.startMs, a.startMs);
    QCOMPARE(b.endMs, a.endMs);
  }
  QCOMPARE(timeline2->spansDropped(), int64_t(0));
  QCOMPARE(holdings2->cells().size(), holdings->cells().size());
  for (size_t i = 0; i < holdings->cells().size(); ++i) {
    const HoldingsMap::Cell &a = holdings->cells()[i], &b = holdings2->cells()[i];
    QCOMPARE(b.rank, a.rank);
    QCOMPARE(b.row, a.row);
    QCOMPARE(b.kind, a.kind);
    QCOMPARE(b.bytes, a.bytes);
    QVERIFY(b.parts == a.parts);
  }
  // Their tables, exported again, are the live run's; and so is its run.jsonl.
  QCOMPARE(again.exportAllTo(opened), QString());
  for (const char* name : {"timeline.csv", "holdings.csv"}) {
    const QStringList rows = readLines(live + "/" + name);
    QVERIFY2(rows.size() > kRanks, name);
    QVERIFY2(readLines(opened + "/" + name) == rows, name);
  }
  MainWindow third;
  QCOMPARE(third.openRunFile(opened + "/run.jsonl"), QString());
  QCOMPARE(third.chartHub()->find<TimelineChart>()->bars().size(), timeline->bars().size());
  QCOMPARE(third.chartHub()->find<HoldingsMap>()->cells().size(), holdings->cells().size());
}

// Spans a line left out ("spans_dropped": past kMaxLineSpans a rank a step) are counted in the
// timeline's legend, only while there are any, those of the steps drawn, and not after a new
// run.
void TestWindowExport::timelineSaysWhatTheLinesLeftOut() {
  auto legendNames = [](const TimelineChart& c) {
    QStringList names;
    for (int i = 0; i < c.legend->itemCount(); ++i)
      if (auto* p = qobject_cast<QCPPlottableLegendItem*>(c.legend->item(i)))
        names << p->plottable()->name();
    return names;
  };
  {
    TimelineChart chart;
    chart.resize(800, 400);
    QCOMPARE(chart.droppedText(), QString());
    chart.setSpansDropped(7);
    QCOMPARE(chart.droppedText(), QString("7 spans not recorded (over 512 a rank a step)"));
    QVERIFY(legendNames(chart).contains(chart.droppedText()));
    Snapshot s;
    s.spans = {{Span{SpanKind::Forward, 0, 1'000'000, 0, "", 1}}};
    s.spansLeftOut = {{1, 0, 7}, {-2, 0, 100}};  // step -2 is not drawn (steps -1 to 1 are)
    chart.showSnapshot(s);
    QCOMPARE(chart.spansDropped(), int64_t(7));
    QVERIFY(legendNames(chart).contains(chart.droppedText()));
    s.spansLeftOut.clear();  // a thread run keeps every span
    chart.showSnapshot(s);
    QCOMPARE(chart.spansDropped(), int64_t(0));
    QVERIFY(!legendNames(chart).join('|').contains("not recorded"));
    chart.setSpansDropped(7);
    chart.setSpansDropped(1);
    QCOMPARE(chart.droppedText(), QString("1 span not recorded (over 512 a rank a step)"));
    chart.setSpansDropped(0);
    QCOMPARE(chart.droppedText(), QString());
    QVERIFY(!legendNames(chart).join('|').contains("not recorded"));
    chart.setSpansDropped(3);
    chart.clear();  // a new run
    QCOMPARE(chart.spansDropped(), int64_t(0));
    QVERIFY(!legendNames(chart).join('|').contains("not recorded"));
  }
  // A recorded run whose last lines say so: the opened run's timeline counts those of the
  // steps it draws.
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(6, 2));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 30000);
  QTemporaryDir dir;
  QCOMPARE(w.exportAllTo(dir.path()), QString());
  const QString cut = dir.filePath("cut.jsonl");
  QFile out(cut);
  QVERIFY(out.open(QIODevice::WriteOnly));
  for (const QString& text : readLines(dir.filePath("run.jsonl"))) {
    nlohmann::json j = nlohmann::json::parse(text.toStdString());
    if (j.contains("ranks") && j.value("step", 0) >= 5)  // 2 of the 3 steps drawn: 2 · 2 · 5
      for (auto& r : j["ranks"]) r["spans_dropped"] = 5;
    out.write(QByteArray::fromStdString(j.dump()) + '\n');
  }
  out.close();
  MainWindow opened;
  QCOMPARE(opened.openRunFile(cut), QString());
  auto* timeline = opened.chartHub()->find<TimelineChart>();
  QCOMPARE(timeline->spansDropped(), int64_t(20));
  QVERIFY(legendNames(*timeline).contains("20 spans not recorded (over 512 a rank a step)"));
  // The run's own file drew none.
  QCOMPARE(w.chartHub()->find<TimelineChart>()->spansDropped(), int64_t(0));
  // Exported again, its lines say what the file's said, rank by rank.
  QTemporaryDir again;
  QCOMPARE(opened.exportAllTo(again.path()), QString());
  int counted = 0;
  for (const QString& text : readLines(again.filePath("run.jsonl"))) {
    const nlohmann::json j = nlohmann::json::parse(text.toStdString());
    if (!j.contains("step") || !j.contains("ranks") || !j.at("ranks").is_array() ||
        !j.at("ranks").at(0).contains("spans"))
      continue;
    for (const auto& r : j.at("ranks")) {
      QCOMPARE(r.value("spans_dropped", 0), j.value("step", 0) >= 5 ? 5 : 0);
      counted += r.value("spans_dropped", 0);
    }
  }
  QCOMPARE(counted, 20);
  opened.reset();
  QCOMPARE(timeline->spansDropped(), int64_t(0));
}

void TestWindowExport::scriptedExportWritesEverything() {
  QTemporaryDir dir;
  const QString config = dir.filePath("config.json");
  {
    QFile f(config);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"dataset": "synthetic", "hidden": 32, "layers": 2, "batch": 64, "ranks": 2,
               "eval-every": 10, "eval-samples": 256})");
  }
  const QString out = dir.filePath("coursework");
  QProcess p;
  p.start(PARALAB_APP_EXE, {"--config", config, "--steps", "25", "--export", out});
  QVERIFY(p.waitForFinished(60000));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  for (const char* f : {"loss.png", "loss.pdf", "timeline.png", "memory.csv", "run-config.json",
                        "trace.json", "summary.md", "summary.html"})
    QVERIFY2(QFile::exists(out + '/' + f), f);
  QVERIFY(readText(out + "/summary.md").contains("2 ranks"));
}

QTEST_MAIN(TestWindowExport)
#include "tst_window_export.moc"
