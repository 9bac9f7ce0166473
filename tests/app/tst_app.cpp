// The window, offscreen: it opens, every control sets the RunConfig field it names, Start
// draws points, Pause / Step / Reset do what they say, each export format decodes, and the
// scripted `paralab --steps N --export DIR` writes every chart. Saves screenshots of the
// window into the build tree (screenshots/). Run: ctest -R tst_app --output-on-failure
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolBar>
#include <QXmlStreamReader>

#include "charts/chart.h"
#include "charts/metric_history.h"
#include "export/chart_export.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "rendered_text.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::readLines;

namespace {

// The shared quick run (window_test.h), one block and a smaller batch.
RunConfig quickConfig(int steps) {
  RunConfig c = test::quickConfig(steps);
  c.layers = 1;
  c.batch = 32;
  return c;
}

QString writeConfigFile(const QTemporaryDir& dir, const QByteArray& json) {
  const QString path = dir.filePath("config.json");
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(json);
  return path;
}

// The text of an exported chart as a reader sees it, against the chart's fonts: every word of
// the PDF page (as Poppler lays it out) inside the page and as tall as the chart's fonts drawn
// at the figure's scale (exports keep the screen's proportions: an 800 px wide chart's text
// scaled to the figure's width), never more than 30 pt; the SVG's text at the same sizes.
// "" or what is wrong, naming the file and the word.
QString checkExportedText(const Chart& chart, const QString& pdf, const QString& svg, QSize size) {
  const double scale = std::max(1.0, size.width() / 800.0);  // chart_export.cpp's kLogicalWidth
  const double base = chart.font().pointSizeF();
  // Fonts in points at 96 dpi scaled by `scale`, then 0.75 pt per px on the page: pt × scale.
  const double largest = (base + 3) * scale, smallest = std::max(base - 0.5, 7.0) * scale;
  const test::RenderedPage page = test::renderPdfWords(pdf);
  if (!page.error.isEmpty()) return page.error;
  if (page.words.size() < 5)
    return QString("%1: only %2 words on the page").arg(pdf).arg(page.words.size());
  const QRectF inside = QRectF(QPointF(0, 0), page.size).adjusted(-0.5, -0.5, 0.5, 0.5);
  for (const test::RenderedWord& w : page.words) {
    const double h = w.letterHeight();  // a vertical axis label's letters stand sideways
    // A word's box is its font's ascent to descent, about 1.2 times the font's size.
    if (h > 30 || h > 1.35 * largest || h < 0.8 * smallest)
      return QString("%1: '%2' is %3 pt tall (fonts here: %4..%5 pt, at most 30)")
          .arg(pdf, w.text)
          .arg(h, 0, 'f', 1)
          .arg(smallest, 0, 'f', 1)
          .arg(largest, 0, 'f', 1);
    if (!inside.contains(w.box))
      return QString("%1: '%2' at (%3, %4)–(%5, %6) is off the %7 × %8 pt page")
          .arg(pdf, w.text)
          .arg(w.box.left(), 0, 'f', 0)
          .arg(w.box.top(), 0, 'f', 0)
          .arg(w.box.right(), 0, 'f', 0)
          .arg(w.box.bottom(), 0, 'f', 0)
          .arg(page.size.width(), 0, 'f', 0)
          .arg(page.size.height(), 0, 'f', 0);
  }
  QString error;
  const QList<test::SvgText> texts = test::svgTexts(svg, &error);
  if (!error.isEmpty()) return svg + ": " + error;
  if (texts.size() < 3) return QString("%1: only %2 texts").arg(svg).arg(texts.size());
  // The SVG's units are the figure's px (96 dpi): a font of p pt is p × 96/72 px before scaling.
  for (const test::SvgText& t : texts) {
    const double pt = t.size * 72 / 96;
    if (pt > 1.05 * largest || pt < 0.95 * smallest)
      return QString("%1: '%2' is drawn at %3 pt (fonts here: %4..%5 pt)")
          .arg(svg, t.text)
          .arg(pt, 0, 'f', 1)
          .arg(smallest, 0, 'f', 1)
          .arg(largest, 0, 'f', 1);
  }
  return {};
}

}  // namespace

