// The "Project to a cluster" panel, offscreen: opened from Run on a window, a GPU kind and a
// node count chosen, the figures it shows are engine/projection's project() for the same
// inputs; a layout too big for the GPU is drawn red with how much over; every figure says
// "projected" and names the published runs the model is validated against; its charts export
// (PNG, PDF, CSV). Screenshots for a person to look at, under <build>/screenshots/:
// projection-panel.png (1280×860), projection-panel-over.png (1100×760, over capacity),
// projection-panel-dark.png, and the charts' exports projection-{memory,step,sweep}.png.
// Run: ctest -R tst_window_projection --output-on-failure
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "charts/projection_chart.h"
#include "export/chart_export.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/projection_panel.h"
#include "theme.h"
#include "window_test.h"

using namespace paralab;
using namespace paralab::projection;
using paralab::test::child;
using paralab::test::quickConfig;

namespace {

ProjectionPanel* open(MainWindow& w) {
  auto* action = w.findChild<QAction*>("projectAction");
  if (!action) return nullptr;
  action->trigger();
  return w.findChild<ProjectionPanel*>();
}

void choose(ProjectionPanel* panel, const char* combo, const QString& text) {
  auto* c = child<QComboBox>(panel, combo);
  QVERIFY(c);
  int i = c->findData(text);
  if (i < 0) i = c->findText(text, Qt::MatchStartsWith);
  QVERIFY2(i >= 0, qPrintable(text));
  c->setCurrentIndex(i);
}

void set(ProjectionPanel* panel, const char* spin, int value) {
  auto* s = child<QSpinBox>(panel, spin);
  QVERIFY(s);
  s->setValue(value);
}

QString text(ProjectionPanel* panel, const char* label) {
  auto* l = child<QLabel>(panel, label);
  return l ? l->text() : QString();
}

QString num(double v, int decimals = 1) { return QLocale().toString(v, 'f', decimals); }

}  // namespace

class TestWindowProjection : public QObject {
  Q_OBJECT

 private slots:
  void figuresAreTheProjections();
  void overCapacityIsRed();
  void everyFigureSaysProjected();
  void sweepAndExport();
  void checkOnThisMachine();
};

