// The settings panel, offscreen: every control sets the RunConfig field it names, the
// strategies and ZeRO stages come from the engine's table, the GPU choice is disabled with its
// reason where none answers and the GEMM kernels follow the chosen device's ladder, invalid
// settings are explained inline with Start disabled; settings stay out of the learner's store,
// the themes recolour the charts, the run commands have their shortcuts.
// Run: ctest -R tst_window_controls --output-on-failure
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "charts/chart.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "parallel/strategy.h"
#include "settings.h"
#include "theme.h"
#include "window/lesson_router.h"
#include "window_test.h"

using namespace paralab;
using paralab::test::child;
using paralab::test::quickConfig;

class TestWindowControls : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void everyControlSetsItsField();
  void strategiesComeFromTheEngineTable();
  void deviceAndGemmKernel();
  void invalidIsExplainedInline();
  void settingsStayOutOfTheUsersStore();
  void themes();
  void shortcuts();
  void noQuestionWhenNothingIsLost();
  void greyedControlsReadTheValueInEffect();
};

void TestWindowControls::initTestCase() {
  // Settings go to Qt's test location, never a learner's (Settings::open() checks this mode).
  QStandardPaths::setTestModeEnabled(true);
  QFile::remove(Settings::open()->fileName());
  QApplication::setStyle("Fusion");
  captureDesktopPalette();
  QApplication::setPalette(lightPalette());
}

// [SECTION] Controls