class TestApp : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void historyStaysBounded();
  void windowOpens();
  void controlsChangeConfig();
  void startPauseStepReset();
  void exportFormats();
  void scriptedExport();
  void badInputExits2_data();
  void badInputExits2();
  void screenshots();
};

void TestApp::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);  // never a learner's settings (settings.h)
  // Lesson progress too: a prediction locked by an earlier run of this test would stay locked.
  QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
  // The light Fusion look, whatever the desktop says: the screenshots are of it.
  QApplication::setStyle("Fusion");
  QApplication::setPalette(QApplication::style()->standardPalette());
}

void TestApp::historyStaysBounded() {
  MetricHistory h(400);
  for (int s = 1; s <= 20000; ++s) {
    StepMetrics m;
    m.step = s;
    m.loss = 1.0;
    m.stepMs = 2.0;
    m.samplesPerS = 1000.0;
    if (s % 50 == 0) m.testAccuracy = 0.5;
    h.append(m);
  }
  QVERIFY(h.rows().size() < 400);
  QVERIFY(h.accuracy().size() < 100);
  QCOMPARE(h.stepsSeen(), 20000);
  QCOMPARE(h.rows().front().step, 1.0);     // the start of the run stays visible
  QCOMPARE(h.rows().back().step, 20000.0);  // and the newest step is always there
  for (int i = 1; i < h.rows().size(); ++i) QVERIFY(h.rows()[i].step > h.rows()[i - 1].step);
  // Recent steps are kept at full resolution.
  QCOMPARE(h.rows()[h.rows().size() - 2].step, 19999.0);
  QCOMPARE(h.recentSamplesPerS(), 1000.0);
  QCOMPARE(h.recentStepMs(), 2.0);
  QCOMPARE(h.accuracy().back().percent, 50.0);
}

void TestApp::windowOpens() {
  MainWindow w;
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(w.findChild<QDockWidget*>("configDock"));
  // Loss and throughput first; the other charts of the lab after them (tst_window.cpp).
  QVERIFY(w.charts().size() >= 2);
  QCOMPARE(w.charts()[0]->stem(), QString("loss"));
  QCOMPARE(w.charts()[1]->stem(), QString("throughput"));
  for (QAction* a : {w.startAction(), w.pauseAction(), w.stepAction(), w.resetAction()}) {
    QVERIFY2(!a->shortcut().isEmpty(), qPrintable(a->text()));
    QVERIFY(!a->toolTip().isEmpty());
  }
  QVERIFY(w.startAction()->isEnabled());
  QVERIFY(!w.pauseAction()->isEnabled());
  // The charts are fed at most 30 times a second (the GUI thread never waits on training).
  auto* poll = w.findChild<QTimer*>("pollTimer");
  QVERIFY(poll);
  QVERIFY(poll->interval() * 30 >= 1000);
  QCOMPARE(w.runState(), RunState::Idle);
  for (Chart* c : w.charts()) QCOMPARE(c->pointCount(), 0);
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  QVERIFY(w.grab().save(dir + "/main-window-empty.png"));
}