// GPT-3 175B on 128 nodes of 8 H100s, tp 8, pp 8, full recomputation: the text and the bars are
// project()'s for the same inputs.
void TestWindowProjection::figuresAreTheProjections() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(10));
  ProjectionPanel* panel = open(w);
  QVERIFY(panel);
  QVERIFY(panel->window()->isVisible());
  choose(panel, "gpuKind", "h100-sxm");
  set(panel, "nodes", 128);
  set(panel, "gpusPerNode", 8);
  choose(panel, "projectionModel", "GPT-3 175B");
  set(panel, "projectTp", 8);
  set(panel, "projectPp", 8);
  choose(panel, "projectRecompute", "full");
  QVERIFY2(panel->projected(), qPrintable(panel->refusal()));

  Cluster cluster;
  cluster.gpu = loadGpu("h100-sxm");
  cluster.gpus = 1024;
  cluster.gpusPerNode = 8;
  const ModelSpec model = ModelSpec::megatronGpt(96, 12288, 96, 2048, 51200);
  Layout layout = layoutOf(quickConfig(10));
  layout.dp = 0;
  layout.tp = 8;
  layout.pp = 8;
  layout.microBatches = 0;
  layout.globalBatch = 1536;
  layout.recompute = Recompute::Full;
  const Projection p = project(model, layout, cluster);
  const Projection& shown = *panel->projected();
  QCOMPARE(shown.stepSeconds, p.stepSeconds);
  QCOMPARE(shown.mfu, p.mfu);
  QCOMPARE(shown.memory.total(), p.memory.total());
  QCOMPARE(shown.layout.dp, 16);

  const QString figures = text(panel, "projectedFigures");
  QVERIFY2(figures.contains(num(p.stepSeconds * 1e3) + " ms"), qPrintable(figures));
  QVERIFY2(figures.contains(num(p.tokensPerS, 0) + " tokens/s"), qPrintable(figures));
  QVERIFY2(figures.contains(num(p.tflopsPerGpu)), qPrintable(figures));
  QVERIFY2(figures.contains(num(p.mfu * 100) + "%"), qPrintable(figures));
  QVERIFY(figures.contains("1024 × NVIDIA H100 SXM"));
  // Opened again: the learner's edits are kept.
  QCOMPARE(open(w), panel);
  QCOMPARE(child<QSpinBox>(panel, "projectTp")->value(), 8);
  QCOMPARE(panel->projected()->stepSeconds, p.stepSeconds);

  // The bars: memory by category in GB, the step split in ms.
  auto charts = panel->charts();
  auto* memory = qobject_cast<ProjectionChart*>(charts[0]);
  auto* step = qobject_cast<ProjectionChart*>(charts[1]);
  QVERIFY(memory && step);
  const double mem[] = {p.memory.params, p.memory.grads, p.memory.optimizer, p.memory.activations,
                        p.memory.workspace};
  for (int i = 0; i < 5; ++i) QCOMPARE(memory->bars()[i]->data()->at(0)->value, mem[i] / 1e9);
  QCOMPARE(step->bars()[0]->data()->at(0)->value, p.split.compute * 1e3);
  QCOMPARE(step->bars()[1]->data()->at(0)->value, p.split.tpComm * 1e3);
  QCOMPARE(step->bars()[2]->data()->at(0)->value, p.split.ppBubble * 1e3);
  QCOMPARE(step->bars()[3]->data()->at(0)->value, p.split.dpCommExposed * 1e3);
  QVERIFY(p.fits());
  QCOMPARE(memory->overGB(), 0.0);
  QVERIFY(!memory->overNote());
  QVERIFY(text(panel, "projectedMemory").contains("fits"));

  // Screenshot of the panel as a learner sees it.
  QWidget* top = panel->window();
  top->resize(1280, 860);
  QTest::qWait(50);
  for (Chart* c : charts) c->replot();
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  QVERIFY(top->grab().save(dir + "/projection-panel.png"));
}

// GPT-3 175B on one node of A100s, tp 1, pp 1: far over 80 GB, drawn red with the excess named.
void TestWindowProjection::overCapacityIsRed() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(10));
  ProjectionPanel* panel = open(w);
  QVERIFY(panel);
  choose(panel, "gpuKind", "a100-80gb");
  set(panel, "nodes", 1);
  choose(panel, "projectionModel", "GPT-3 175B");
  set(panel, "projectTp", 1);
  set(panel, "projectPp", 1);
  set(panel, "globalBatch", 64);
  QVERIFY2(panel->projected(), qPrintable(panel->refusal()));
  const Projection& p = *panel->projected();
  QVERIFY(!p.fits());
  const double over = (p.memory.total() - p.memoryCapacity) / 1e9;
  auto* memory = qobject_cast<ProjectionChart*>(panel->charts()[0]);
  QCOMPARE(memory->overGB(), over);
  QVERIFY(memory->overNote());
  QVERIFY2(memory->overNote()->text().contains(QString::number(over, 'f', 1) + " GB over"),
           qPrintable(memory->overNote()->text()));
  QCOMPARE(memory->overNote()->color(), QColor(214, 39, 40));
  QCOMPARE(memory->bars()[0]->pen().color(), QColor(214, 39, 40));
  auto* note = child<QLabel>(panel, "projectedMemory");
  QVERIFY(note->styleSheet().contains("#d62728"));
  QVERIFY2(note->text().contains("by " + num(over) + " GB") && note->text().contains("not fit"),
           qPrintable(note->text()));
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  // At a smaller window (a laptop's screen), over capacity.
  panel->window()->resize(1100, 760);
  QTest::qWait(50);
  QVERIFY(panel->window()->grab().save(dir + "/projection-panel-over.png"));
}