void TestWindowControls::everyControlSetsItsField() {
  ConfigPanel panel;
  panel.setConfig(ConfigPanel::defaults());
  QSignalSpy changed(&panel, &ConfigPanel::configChanged);
  auto spin = [&](const char* name) { return child<QSpinBox>(&panel, name); };
  auto combo = [&](const char* name) { return child<QComboBox>(&panel, name); };
  auto pick = [&](const char* name, const char* value) {
    QComboBox* box = combo(name);
    box->setCurrentIndex(box->findData(value));
  };
  auto parallel = [&] { pick("execution", "parallel"); };
  struct Case {
    const char* name;
    std::function<void()> prepare, change;
    std::function<bool(const RunConfig&)> check;
  };
  const auto none = [] {};
  const std::vector<Case> cases = {
      {"execution", none, parallel, [](auto& c) { return c.ranks == 4; }},
      {"ranks", parallel, [&] { spin("ranks")->setValue(6); },
       [](auto& c) { return c.ranks == 6; }},
      {"strategy", parallel, [&] { pick("strategy", "gossip"); },
       [](auto& c) { return c.strategy == "gossip"; }},
      {"zero", parallel, [&] { pick("zero", "2"); }, [](auto& c) { return c.zero == 2; }},
      {"dp-version", parallel, [&] { pick("dp-version", "per-tensor"); },
       [](auto& c) { return c.dpVersion == DpVersion::PerTensor; }},
      {"servers", [&] { parallel(), pick("strategy", "ps-sync"); },
       [&] { spin("servers")->setValue(2); }, [](auto& c) { return c.servers == 2; }},
      {"sync-every", [&] { parallel(), pick("strategy", "local-sgd"); },
       [&] { spin("sync-every")->setValue(9); }, [](auto& c) { return c.syncEvery == 9; }},
      {"topology", [&] { parallel(), pick("strategy", "gossip"); },
       [&] { pick("topology", "random"); }, [](auto& c) { return c.topology == "random"; }},
      {"scaling", parallel, [&] { pick("scaling", "weak"); },
       [](auto& c) { return c.scaling == Scaling::Weak; }},
      {"dp", parallel, [&] { spin("dp")->setValue(2); }, [](auto& c) { return c.dp == 2; }},
      {"tp", parallel, [&] { spin("tp")->setValue(2); }, [](auto& c) { return c.tp == 2; }},
      {"sp", [&] { parallel(), spin("tp")->setValue(2); },
       [&] { child<QCheckBox>(&panel, "sp")->setChecked(true); }, [](auto& c) { return c.sp; }},
      {"pp", parallel, [&] { spin("pp")->setValue(2); }, [](auto& c) { return c.pp == 2; }},
      {"microbatches", [&] { parallel(), spin("pp")->setValue(2); },
       [&] { spin("microbatches")->setValue(4); }, [](auto& c) { return c.microbatches == 4; }},
      {"schedule", [&] { parallel(), spin("pp")->setValue(2); }, [&] { pick("schedule", "gpipe"); },
       [](auto& c) { return c.schedule == "gpipe"; }},
      {"model", none, [&] { pick("model", "moe"); },
       [](auto& c) { return c.model == ModelKind::Moe; }},
      {"ep", [&] { parallel(), pick("model", "moe"); }, [&] { spin("ep")->setValue(2); },
       [](auto& c) { return c.ep == 2; }},
      {"experts", [&] { pick("model", "moe"); }, [&] { spin("experts")->setValue(8); },
       [](auto& c) { return c.experts == 8; }},
      {"topk", [&] { pick("model", "moe"); }, [&] { spin("topk")->setValue(2); },
       [](auto& c) { return c.topk == 2; }},
      {"link", none, [&] { pick("link", "pcie"); }, [](auto& c) { return c.link == "pcie"; }},
      {"kernel", none, [&] { pick("kernel", "tiled"); },
       [](auto& c) { return c.kernel == "tiled"; }},
      {"hidden", none, [&] { spin("hidden")->setValue(96); },
       [](auto& c) { return c.hidden == 96; }},
      {"layers", none, [&] { spin("layers")->setValue(5); }, [](auto& c) { return c.layers == 5; }},
      {"batch", none, [&] { spin("batch")->setValue(512); },
       [](auto& c) { return c.batch == 512; }},
      {"steps", none, [&] { spin("steps")->setValue(0); }, [](auto& c) { return c.steps == 0; }},
      {"eval-every", none, [&] { spin("eval-every")->setValue(7); },
       [](auto& c) { return c.evalEvery == 7; }},
      {"seed", none, [&] { spin("seed")->setValue(42); }, [](auto& c) { return c.seed == 42u; }},
      {"lr", none, [&] { child<QDoubleSpinBox>(&panel, "lr")->setValue(0.125); },
       [](auto& c) { return c.lr == 0.125; }},
      {"dataset", none, [&] { pick("dataset", "synthetic"); },
       [](auto& c) { return c.dataset == "synthetic"; }},
      {"optimizer", none, [&] { pick("optimizer", "adam"); },
       [](auto& c) { return c.optimizer == "adam"; }},
  };
  for (const Case& k : cases) {
    panel.setConfig(ConfigPanel::defaults());
    k.prepare();
    QWidget* control = panel.findChild<QWidget*>(k.name);
    QVERIFY2(control, k.name);
    QVERIFY2(!control->toolTip().isEmpty(), k.name);  // every control says what it does
    QVERIFY2(control->isEnabled(), k.name);
    QVERIFY2(!k.check(panel.config()), k.name);
    const int before = int(changed.count());
    k.change();
    QVERIFY2(k.check(panel.config()), k.name);
    QVERIFY2(changed.count() > before, k.name);
  }
  // Serial is one rank in the plain layout, whatever the parallel controls hold; Parallel
  // brings them back.
  panel.setConfig(ConfigPanel::defaults());
  parallel();
  spin("tp")->setValue(2);
  pick("execution", "serial");
  QCOMPARE(panel.config().ranks, 1);
  QCOMPARE(panel.config().tp, 1);
  QVERIFY(!spin("tp")->isEnabled());
  QVERIFY(spin("tp")->toolTip().contains("serial"));
  parallel();
  QCOMPARE(panel.config().tp, 2);
  // Fields without controls keep their values.
  QCOMPARE(panel.config().dataDir, ConfigPanel::defaults().dataDir);
  QCOMPARE(panel.config().evalSamples, ConfigPanel::defaults().evalSamples);
}