void TestApp::controlsChangeConfig() {
  ConfigPanel panel;
  panel.setConfig(ConfigPanel::defaults());
  QSignalSpy changed(&panel, &ConfigPanel::configChanged);
  auto spin = [&](const char* name) { return panel.findChild<QSpinBox*>(name); };
  auto combo = [&](const char* name) { return panel.findChild<QComboBox*>(name); };
  struct Case {
    const char* name;
    std::function<void()> change;
    std::function<bool(const RunConfig&)> check;
  };
  const std::vector<Case> cases = {
      {"hidden", [&] { spin("hidden")->setValue(96); }, [](auto& c) { return c.hidden == 96; }},
      {"layers", [&] { spin("layers")->setValue(5); }, [](auto& c) { return c.layers == 5; }},
      {"batch", [&] { spin("batch")->setValue(512); }, [](auto& c) { return c.batch == 512; }},
      {"steps", [&] { spin("steps")->setValue(0); }, [](auto& c) { return c.steps == 0; }},
      {"eval-every", [&] { spin("eval-every")->setValue(7); },
       [](auto& c) { return c.evalEvery == 7; }},
      {"seed", [&] { spin("seed")->setValue(42); }, [](auto& c) { return c.seed == 42u; }},
      {"lr", [&] { panel.findChild<QDoubleSpinBox*>("lr")->setValue(0.125); },
       [](auto& c) { return c.lr == 0.125; }},
      {"dataset",
       [&] { combo("dataset")->setCurrentIndex(combo("dataset")->findData("synthetic")); },
       [](auto& c) { return c.dataset == "synthetic"; }},
      {"optimizer",
       [&] { combo("optimizer")->setCurrentIndex(combo("optimizer")->findData("adam")); },
       [](auto& c) { return c.optimizer == "adam"; }},
  };
  for (const Case& k : cases) {
    QWidget* control = panel.findChild<QWidget*>(k.name);
    QVERIFY2(control, k.name);
    QVERIFY2(!control->toolTip().isEmpty(), k.name);  // every control says what it does
    QVERIFY2(!k.check(panel.config()), k.name);
    const int before = int(changed.count());
    k.change();
    QVERIFY2(k.check(panel.config()), k.name);
    QVERIFY2(changed.count() > before, k.name);
  }
  // Nothing else moved: the fields without controls keep their values.
  QCOMPARE(panel.config().dataDir, ConfigPanel::defaults().dataDir);
  QCOMPARE(panel.config().evalSamples, ConfigPanel::defaults().evalSamples);
  // Out of range is said, in red, under the controls.
  auto* problem = panel.findChild<QLabel*>("configProblem");
  QVERIFY(problem && problem->isHidden());
}

void TestApp::startPauseStepReset() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(0));  // until stopped
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));

  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.charts()[0]->pointCount() > 0 && w.charts()[1]->pointCount() > 0,
                           15000);
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 20, 15000);
  QCOMPARE(w.runState(), RunState::Running);
  QVERIFY(w.findChild<QLabel*>("rateLabel")->text().contains("samples/s"));
  QVERIFY(w.findChild<QLabel*>("stepTimeLabel")->text().contains("ms"));
  QVERIFY(!w.startAction()->isEnabled());

  w.pauseAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Paused, 5000);
  QTest::qWait(300);  // the step in flight when Pause was pressed lands, and is copied
  const int64_t paused = w.history().stepsSeen();
  QTest::qWait(300);
  QCOMPARE(w.history().stepsSeen(), paused);

  w.stepAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.history().stepsSeen(), paused + 1, 5000);
  QTest::qWait(100);
  QCOMPARE(w.history().stepsSeen(), paused + 1);
  QCOMPARE(w.runState(), RunState::Paused);

  w.startAction()->trigger();  // resumes the same run
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() > paused + 5, 5000);

  w.resetAction()->trigger();
  QCOMPARE(w.runState(), RunState::Idle);
  for (Chart* c : w.charts()) QCOMPARE(c->pointCount(), 0);
  QTest::qWait(100);
  for (Chart* c : w.charts()) QCOMPARE(c->pointCount(), 0);  // the stopped run stays away

  // Step from idle: a new run that does exactly one step.
  w.stepAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(w.history().stepsSeen(), int64_t(1), 5000);
  QTRY_COMPARE_WITH_TIMEOUT(w.runState(), RunState::Paused, 5000);
}

