// ProjectionPanel: the settings' run (or a published shape) projected to a cluster of real GPUs
// (see projection_panel.h). See tests/app/tst_window_projection.cpp.
#include "panels/projection_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/projection_chart.h"
#include "panels/export_panel.h"
#include "settings.h"
#include "window/screen_room.h"

namespace paralab {

using namespace projection;

namespace {

QString num(double v, int decimals = 1) { return QLocale().toString(v, 'f', decimals); }

QSpinBox* spin(const char* name, int lo, int hi, int value, const QString& tip) {
  auto* s = new QSpinBox;
  s->setObjectName(name);
  s->setRange(lo, hi);
  s->setValue(value);
  s->setToolTip(tip);
  s->setAccelerated(true);
  return s;
}

}  // namespace

const std::vector<ProjectionPanel::Shape>& ProjectionPanel::shapes() {
  // Narayanan et al. 2021 Table 1 (vocabulary 51,200, sequence 2,048) and its batches; GPT-3
  // 175B (Brown et al. 2020: 96 layers, 12,288 wide, 96 heads, 3.2 M tokens a batch); a GPT of
  // Llama-2-70B's depth, width, heads, sequence and vocabulary (4 M tokens a batch).
  static const std::vector<Shape> s = {
      {"GPT 1.7B (Megatron-LM Table 1)", 24, 2304, 24, 2048, 51200, 512},
      {"GPT 7.5B (Megatron-LM Table 1)", 36, 4096, 32, 2048, 51200, 512},
      {"GPT-3 175B", 96, 12288, 96, 2048, 51200, 1536},
      {"70B GPT, Llama-2-70B's shape", 80, 8192, 64, 4096, 32000, 1024},
  };
  return s;
}

ProjectionPanel::ProjectionPanel(std::function<RunConfig()> runConfig, QWidget* parent)
    : QWidget(parent), m_runConfig(std::move(runConfig)) {
  setObjectName("projectionPanel");
  // [SECTION] The inputs: cluster, model, layout, sweep
  m_gpuKind = new QComboBox;
  m_gpuKind->setObjectName("gpuKind");
  for (const std::string& name : gpuNames()) {
    QString title = QString::fromStdString(name);
    try {
      const GpuSpec g = loadGpu(name);
      title = tr("%1 (%2 GB)").arg(QString::fromStdString(g.title)).arg(g.hbmGB);
    } catch (const ConfigError&) {
    }
    m_gpuKind->addItem(title, QString::fromStdString(name));
  }
  m_gpuKind->setToolTip(tr("The GPU kind, from its datasheet (resources/gpus)"));
  m_nodes = spin("nodes", 1, 8192, 4, tr("Nodes of the cluster"));
  m_perNode = spin("gpusPerNode", 1, 64, 8,
                   tr("GPUs in each node, joined by NVLink; nodes by "
                      "InfiniBand"));
  m_gpuCount = new QLabel;
  m_gpuCount->setObjectName("gpuCount");
  auto* count = new QHBoxLayout;
  count->addWidget(m_nodes);
  count->addWidget(new QLabel(tr("× GPUs per node")));
  count->addWidget(m_perNode);
  auto* clusterBox = new QGroupBox(tr("Cluster"));
  auto* clusterForm = new QFormLayout(clusterBox);
  clusterForm->addRow(tr("GPU"), m_gpuKind);
  clusterForm->addRow(tr("Nodes"), count);
  clusterForm->addRow(QString(), m_gpuCount);

  m_model = new QComboBox;
  m_model->setObjectName("projectionModel");
  m_model->addItem(tr("The settings' model"));
  for (const Shape& s : shapes()) m_model->addItem(tr(s.label));
  m_model->setToolTip(tr("The model of the settings on the left, or a published model's shape"));
  m_batch = spin("globalBatch", 1, 1 << 20, 512, tr("Sequences (samples) per step, all GPUs"));
  m_tp = spin("projectTp", 1, 64, 1, tr("Tensor-parallel degree (inside a node is best)"));
  m_pp = spin("projectPp", 1, 256, 1, tr("Pipeline stages"));
  m_micro = spin("projectMicroBatches", 0, 1 << 16, 0,
                 tr("Micro-batches per data-parallel replica per step; auto: micro-batches of "
                    "one sequence (Megatron-LM's default)"));
  m_micro->setSpecialValueText(tr("auto"));
  m_zero = new QComboBox;
  m_zero->setObjectName("projectZero");
  m_zero->addItems({tr("0 (none)"), tr("1: optimizer"), tr("2: + gradients"), tr("3: + params")});
  m_recompute = new QComboBox;
  m_recompute->setObjectName("projectRecompute");
  for (const ChoiceName<Recompute>& r : kRecomputes) m_recompute->addItem(r.name);
  auto* fromRun = new QPushButton(tr("Use the settings' layout"));
  fromRun->setObjectName("useRunLayout");
  fromRun->setToolTip(
      tr("tp, pp, micro-batches, ZeRO, recomputation and batch as the settings "
         "on the left have them; dp follows from the GPU count"));
  auto* tpPp = new QHBoxLayout;
  tpPp->addWidget(new QLabel(tr("tp")));
  tpPp->addWidget(m_tp, 1);
  tpPp->addWidget(new QLabel(tr("pp")));
  tpPp->addWidget(m_pp, 1);
  auto* modelBox = new QGroupBox(tr("Model and layout"));
  auto* modelForm = new QFormLayout(modelBox);
  modelForm->addRow(tr("Model"), m_model);
  modelForm->addRow(tr("Batch"), m_batch);
  modelForm->addRow(tr("Split"), tpPp);
  modelForm->addRow(tr("Micro-batches"), m_micro);
  modelForm->addRow(tr("ZeRO"), m_zero);
  modelForm->addRow(tr("Recompute"), m_recompute);
  modelForm->addRow(QString(), fromRun);

  m_sweepAxis = new QComboBox;
  m_sweepAxis->setObjectName("sweepAxis");
  m_sweepAxis->addItem(tr("tp 1, 2, 4, 8"), int(SweepAxis::Tp));
  m_sweepAxis->addItem(tr("pp 1, 2, 4, 8, 16"), int(SweepAxis::Pp));
  m_sweepAxis->setToolTip(tr("The axis the sweep chart varies, the rest of the layout kept"));

  // [SECTION] The figures, as text
  m_figures = new QLabel;
  m_figures->setObjectName("projectedFigures");
  m_figures->setWordWrap(true);
  m_figures->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_memoryNote = new QLabel;
  m_memoryNote->setObjectName("projectedMemory");
  m_memoryNote->setWordWrap(true);
  m_refused = new QLabel;
  m_refused->setObjectName("projectionRefused");
  m_refused->setWordWrap(true);
  m_refused->setStyleSheet("color: #d62728;");
  m_validated = new QLabel(
      tr("<small>Every figure here is <b>projected</b> from the GPUs' datasheets and the links' "
         "latency and bandwidth, never measured. The model is validated against %1.</small>")
          .arg(QString(Projection::kValidatedBy).toHtmlEscaped()));
  m_validated->setObjectName("validatedBy");
  m_validated->setWordWrap(true);
  auto* resultBox = new QGroupBox(tr("Projected"));
  auto* resultLayout = new QVBoxLayout(resultBox);
  resultLayout->addWidget(m_figures);
  resultLayout->addWidget(m_memoryNote);
  resultLayout->addWidget(m_refused);

  // [SECTION] The check on this machine
  m_host.button = new QPushButton(tr("Project the run shown on this machine"));
  m_host.button->setObjectName("projectOnHost");
  m_host.button->setToolTip(
      tr("Measures this machine (GEMMs at the run's shapes, the engine's kernels, the ranks' "
         "all-reduce; about a second) and projects the run shown from those figures, beside the "
         "step time the run measured"));
  m_host.text = new QLabel(tr("The same model, fed this machine's measured figures, set beside "
                              "the run you just made."));
  m_host.text->setObjectName("hostCheck");
  m_host.text->setWordWrap(true);
  m_host.text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* hostBox = new QGroupBox(tr("Check on this machine"));
  auto* hostLayout = new QVBoxLayout(hostBox);
  hostLayout->addWidget(m_host.button);
  hostLayout->addWidget(m_host.text);
  connect(m_host.button, &QPushButton::clicked, this, &ProjectionPanel::checkOnThisMachine);

  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(clusterBox);
  leftLayout->addWidget(modelBox);
  auto* sweepForm = new QFormLayout;
  sweepForm->addRow(tr("Sweep"), m_sweepAxis);
  leftLayout->addLayout(sweepForm);
  leftLayout->addWidget(resultBox);
  leftLayout->addWidget(m_validated);
  leftLayout->addWidget(hostBox);
  leftLayout->addStretch(1);
  // The column scrolls where the window is shorter than its boxes (the check's figures wrap to
  // several lines): nothing of it is cut off.
  auto* leftScroll = new QScrollArea;
  leftScroll->setWidget(left);
  leftScroll->setWidgetResizable(true);
  leftScroll->setFrameShape(QFrame::NoFrame);
  leftScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  left->setMinimumWidth(320);
  const int bar = leftScroll->verticalScrollBar()->sizeHint().width();
  leftScroll->setMinimumWidth(320 + bar);
  leftScroll->setMaximumWidth(400 + bar);

  // [SECTION] The charts
  m_memoryChart = new ProjectionChart(ProjectionChart::Kind::Memory);
  m_stepChart = new ProjectionChart(ProjectionChart::Kind::Step);
  m_sweepChart = new ProjectionChart(ProjectionChart::Kind::Sweep);
  auto* charts = new QSplitter(Qt::Vertical);
  charts->setChildrenCollapsible(false);
  for (ProjectionChart* c : {m_memoryChart, m_stepChart, m_sweepChart}) {
    // Least heights that leave the window inside a 1280×720 screen (screen_room.h).
    c->setMinimumHeight(c->kind() == ProjectionChart::Kind::Sweep ? 230 : 170);
    charts->addWidget(c);
    connect(c, &Chart::exportRequested, this, &ProjectionPanel::exportChart);
  }
  charts->setStretchFactor(0, 2);
  charts->setStretchFactor(1, 2);
  charts->setStretchFactor(2, 4);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(leftScroll);
  layout->addWidget(charts, 1);

  for (QComboBox* c : {m_gpuKind, m_zero, m_recompute, m_sweepAxis})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  for (QSpinBox* s : {m_nodes, m_perNode, m_tp, m_pp, m_micro, m_batch})
    connect(s, &QSpinBox::valueChanged, this, [this] { refresh(); });
  connect(m_model, &QComboBox::currentIndexChanged, this, [this](int i) {
    // A published shape comes with its published batch; the settings' model with theirs.
    const QSignalBlocker block(m_batch);
    m_batch->setValue(i > 0 ? shapes()[size_t(i - 1)].batch : m_runConfig().globalBatch());
    refresh();
  });
  connect(fromRun, &QPushButton::clicked, this, &ProjectionPanel::useRunLayout);
  useRunLayout();
}

QList<Chart*> ProjectionPanel::charts() const { return {m_memoryChart, m_stepChart, m_sweepChart}; }

void ProjectionPanel::useRunLayout() {
  const RunConfig c = m_runConfig();
  m_filling = true;
  m_tp->setValue(c.tp);
  m_pp->setValue(c.pp);
  m_micro->setValue(c.pp > 1 ? c.microbatches : 0);
  m_zero->setCurrentIndex(std::clamp(c.zero, 0, 3));
  const int rc = m_recompute->findText(QString::fromStdString(nameOf(c.recompute)));
  m_recompute->setCurrentIndex(c.model == ModelKind::Gpt && rc >= 0 ? rc : 0);
  if (m_model->currentIndex() == 0) m_batch->setValue(c.globalBatch());
  m_filling = false;
  refresh();
}

ModelSpec ProjectionPanel::model() const {
  const int i = m_model->currentIndex();
  if (i <= 0) return modelOf(m_runConfig(), kEngineVocab);
  const Shape& s = shapes()[size_t(i - 1)];
  ModelSpec m = ModelSpec::megatronGpt(s.layers, s.hidden, s.heads, s.seq, s.vocab);
  m.name = s.label;
  return m;
}

Layout ProjectionPanel::layout() const {
  Layout l = layoutOf(m_runConfig());
  l.dp = 0;  // follows from the GPU count
  l.tp = m_tp->value();
  l.pp = m_pp->value();
  l.microBatches = m_micro->value();
  l.microBatchSize = 0;
  l.globalBatch = m_batch->value();
  l.zero = m_zero->currentIndex();
  l.recompute = recomputeFromName(m_recompute->currentText().toStdString());
  return l;
}

Cluster ProjectionPanel::cluster() const {
  Cluster c;
  c.gpu = m_gpu;
  c.gpusPerNode = m_perNode->value();
  c.gpus = m_nodes->value() * m_perNode->value();
  return c;
}

void ProjectionPanel::refresh() {
  if (m_filling) return;
  m_projection.reset();
  m_refusal.clear();
  const QString gpuName = m_gpuKind->currentData().toString();
  try {
    m_gpu = loadGpu(gpuName.toStdString());
  } catch (const ConfigError& e) {
    m_refusal = QString::fromStdString(e.what());
  }
  const Cluster cl = cluster();
  m_gpuCount->setText(tr("= %1 GPUs").arg(QLocale().toString(cl.gpus)));
  ModelSpec m;
  Layout l;
  bool covered = true;  // the model and strategy are ones a projection covers
  if (m_refusal.isEmpty() && m_model->currentIndex() == 0) {
    // What a projection covers (as paralab-run --project): the MLP and the GPT, trained by
    // synchronous data parallelism with its model-parallel axes.
    const RunConfig c = m_runConfig();
    if (c.model != ModelKind::Gpt && c.model != ModelKind::Mlp)
      m_refusal = tr("model: the projection covers the mlp and the gpt (the settings have %1; "
                     "pick a published shape instead)")
                      .arg(QString::fromStdString(nameOf(c.model)));
    else if (c.strategy != "sync")
      m_refusal = tr("strategy: the projection covers synchronous data parallelism (the settings "
                     "have %1)")
                      .arg(QString::fromStdString(c.strategy));
    covered = m_refusal.isEmpty();
  }
  if (m_refusal.isEmpty()) {
    m = model();
    l = layout();
    if (auto why = validate(m, l, cl)) m_refusal = QString::fromStdString(*why);
  }
  if (m_refusal.isEmpty()) {
    try {
      m_projection = project(m, l, cl);
    } catch (const ConfigError& e) {
      m_refusal = QString::fromStdString(e.what());
    }
  }
  m_refused->setText(m_refusal.isEmpty() ? QString() : tr("Not projected: %1").arg(m_refusal));
  m_refused->setVisible(!m_refusal.isEmpty());
  if (!m_projection) {
    m_figures->setText(tr("Nothing projected."));
    m_memoryNote->clear();
    m_memoryChart->clear(m_refused->text());
    m_stepChart->clear(m_refused->text());
  } else {
    const Projection& p = *m_projection;
    const Layout& r = p.layout;
    m_figures->setText(
        tr("<b>%1</b><br>on %2 × %3, dp %4 · tp %5 · pp %6 · %7 micro-batches of %8<br>"
           "Projected step: <b>%9 ms</b><br>Projected throughput: <b>%10</b><br>"
           "Projected TFLOP/s per GPU: <b>%11</b><br>Projected MFU: <b>%12%</b>")
            .arg(QString::fromStdString(p.model.describe()).toHtmlEscaped())
            .arg(cl.gpus)
            .arg(QString::fromStdString(p.cluster.gpu.title).toHtmlEscaped())
            .arg(r.dp)
            .arg(r.tp)
            .arg(r.pp)
            .arg(r.microBatches)
            .arg(r.microBatchSize)
            .arg(num(p.stepSeconds * 1e3))
            .arg(num(p.throughput(), 0) + " " + p.throughputUnit())
            .arg(num(p.tflopsPerGpu))
            .arg(num(p.mfu * 100)));
    const double total = p.memory.total() / 1e9, cap = p.memoryCapacity / 1e9;
    if (p.fits()) {
      m_memoryNote->setStyleSheet(QString());
      m_memoryNote->setText(
          tr("Projected memory per GPU: %1 of %2 GB: fits.").arg(num(total), num(cap, 0)));
    } else {
      m_memoryNote->setStyleSheet("color: #d62728; font-weight: bold;");
      m_memoryNote->setText(tr("Projected memory per GPU: %1 GB, over the GPU's %2 GB by %3 GB: "
                               "does not fit.")
                                .arg(num(total), num(cap, 0), num(total - cap)));
    }
    m_memoryChart->showProjection(p);
    m_stepChart->showProjection(p);
  }
  // The sweep: the same inputs, one axis varied (it can be drawn where the layout itself is
  // refused: another value may be fine).
  if (!m_gpu.name.empty() && covered) {
    const auto axis = SweepAxis(m_sweepAxis->currentData().toInt());
    const std::vector<int> values =
        axis == SweepAxis::Tp ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1, 2, 4, 8, 16};
    Layout base = layout();
    if (axis == SweepAxis::Pp && base.microBatches > 0 && base.microBatches < 16)
      base.microBatches = 0;  // fewer micro-batches than stages: let each value derive its own
    try {
      m_sweepChart->showSweep(sweep(model(), base, cl, axis, values),
                              axis == SweepAxis::Tp ? "tp" : "pp");
    } catch (const ConfigError& e) {
      m_sweepChart->clear(QString::fromStdString(e.what()));
    }
  } else {
    m_sweepChart->clear(m_refused->text());
  }
}