void TestWindowControls::strategiesComeFromTheEngineTable() {
  ConfigPanel panel;
  auto* strategy = child<QComboBox>(&panel, "strategy");
  std::set<std::string> table;
  for (const StrategyInfo& s : strategyTable()) table.insert(s.name);
  QVERIFY(strategy->count() >= 6);
  for (int i = 0; i < strategy->count(); ++i) {
    const std::string name = strategy->itemData(i).toString().toStdString();
    QVERIFY2(table.count(name), name.c_str());
    QVERIFY(!strategy->itemData(i, Qt::ToolTipRole).toString().isEmpty());
  }
  for (const char* name : {"sync", "ps-sync", "ps-async", "hogwild", "local-sgd", "gossip"})
    QVERIFY2(strategy->findData(name) >= 0, name);
  // The ZeRO stages too, with the table's summaries.
  auto* zero = child<QComboBox>(&panel, "zero");
  QCOMPARE(zero->count(), 4);
  QVERIFY(zero->itemData(3, Qt::ToolTipRole).toString().contains("ZeRO-3"));
  // The links are marked emulated.
  auto* link = child<QComboBox>(&panel, "link");
  for (const char* name : {"nvlink", "pcie", "infiniband", "ethernet"})
    QVERIFY2(link->itemText(link->findData(name)).contains("emulated"), name);
}

// The Device control offers the GPU only where one answers (else it says why), and the GEMM
// list is the chosen device's ladder from the engine's registry, each entry explained; both
// land in the RunConfig and come back from the remembered settings.
void TestWindowControls::deviceAndGemmKernel() {
  ConfigPanel panel;
  auto* device = child<QComboBox>(&panel, "device");
  auto* gemm = child<QComboBox>(&panel, "kernel");
  QVERIFY(!device->toolTip().isEmpty() && !gemm->toolTip().isEmpty());
  QCOMPARE(device->currentData().toString(), QString("cpu"));
  const auto listed = [&] {
    std::vector<std::string> names;
    for (int i = 0; i < gemm->count(); ++i) {
      names.push_back(gemm->itemData(i).toString().toStdString());
      if (gemm->itemData(i, Qt::ToolTipRole).toString().isEmpty())
        return std::vector<std::string>{};
    }
    return names;
  };
  const auto ladder = [](Device dev) {
    std::vector<std::string> names;
    for (const GemmChoice& k : gemmChoices(dev)) names.push_back(k.name);
    return names;
  };
  QCOMPARE(listed(), ladder(Device::Cpu));
  QVERIFY(gemm->isEnabled());
  for (const GemmChoice& k : gemmChoices(Device::Cpu)) {
    gemm->setCurrentIndex(gemm->findData(QString::fromStdString(k.name)));
    QCOMPARE(panel.config().kernel, k.name);
    QCOMPARE(panel.config().device, Device::Cpu);
    QVERIFY2(panel.isValid(), qPrintable(panel.problem()));
  }

  QTRY_VERIFY_WITH_TIMEOUT(qobject_cast<QStandardItemModel*>(device->model())->item(1)->toolTip() !=
                               "Looking for a GPU…",
                           15000);
  auto* model = qobject_cast<QStandardItemModel*>(device->model());
  QStandardItem* gpu = model->item(device->findData("cuda"));
  if (gpuAvailability().count == 0) {  // this machine: the choice is off and says why
    QVERIFY(!gpu->isEnabled());
    QVERIFY(!panel.gpuReason().isEmpty());
    QVERIFY(gpu->toolTip().contains(panel.gpuReason()));
    QVERIFY(device->toolTip().contains(panel.gpuReason()));
    // and in view, under Device, without hovering
    auto* note = panel.findChild<QLabel*>("gpuNote");
    QVERIFY(note && note->isVisibleTo(&panel));
    QVERIFY2(note->text().contains(panel.gpuReason()), qPrintable(note->text()));
  } else {
    QVERIFY(!panel.findChild<QLabel*>("gpuNote")->isVisibleTo(&panel));  // a GPU: choosing it lists the CUDA ladder and sets the device
    QVERIFY(gpu->isEnabled());
    QVERIFY(!gpu->toolTip().isEmpty());
    gemm->setCurrentIndex(gemm->findData("tiled"));
    device->setCurrentIndex(device->findData("cuda"));
    QCOMPARE(panel.config().device, Device::Cuda);
    QCOMPARE(listed(), ladder(Device::Cuda));
    QCOMPARE(panel.config().kernel, std::string("tiled"));  // a name both ladders have stays
    gemm->setCurrentIndex(gemm->findData("tensor-core"));
    QCOMPARE(panel.config().kernel, std::string("tensor-core"));
    device->setCurrentIndex(device->findData("cpu"));
    QCOMPARE(panel.config().kernel, std::string("vendor"));  // no CPU tensor-core rung
  }

  // Remembered like every other setting (the window saves config() as the last run settings).
  RunConfig c = ConfigPanel::defaults();
  c.kernel = "simd";
  panel.setConfig(c);
  Settings::setLastConfig(panel.config());
  ConfigPanel again;
  again.setConfig(*Settings::lastConfig());
  QCOMPARE(child<QComboBox>(&again, "kernel")->currentData().toString(), QString("simd"));
  QCOMPARE(again.config().kernel, std::string("simd"));
  QCOMPARE(again.config().device, Device::Cpu);
}