void TestApp::exportFormats() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(60));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 15000);
  QCOMPARE(ended.at(0).at(0).toBool(), true);
  QCOMPARE(w.history().stepsSeen(), 60);

  // A dark screen still exports figures for a report: dark on white.
  QPalette dark;
  dark.setColor(QPalette::Base, QColor(30, 30, 30));
  dark.setColor(QPalette::WindowText, Qt::white);
  const QList<Chart*> perStep = w.charts().mid(0, 2);  // loss, throughput: a row per step
  for (Chart* chart : perStep) chart->setPalette(dark);

  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QSize size(800, 500);
  for (Chart* chart : perStep) {
    const QString stem = dir.filePath(chart->stem());
    QCOMPARE(exportChart(*chart, stem + ".png", ExportFormat::Png, size), QString());
    QCOMPARE(exportChart(*chart, stem + ".pdf", ExportFormat::Pdf, size), QString());
    QCOMPARE(exportChart(*chart, stem + ".svg", ExportFormat::Svg, size), QString());
    QCOMPARE(exportChart(*chart, stem + ".csv", ExportFormat::Csv, size), QString());

    QImage png(stem + ".png");
    QVERIFY2(!png.isNull(), qPrintable(stem));
    QCOMPARE(png.size(), size);
    QCOMPARE(png.pixelColor(2, 2), QColor(Qt::white));

    // Rendered as a reader sees it: every word inside the page at the chart's font sizes.
    const QString text = checkExportedText(*chart, stem + ".pdf", stem + ".svg", size);
    QVERIFY2(text.isEmpty(), qPrintable(text));

    QFile svgFile(stem + ".svg");
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    QXmlStreamReader svg(&svgFile);
    int elements = 0;
    bool sawText = false;
    while (!svg.atEnd()) {
      if (svg.readNext() == QXmlStreamReader::StartElement) {
        if (elements++ == 0) QCOMPARE(svg.name(), QStringView(u"svg"));
        sawText |= svg.name() == QStringView(u"text");
      }
    }
    QVERIFY2(!svg.hasError(), qPrintable(svg.errorString()));
    QVERIFY(elements > 10);
    QVERIFY2(sawText, "vector export keeps text as text");

    const QStringList csv = readLines(stem + ".csv");
    QVERIFY(csv.size() > 1);
    QVERIFY(csv[0].startsWith("step,"));
    const int columns = int(csv[0].count(',')) + 1;
    QVERIFY(columns >= 2);
    for (const QString& row : csv) QCOMPARE(int(row.count(',')) + 1, columns);
    QCOMPARE(csv.size() - 1, 60);  // one row per step: every step was drawn
  }
  const QStringList loss = readLines(dir.filePath("loss.csv"));
  QCOMPARE(loss[0],
           QString("step,loss_nats,loss_mean20_nats,test_accuracy_percent,test_loss_nats"));
  QVERIFY(loss[10].split(',')[3].toDouble() > 0);  // step 10 was evaluated: accuracy and loss
  QVERIFY(loss[10].split(',')[4].toDouble() > 0);
  QVERIFY(loss[11].split(',')[3].isEmpty() && loss[11].split(',')[4].isEmpty());  // 11 was not

  // The scripted path's helper writes all of them at once.
  // A chart with nothing measured is no figure for a report: no sweep was run, so the speedup
  // chart (its placeholder says how to run one in the window) is left out and named.
  QStringList written, skipped;
  QCOMPARE(exportAllCharts(w.charts(), dir.filePath("all"), &written, kDefaultExportSize, &skipped),
           QString());
  QVERIFY2(skipped.contains("Speedup vs ranks"), qPrintable(skipped.join(", ")));
  QVERIFY(!QFile::exists(dir.filePath("all/speedup.png")));
  QVERIFY(QFile::exists(dir.filePath("all/loss.png")));
  QCOMPARE(written.size(), int(w.charts().size() - skipped.size()) * 4);
}