void ProjectionPanel::checkOnThisMachine() {
  if (m_host.job) return;  // one check at a time: its end shows it
  MeasuredRun run;
  if (m_host.measured)
    run = m_host.measured();
  else
    run.config = m_runConfig();
  m_host.button->setEnabled(false);
  m_host.text->setText(tr("Measuring this machine (GEMMs at the run's shapes, the engine's "
                          "kernels, the ranks' all-reduce)…"));
  // About a second of measuring: an engine job, so the window stays smooth.
  jobs::JobCallbacks callbacks;
  callbacks.finished = [this, run] {
    QMetaObject::invokeMethod(
        this,
        [this, run] {
          if (!m_host.job) return;
          m_host.job->wait();  // it posted this as its last act
          const std::unique_ptr<jobs::Job<jobs::HostCheck>> job = std::move(m_host.job);
          m_host.button->setEnabled(true);
          if (!job->result()) {
            m_host.projection.reset();
            m_host.text->setText(tr("Not projected on this machine: %1")
                                     .arg(QString::fromStdString(job->error())));
          } else {
            showHostCheck(run, job->result()->host, job->result()->projection);
          }
          emit hostChecked();
        },
        Qt::QueuedConnection);
  };
  m_host.job = jobs::startHostCheck(run.config, std::move(callbacks));
}