void TestWindowControls::invalidIsExplainedInline() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(20, 4));
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  auto* problem = child<QLabel>(w.configPanel(), "configProblem");
  QVERIFY(problem->isHidden());
  QVERIFY(w.startAction()->isEnabled());

  // Cases the controls cannot prevent alone: each is said in one line naming the field.
  struct Bad {
    std::function<void()> make;
    const char* field;
  };
  auto* panel = w.configPanel();
  const std::vector<Bad> bad = {
      {[&] { child<QSpinBox>(panel, "tp")->setValue(3); }, "ranks"},     // 4 % 3
      {[&] { child<QSpinBox>(panel, "batch")->setValue(2); }, "batch"},  // < one per rank
      {[&] { child<QSpinBox>(panel, "pp")->setValue(4); }, "pp"},        // 4 stages, 2 blocks
  };
  for (const Bad& b : bad) {
    panel->setConfig(quickConfig(20, 4));
    b.make();
    QVERIFY2(problem->isVisible(), b.field);
    // Named by the control's label: "Ranks: …", "Pipeline stages (pp): …".
    const QString text = problem->text();
    QVERIFY2(text.contains(QString(b.field) + ":", Qt::CaseInsensitive) ||
                 text.contains(QString("(%1):").arg(b.field)),
             qPrintable(text));
    QVERIFY(!w.startAction()->isEnabled());
    QVERIFY(!w.stepAction()->isEnabled());
    w.startAction()->trigger();  // does nothing: no dialog, no run
    QVERIFY(!QApplication::activeModalWidget());
    QCOMPARE(w.runState(), RunState::Idle);
  }
  panel->setConfig(quickConfig(20, 4));
  QVERIFY(problem->isHidden());
  QVERIFY(w.startAction()->isEnabled());
}

// [SECTION] Feel

void TestWindowControls::settingsStayOutOfTheUsersStore() {
  const QString file = Settings::open()->fileName();
  QVERIFY2(file.contains(".qttest"), qPrintable(file));
  RunConfig c = quickConfig(77, 3);
  Settings::setLastConfig(c);
  QCOMPARE(Settings::lastConfig()->toJson(), c.toJson());
  {
    MainWindow w;
    w.restoreSettings();
    QCOMPARE(w.configPanel()->config().toJson(), c.toJson());
    child<QSpinBox>(w.configPanel(), "hidden")->setValue(80);
    w.close();  // remembers the last settings and the layout
  }
  QCOMPARE(Settings::lastConfig()->hidden, 80);
  QVERIFY(!Settings::windowState().isEmpty());
  // A file named on the command line is used instead.
  QTemporaryDir dir;
  Settings::useFile(dir.filePath("mine.ini"));
  Settings::setTheme(Theme::Dark);
  QVERIFY(QFile::exists(dir.filePath("mine.ini")));
  QCOMPARE(Settings::theme(), Theme::Dark);
  Settings::useFile(QString());
  QCOMPARE(Settings::theme(), Theme::System);
}