void TestWindowProjection::everyFigureSaysProjected() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(10));
  ProjectionPanel* panel = open(w);
  QVERIFY(panel);
  choose(panel, "projectionModel", "GPT 1.7B");
  QVERIFY2(panel->projected(), qPrintable(panel->refusal()));
  QVERIFY(panel->window()->windowTitle().contains("projected"));
  const QString figures = text(panel, "projectedFigures");
  for (const QString& line : figures.split("<br>").mid(2))
    QVERIFY2(line.contains("Projected"), qPrintable(line));
  QVERIFY(text(panel, "projectedMemory").startsWith("Projected"));
  const QString validated = text(panel, "validatedBy");
  QVERIFY(validated.contains("projected"));
  QVERIFY(validated.contains("Narayanan et al. 2021"));
  QVERIFY(validated.contains("Rajbhandari et al. 2020"));
  for (Chart* c : panel->charts()) {
    QVERIFY2(c->title().contains("projected"), qPrintable(c->title()));
    QVERIFY(c->labels().join('\n').contains("Narayanan et al. 2021"));
    for (QCPAxis* a : {c->xAxis, c->yAxis})
      if (!a->label().isEmpty()) QVERIFY2(a->label().contains("projected"), qPrintable(a->label()));
    if (c != panel->charts()[2])
      QVERIFY2(c->subtitle().startsWith("Projected"), qPrintable(c->subtitle()));
  }
  // The settings' own model projects too (the engine's small GPT).
  RunConfig gpt = quickConfig(10);
  gpt.model = ModelKind::Gpt;
  gpt.layers = 2;
  gpt.hidden = 64;
  gpt.heads = 4;
  gpt.seq = 32;
  w.configPanel()->setConfig(gpt);
  choose(panel, "projectionModel", "The settings");
  panel->useRunLayout();
  QVERIFY2(panel->projected(), qPrintable(panel->refusal()));
  QCOMPARE(panel->projected()->model.layers, 2);
  QCOMPARE(panel->projected()->model.hidden, 64);
  // A strategy the projection does not cover is refused, in words, and nothing is drawn.
  RunConfig local = quickConfig(10, 2);
  local.strategy = "local-sgd";
  w.configPanel()->setConfig(local);
  QCOMPARE(QString::fromStdString(w.configPanel()->config().strategy), QString("local-sgd"));
  panel->refresh();
  QVERIFY(!panel->projected());
  QVERIFY2(text(panel, "projectionRefused").contains("local-sgd"),
           qPrintable(text(panel, "projectionRefused")));
  for (Chart* c : panel->charts()) QCOMPARE(c->pointCount(), 0);
}