void ProjectionPanel::showHostCheck(const MeasuredRun& run, const HostProfile& host,
                                    const Projection& p) {
  m_host.projection = p;
  const StepSplit& s = p.split;
  const double ms = p.stepSeconds * 1e3;
  QString text =
      tr("<b>Projected on this machine: %1 ms</b> per step (compute %2, TP %3, pipeline sends "
         "%4, bubble %5, exposed DP %6, optimizer %7, taking the batch %8 ms).")
          .arg(num(ms, 2), num(s.compute * 1e3, 2), num(s.tpComm * 1e3, 2),
               num(s.ppComm * 1e3, 2), num(s.ppBubble * 1e3, 2), num(s.dpCommExposed * 1e3, 2),
               num(s.optimizer * 1e3, 2), num(s.data * 1e3, 2));
  if (run.steps > 0 && run.stepMs > 0)
    text += tr("<br><b>Measured in the run shown: %1 ms</b> (mean of its last steps, %2 steps "
               "made). Projected / measured: <b>%3×</b>.")
                .arg(num(run.stepMs, 2))
                .arg(run.steps)
                .arg(num(ms / run.stepMs, 2));
  else
    text += tr("<br>The run shown has no steps yet: start it to set a measured step beside this.");
  text += tr("<br><small>From, per core: GEMM %1 GFLOP/s at the run's shapes; elementwise "
             "%2 GB/s%3; %4 ranks on %5 cores (%6 of a core each); %7: latency %8 µs, %9 GB/s.%10 "
             "The lessons' layouts are checked by <tt>paralab-bench project</tt>.</small>")
              .arg(num(host.gemmFlops / 1e9))
              .arg(num(host.bytesPerS / 1e9))
              .arg((host.attentionFlops > 0
                        ? tr("; attention %1 GFLOP/s").arg(num(host.attentionFlops / 1e9))
                        : QString()) +
                   tr("; loss %1 GB/s; optimizer %2 GB/s; the batch from the run's data %3 GB/s")
                       .arg(num(host.lossBytesPerS / 1e9), num(host.optimizerBytesPerS / 1e9),
                            num(host.dataBytesPerS / 1e9, 2)))
              .arg(host.ranks)
              .arg(host.cores)
              .arg(num(host.coreShare(), 2))
              .arg(QString::fromStdString(host.link.title).toHtmlEscaped())
              .arg(num(host.link.alphaS * 1e6))
              .arg(num(host.link.bytesPerS / 1e9, 2))
              .arg(run.running ? tr(" The run was training while this machine was measured: "
                                    "pause it for the machine's own figures.")
                               : QString());
  m_host.text->setText(text);
}