void TestWindowControls::themes() {
  MainWindow w;
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.setTheme(Theme::Dark);
  QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 128);
  QTRY_VERIFY(w.charts()[0]->grab().toImage().pixelColor(3, 3).lightness() < 128);
  w.setTheme(Theme::Light);
  QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 128);
  QTRY_VERIFY(w.charts()[0]->grab().toImage().pixelColor(3, 3).lightness() > 128);
  // System: the palette the desktop gave at start-up.
  w.setTheme(Theme::System);
  QCOMPARE(themeIsDark(Theme::System), desktopIsDark());
  QApplication::setPalette(lightPalette());
}

void TestWindowControls::shortcuts() {
  MainWindow w;
  const QList<QPair<QAction*, QKeySequence>> keys = {
      {w.startAction(), QKeySequence(Qt::Key_F5)},
      {w.pauseAction(), QKeySequence(Qt::Key_F6)},
      {w.stepAction(), QKeySequence(Qt::Key_F10)},
      {w.resetAction(), QKeySequence(Qt::SHIFT | Qt::Key_F5)},
      {w.exportAllAction(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E)},
      {w.sweepAction(), QKeySequence(Qt::CTRL | Qt::Key_R)}};
  for (const auto& [action, key] : keys) {
    QCOMPARE(action->shortcut(), key);
    QVERIFY(action->toolTip().contains(key.toString(QKeySequence::NativeText)) ||
            !action->statusTip().isEmpty());
  }
}


// Open Run, Quit and a lesson's run ask only when something would be lost: with nothing running
// (an empty line of what is at risk) no question comes, and a question lists only real losses.
void TestWindowControls::noQuestionWhenNothingIsLost() {
  QWidget parent;
  QStringList asked;  // the informative text of every question shown, answered with Cancel
  QTimer watcher;
  QObject::connect(&watcher, &QTimer::timeout, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      asked << box->informativeText();
      box->button(QMessageBox::Cancel)->click();
    }
  });
  watcher.start(20);
  QVERIFY(askBeforeLoss(&parent, "Open run.jsonl?", {QString()}, "Open"));
  QVERIFY(askBeforeLoss(&parent, "Quit?", {}, "Quit"));
  QVERIFY2(asked.isEmpty(), qPrintable(asked.join('|')));
  QVERIFY(!askBeforeLoss(&parent, "Open run.jsonl?", {QString(), "The run shown ends."}, "Open"));
  QCOMPARE(asked, QStringList{"• The run shown ends."});
}


// A control that stops applying reads the value in effect: under Hogwild the layout controls say
// no split (tp 1, pp 1, no ZeRO), not the tp 2 · pp 2 · ZeRO-3 left from sync; and back on sync
// those do not come back unasked.
void TestWindowControls::greyedControlsReadTheValueInEffect() {
  ConfigPanel panel;
  RunConfig c = ConfigPanel::defaults();
  c.ranks = 8, c.tp = 2, c.pp = 2, c.zero = 3, c.microbatches = 4;
  panel.setConfig(c);
  auto* tp = child<QSpinBox>(&panel, "tp");
  auto* pp = child<QSpinBox>(&panel, "pp");
  auto* zero = child<QComboBox>(&panel, "zero");
  auto* strategy = child<QComboBox>(&panel, "strategy");
  QCOMPARE(tp->value(), 2);
  QCOMPARE(zero->currentData().toString(), QString("3"));
  strategy->setCurrentIndex(strategy->findData("hogwild"));
  QVERIFY(!tp->isEnabled() && !pp->isEnabled() && !zero->isEnabled());
  QCOMPARE(tp->value(), 1);
  QCOMPARE(pp->value(), 1);
  QCOMPARE(zero->currentData().toString(), QString("0"));
  QCOMPARE(panel.config().tp, 1);
  strategy->setCurrentIndex(strategy->findData("sync"));
  QVERIFY(tp->isEnabled() && zero->isEnabled());
  QCOMPARE(tp->value(), 1);
  QCOMPARE(zero->currentData().toString(), QString("0"));
  QCOMPARE(panel.config().zero, 0);
}

QTEST_MAIN(TestWindowControls)
#include "tst_window_controls.moc"