void TestApp::scriptedExport() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString config = writeConfigFile(
      dir, R"({"dataset": "synthetic", "hidden": 32, "layers": 2, "batch": 32, "eval-every": 10,
               "eval-samples": 256, "ranks": 4})");
  const QString out = dir.filePath("charts");
  QProcess p;
  p.start(PARALAB_APP_EXE, {"--steps", "40", "--export", out, "--config", config});
  QVERIFY(p.waitForFinished(30000));
  QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
           p.readAllStandardError().constData());
  QVERIFY(p.readAllStandardOutput().contains("40 steps"));
  for (const char* stem : {"loss", "throughput"}) {
    const QString base = out + '/' + stem;
    QImage png(base + ".png");
    QVERIFY2(!png.isNull(), qPrintable(base));
    QCOMPARE(png.size(), kDefaultExportSize);
    QFile svgFile(base + ".svg");
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    QXmlStreamReader svg(&svgFile);
    while (!svg.atEnd()) svg.readNext();
    QVERIFY2(!svg.hasError(), qPrintable(svg.errorString()));
    const QStringList csv = readLines(base + ".csv");
    QCOMPARE(csv.size(), 41);  // header + 40 steps
  }
  QVERIFY(QFile::exists(out + "/run-config.json"));
  // The recorded run it wrote, opened and exported again: the same tables, no training.
  const QString again = dir.filePath("again");
  QProcess open;
  open.start(PARALAB_APP_EXE, {"--open", out + "/run.jsonl", "--export", again});
  QVERIFY(open.waitForFinished(30000));
  QVERIFY2(open.exitCode() == 0, open.readAllStandardError().constData());
  QVERIFY(open.readAllStandardOutput().contains("40 steps recorded in run.jsonl"));
  for (const char* csv : {"/loss.csv", "/throughput.csv", "/traffic.csv"})
    QCOMPARE(readLines(again + csv), readLines(out + csv));
  // A file that is not a recorded run: one line naming it and the line, exit 2.
  QFile bad(dir.filePath("bad.jsonl"));
  QVERIFY(bad.open(QIODevice::WriteOnly));
  bad.write("{\"step\": 1}\n");
  bad.close();
  open.start(PARALAB_APP_EXE, {"--open", bad.fileName(), "--export", again});
  QVERIFY(open.waitForFinished(30000));
  QCOMPARE(open.exitCode(), 2);
  // (Qt may warn about the platform first; the program's own words are one line.)
  QStringList said = QString::fromLocal8Bit(open.readAllStandardError())
                               .split('\n', Qt::SkipEmptyParts)
                               .filter(QRegularExpression("^paralab: "));
  QCOMPARE(said.size(), 1);
  QVERIFY2(said[0].startsWith("paralab: open: bad.jsonl: line 1:"), qPrintable(said[0]));
  const auto openAndSay = [&](const QString& name, const QByteArray& content,
                              const QString& exportTo) {
    QFile f(dir.filePath(name));
    if (f.open(QIODevice::WriteOnly)) f.write(content);
    f.close();
    open.start(PARALAB_APP_EXE, {"--open", f.fileName(), "--export", exportTo});
    if (!open.waitForFinished(30000)) return QStringList{"(did not finish)"};
    return QString::fromLocal8Bit(open.readAllStandardError())
        .split('\n', Qt::SkipEmptyParts)
        .filter(QRegularExpression("^paralab: "));
  };
  // Cut short mid-line, as a stopped writer leaves it: the complete steps exported (the same
  // rows as the whole run's), one line saying where it ends, exit 0.
  QFile whole(out + "/run.jsonl");
  QVERIFY(whole.open(QIODevice::ReadOnly));
  const QList<QByteArray> recorded = whole.readAll().split('\n');
  const QByteArray cut = recorded.mid(0, 25).join('\n') + '\n' + recorded[25].left(60);
  const QString cutDir = dir.filePath("cut");
  said = openAndSay("cut.jsonl", cut, cutDir);
  QCOMPARE(open.exitCode(), 0);
  QCOMPARE(said, QStringList{"paralab: open: cut.jsonl: line 26 is incomplete; showing the 25 "
                             "steps before it"});
  QCOMPARE(readLines(cutDir + "/loss.csv"), readLines(out + "/loss.csv").mid(0, 26));
  QVERIFY(!QFile::exists(cutDir + "/run-config.json"));  // its settings are not known
  // Nothing before the cut: exit 2.
  said = openAndSay("cut1.jsonl", recorded[0].left(60), dir.filePath("cut1"));
  QCOMPARE(open.exitCode(), 2);
  QCOMPARE(said.size(), 1);
  // A schema this build does not read: refused in one line naming the version and ours.
  QByteArray newer = recorded.join('\n');
  newer.replace("\"schema\":1", "\"schema\":7");
  said = openAndSay("newer.jsonl", newer, dir.filePath("newer"));
  QCOMPARE(open.exitCode(), 2);
  QCOMPARE(said, QStringList{"paralab: open: newer.jsonl: line 1: schema: version 7 (this build "
                             "reads version 1)"});
  // Every chart's PDF and SVG of the 4-rank run, as a reader sees them (the charts' fonts are
  // the application's default, as in the program).
  MainWindow w;
  for (Chart* chart : w.charts()) {
    const QString base = out + '/' + chart->stem();
    if (!QFile::exists(base + ".pdf")) {  // nothing measured (no sweep or benchmark was run)
      QVERIFY2(!test::drawnByARun(chart), qPrintable(base + " was not written"));
      continue;
    }
    const QString text =
        checkExportedText(*chart, base + ".pdf", base + ".svg", kDefaultExportSize);
    QVERIFY2(text.isEmpty(), qPrintable(text));
  }
}