QString ProjectionPanel::hostCheckText() const { return m_host.text->text(); }

void ProjectionPanel::exportChart(Chart* chart) {
  QDir().mkpath(Settings::exportDir());
  ExportPanel panel(chart, Settings::exportDir(), this);
  if (panel.exec() != QDialog::Accepted) return;
  const QString err = panel.exportNow();
  if (err.isEmpty()) Settings::setExportDir(QFileInfo(panel.path()).absolutePath());
  m_refused->setVisible(true);
  m_refused->setStyleSheet(err.isEmpty() ? QString() : "color: #d62728;");
  m_refused->setText(err.isEmpty() ? tr("Wrote %1").arg(QDir::toNativeSeparators(panel.path()))
                                   : err);
}

ProjectionPanel* openProjectionPanel(QWidget* window, std::function<RunConfig()> runConfig) {
  auto* panel = window->findChild<ProjectionPanel*>();
  if (!panel) {
    auto* dialog = new QDialog(window, Qt::Window);
    dialog->setObjectName("projectionWindow");
    dialog->setWindowTitle(QObject::tr("Project to a cluster (projected, not measured)"));
    panel = new ProjectionPanel(std::move(runConfig), dialog);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(panel);
    dialog->resize(fittedToScreen(window, {1280, 860}));
  } else {
    panel->refresh();  // the settings' model as it is now; the layout as the learner left it
  }
  QWidget* top = panel->window();
  top->show();
  top->raise();
  top->activateWindow();
  return panel;
}

}  // namespace paralab