// The sweep chart: one point per tp value, each project()'s; the charts export as PNG, PDF, CSV.
void TestWindowProjection::sweepAndExport() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(10));
  ProjectionPanel* panel = open(w);
  QVERIFY(panel);
  choose(panel, "gpuKind", "h200");
  set(panel, "nodes", 4);
  choose(panel, "projectionModel", "GPT 7.5B");
  choose(panel, "sweepAxis", "tp 1");
  auto* sweepChart = qobject_cast<ProjectionChart*>(panel->charts()[2]);
  QVERIFY(sweepChart);
  const auto& points = sweepChart->sweepPoints();
  QCOMPARE(int(points.size()), 4);
  for (size_t i = 0; i < points.size(); ++i) {
    QCOMPARE(points[i].value, 1 << i);
    Layout l = panel->layout();
    l.tp = points[i].value;
    if (auto why = validate(panel->model(), l, panel->cluster())) {
      QVERIFY(!points[i].projection);
      continue;
    }
    QVERIFY(points[i].projection);
    QCOMPARE(points[i].projection->stepSeconds,
             project(panel->model(), l, panel->cluster()).stepSeconds);
  }
  choose(panel, "sweepAxis", "pp 1");
  QCOMPARE(int(sweepChart->sweepPoints().size()), 5);

  QTemporaryDir tmp;
  for (Chart* c : panel->charts())
    for (ExportFormat f : {ExportFormat::Png, ExportFormat::Pdf, ExportFormat::Csv}) {
      const QString path = tmp.path() + '/' + c->stem() + '.' + exportSuffix(f);
      QCOMPARE(exportChart(*c, path, f), QString());
      QVERIFY(QFileInfo(path).size() > 0);
    }
  // The export as a report gets it (dark text on white), beside the panel's screenshot.
  const QString shots = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(shots);
  for (Chart* c : panel->charts())
    QCOMPARE(exportChart(*c, shots + '/' + c->stem() + ".png", ExportFormat::Png), QString());
  const QStringList csv = test::readLines(tmp.path() + "/projection-sweep.csv");
  QVERIFY2(csv.join('\n').contains("projected"), qPrintable(csv.join('\n')));
  QVERIFY(csv.join('\n').contains("pp,step_ms"));
  const QStringList mem = test::readLines(tmp.path() + "/projection-memory.csv");
  QVERIFY(mem.join('\n').contains("GB_per_gpu_projected"));

  // The dark theme recolours the panel's charts too (last: the palette is the application's).
  w.setTheme(Theme::Dark);
  panel->window()->resize(1280, 860);
  QTest::qWait(50);
  for (Chart* c : panel->charts()) {
    QCOMPARE(c->legend->textColor(), QApplication::palette().color(QPalette::WindowText));
    c->replot();
  }
  QVERIFY(panel->window()->grab().save(shots + "/projection-panel-dark.png"));
  w.setTheme(Theme::Light);
}

// "Check on this machine": the run shown, projected from this machine's measured figures, set
// beside the step time the run measured; before any step, the projection alone, saying so.
void TestWindowProjection::checkOnThisMachine() {
  MainWindow w;
  w.configPanel()->setConfig(quickConfig(12, 2));
  ProjectionPanel* panel = open(w);
  QVERIFY(panel);
  auto* button = child<QPushButton>(panel, "projectOnHost");
  QVERIFY(button);
  QSignalSpy checked(panel, &ProjectionPanel::hostChecked);
  button->click();
  QVERIFY(!button->isEnabled());  // measuring, off the GUI thread
  QVERIFY(checked.wait(30000));
  QVERIFY(button->isEnabled());
  QVERIFY(panel->hostProjection());
  QString check = text(panel, "hostCheck");
  QVERIFY2(check.contains("Projected on this machine: " +
                          num(panel->hostProjection()->stepSeconds * 1e3, 2) + " ms"),
           qPrintable(check));
  QVERIFY2(check.contains("no steps yet"), qPrintable(check));
  QVERIFY(check.contains("2 ranks on"));
  // Every part of the projected step is named, the batch included.
  QVERIFY2(check.contains("taking the batch " +
                          num(panel->hostProjection()->split.data * 1e3, 2) + " ms"),
           qPrintable(check));

  // After a run: the measured step beside it, and their ratio.
  w.startAction()->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(w.history().stepsSeen() >= 12, 30000);
  QTRY_VERIFY_WITH_TIMEOUT(w.startAction()->isEnabled(), 10000);  // finished
  button->click();
  QVERIFY(checked.wait(30000));
  check = text(panel, "hostCheck");
  const double measured = w.history().recentStepMs();
  const double projected = panel->hostProjection()->stepSeconds * 1e3;
  QVERIFY2(check.contains("Measured in the run shown: " + num(measured, 2) + " ms"),
           qPrintable(check));
  QVERIFY2(check.contains(num(projected / measured, 2) + "×"), qPrintable(check));
  QCOMPARE(panel->hostProjection()->layout.dp, 2);

  QWidget* top = panel->window();
  top->resize(1280, 860);
  QTest::qWait(50);
  const QString dir = QString(PARALAB_BINARY_DIR) + "/screenshots";
  QDir().mkpath(dir);
  QVERIFY(top->grab().save(dir + "/projection-panel-host.png"));
}

QTEST_MAIN(TestWindowProjection)
#include "tst_window_projection.moc"