void TestApp::badInputExits2_data() {
  QTest::addColumn<QByteArray>("config");
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("names");
  QTest::newRow("wrong type") << QByteArray(R"({"hidden": "wide"})") << QStringList{} << "hidden";
  QTest::newRow("unknown key") << QByteArray(R"({"hiden": 64})") << QStringList{} << "hiden";
  QTest::newRow("malformed") << QByteArray("{\"hidden\": ") << QStringList{} << "config";
  QTest::newRow("out of range") << QByteArray(R"({"layers": 0})") << QStringList{} << "layers";
  QTest::newRow("flag out of range")
      << QByteArray(R"({"dataset": "synthetic"})") << QStringList{"--batch", "0"} << "batch";
  QTest::newRow("unknown flag") << QByteArray(R"({"dataset": "synthetic"})")
                                << QStringList{"--bogus", "1"} << "bogus";
  QTest::newRow("open a missing file") << QByteArray(R"({"dataset": "synthetic"})")
                                       << QStringList{"--open", "/no/such/run.jsonl"} << "open";
  QTest::newRow("export folder") << QByteArray(R"({"dataset": "synthetic"})")
                                 << QStringList{"--export", "/proc/paralab-cannot-be-made"}
                                 << "export";
  // A flag that names something, given as "": refused, not read as absent (the window would open).
  QTest::newRow("empty export") << QByteArray(R"({"dataset": "synthetic"})")
                                << QStringList{"--export", ""}
                                << "--export: empty (allowed: a folder)";
  QTest::newRow("empty open") << QByteArray(R"({"dataset": "synthetic"})")
                              << QStringList{"--open", ""} << "--open: empty";
  QTest::newRow("empty settings") << QByteArray(R"({"dataset": "synthetic"})")
                                  << QStringList{"--settings", ""} << "--settings: empty";
  QTest::newRow("settings on a device")
      << QByteArray(R"({"dataset": "synthetic"})") << QStringList{"--settings", "/dev/null"}
      << "settings: '/dev/null' is not a regular file";
}

void TestApp::badInputExits2() {
  QFETCH(QByteArray, config);
  QFETCH(QStringList, args);
  QFETCH(QString, names);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QProcess p;
  p.start(PARALAB_APP_EXE, QStringList{"--steps", "5", "--export", dir.filePath("out"), "--config",
                                       writeConfigFile(dir, config)} +
                               args);
  QVERIFY(p.waitForFinished(15000));
  QCOMPARE(p.exitCode(), 2);
  const QStringList err =
      QString::fromLocal8Bit(p.readAllStandardError()).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(err.size(), 1);
  QVERIFY2(err[0].startsWith("paralab: ") && err[0].contains(names), qPrintable(err[0]));
  QVERIFY(!QFile::exists(dir.filePath("out/loss.png")));
}

void TestApp::screenshots() {
  // Fashion-MNIST when installed (what learners see), else the synthetic set.
  RunConfig c = ConfigPanel::defaults();
  c.dataDir = PARALAB_FMNIST_DIR;
  if (c.validate()) c = quickConfig(0);
  c.steps = 400;
  c.evalEvery = 25;
  c.evalSamples = 1000;
  MainWindow w;
  w.configPanel()->setConfig(c);
  w.resize(1280, 820);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy ended(&w, &MainWindow::runEnded);
  w.startAction()->trigger();
  // 400 steps: about 10 s on two free cores, three times that while other work shares them.
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
  QTest::qWait(100);  // the queued replots
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  QVERIFY(w.grab().save(dir + "/main-window.png"));
  QVERIFY(w.charts()[0]->grab().save(dir + "/loss-chart.png"));

  // The same window on a dark desktop: the charts follow the palette.
  QPalette dark(QColor(45, 45, 48), QColor(30, 30, 32));
  dark.setColor(QPalette::WindowText, QColor(230, 230, 230));
  dark.setColor(QPalette::Text, QColor(230, 230, 230));
  dark.setColor(QPalette::ButtonText, QColor(230, 230, 230));
  dark.setColor(QPalette::Base, QColor(30, 30, 32));
  dark.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
  QApplication::setPalette(dark);
  QTest::qWait(100);
  QVERIFY(w.grab().save(dir + "/main-window-dark.png"));
  QApplication::setPalette(QApplication::style()->standardPalette());
}

QTEST_MAIN(TestApp)
#include "tst_app.moc"
