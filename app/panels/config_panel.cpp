// ConfigPanel: grouped run settings (see config_panel.h). Tooltips say what each setting does
// in the words of the lessons; the strategy, link and GEMM lists come from the engine's own
// tables. See tests/app/tst_window.cpp (everyControlSetsItsField, invalidIsExplainedInline).
#include "panels/config_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <climits>
#include <vector>

#include "comm/link_model.h"
#include "parallel/strategy.h"
#include "session.h"

namespace paralab {

namespace {

constexpr const char* kBaseTip = "paralabBaseTip";  // a control's tooltip before any reason

QSpinBox* spinBox(const char* name, int min, int max, int step, const QString& tip) {
  auto* box = new QSpinBox;
  box->setObjectName(name);
  box->setRange(min, max);
  box->setSingleStep(step);
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}

QComboBox* comboBox(const char* name, const QList<QPair<QString, QString>>& items,
                    const QString& tip) {
  auto* box = new QComboBox;
  box->setObjectName(name);
  for (const auto& [text, value] : items) box->addItem(text, value);
  box->setToolTip(tip);
  return box;
}

void selectData(QComboBox* box, const QString& value) {
  const int i = box->findData(value);
  if (i >= 0) box->setCurrentIndex(i);
}
void selectData(QComboBox* box, const std::string& value) {
  selectData(box, QString::fromStdString(value));
}
std::string dataOf(const QComboBox* box) { return box->currentData().toString().toStdString(); }

void setItemEnabled(QComboBox* box, int index, bool enabled, const QString& tip) {
  auto* model = qobject_cast<QStandardItemModel*>(box->model());
  if (!model || !model->item(index)) return;
  model->item(index)->setEnabled(enabled);
  model->item(index)->setToolTip(tip);
}

}  // namespace

// [SECTION] Construction

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent) {
  for (const StrategyInfo& s : strategyTable()) {
    m_hasModelParallel |= std::string(s.name) == "model-parallel";
    m_hasMoe |= std::string(s.name) == "moe";
  }
  buildControls();
  setConfig(defaults());

  const auto changed = [this] { onChanged(); };
  for (QSpinBox* box : findChildren<QSpinBox*>())
    connect(box, &QSpinBox::valueChanged, this, changed);
  for (QComboBox* box : findChildren<QComboBox*>())
    connect(box, &QComboBox::currentIndexChanged, this, changed);
  connect(m_lr, &QDoubleSpinBox::valueChanged, this, changed);
  connect(m_sp, &QCheckBox::toggled, this, changed);
  probeGpu();
}

ConfigPanel::~ConfigPanel() {
  if (m_gpuProbe.joinable()) m_gpuProbe.join();
}

void ConfigPanel::buildControls() {
  // [Execution]
  m_execution = comboBox(
      "execution",
      {{tr("Serial (one rank)"), "serial"}, {tr("Parallel (several ranks)"), "parallel"}},
      tr("Serial trains on one rank: the reference every parallel run is compared with. "
         "Parallel splits the work over several ranks (threads in this process), each running "
         "the same program on its own shard."));
  m_device = comboBox(
      "device", {{tr("CPU"), "cpu"}, {tr("GPU (CUDA)"), "cuda"}},
      tr("Where the ranks compute: the CPU, or GPUs (tensors in device memory, rank r on GPU "
         "r mod G). The GEMM kernel list below follows the device."));
  setItemEnabled(m_device, 0, true, tr("The ranks compute on this machine's CPU cores"));
  m_ranks = spinBox("ranks", 2, 64, 1,
                    tr("Ranks: how many workers train together (the world size). With strong "
                       "scaling each gets 1/N of the global batch."));
  m_ranks->setValue(4);  // what Parallel starts with
  // [Parallelism] The --strategy values are the rows of the engine's table that the flag
  // itself selects (ZeRO, model-parallel and MoE rows are picked by their own controls).
  m_strategy = new QComboBox;
  m_strategy->setObjectName("strategy");
  m_zero = new QComboBox;
  m_zero->setObjectName("zero");
  m_zero->addItem(tr("0: none (every rank holds everything)"), "0");
  for (const StrategyInfo& s : strategyTable()) {
    const QString name = QString::fromLatin1(s.name), summary = QString::fromUtf8(s.summary);
    RunConfig probe;
    probe.strategy = s.name;
    probe.ranks = 2;
    const auto err = probe.validate();
    if (!(err && err->rfind("strategy: '", 0) == 0)) {
      m_strategy->addItem(name, name);
      m_strategy->setItemData(m_strategy->count() - 1, summary, Qt::ToolTipRole);
    } else if (name.startsWith("zero-")) {
      const QString stage = name.mid(5);
      m_zero->addItem(tr("%1: %2").arg(stage, summary.section(':', 0, 0)), stage);
      m_zero->setItemData(m_zero->count() - 1, summary, Qt::ToolTipRole);
    }
  }
  m_strategy->setToolTip(
      tr("How the ranks combine their work (the engine's strategy table; hover an entry for "
         "its summary). Synchronous kinds reproduce the serial loss curve; asynchronous ones "
         "trade staleness for speed."));
  m_zero->setToolTip(
      tr("ZeRO (Rajbhandari et al. 2020): shard the optimizer state (1), also the "
         "gradients (2), also the parameters (3, as FSDP) over the data-parallel "
         "ranks, trading memory per rank for gathers."));
  m_dpVersion = comboBox(
      "dpVersion", {{tr("bucketed, overlapped"), "bucket"}, {tr("naive, after backward"), "naive"}},
      tr("Synchronous data parallel: naive all-reduces each gradient after backward; bucketed "
         "groups gradients into buckets and all-reduces each while backward goes on."));
  m_servers = spinBox("servers", 1, 64, 1,
                      tr("Parameter-server shards, hosted by the first ranks; the others push "
                         "gradients to them and pull fresh parameters."));
  m_syncEvery = spinBox("syncEvery", 1, 10000, 1,
                        tr("Local SGD: every rank steps on its own, and all average their "
                           "parameters every H steps (fewer all-reduces, some drift)."));
  m_syncEvery->setPrefix(tr("every "));
  m_syncEvery->setSuffix(tr(" steps"));
  m_topology =
      comboBox("topology", {{tr("ring neighbours"), "ring"}, {tr("random pairs"), "random"}},
               tr("Gossip: whom each rank averages with after its step: its two ring "
                  "neighbours, or a random partner each step."));
  m_scaling = comboBox(
      "scaling",
      {{tr("Strong (fixed global batch)"), "strong"}, {tr("Weak (batch per rank)"), "weak"}},
      tr("Strong scaling keeps the global batch fixed and splits it over the ranks (Amdahl). "
         "Weak scaling gives every rank the batch, so the work grows with N (Gustafson)."));
  // [Model parallelism]
  m_dp = spinBox("dp", 0, 64, 1,
                 tr("Data-parallel degree: replicas of the (tensor- and pipeline-split) model, "
                    "each on its own slice of the batch. Auto: ranks / (tp × pp)."));
  m_dp->setSpecialValueText(tr("auto"));
  m_tp = spinBox("tp", 1, 64, 1,
                 tr("Tensor-parallel degree (Megatron-LM): each block's FFN matrices are split "
                    "over tp ranks, which all-reduce the activations twice per block."));
  m_sp = new QCheckBox(tr("sequence parallel"));
  m_sp->setObjectName("sp");
  m_sp->setToolTip(
      tr("Sequence parallelism (Korthikanti et al. 2022): the parts between the "
         "tensor-parallel matrices (LayerNorm, residual) are split by rows too, "
         "so each tp rank keeps 1/tp of those activations."));
  m_pp = spinBox("pp", 1, 64, 1,
                 tr("Pipeline stages: the blocks are cut into pp consecutive stages on "
                    "different ranks; micro-batches flow through them."));
  m_microbatches = spinBox("microbatches", 1, 1024, 1,
                           tr("Micro-batches per step: more of them shrink the pipeline bubble "
                              "(P − 1)/(M + P − 1) but make each one smaller."));
  m_schedule = comboBox("schedule", {{tr("1F1B"), "1f1b"}, {tr("GPipe"), "gpipe"}},
                        tr("Pipeline schedule. GPipe: all forwards, then all backwards (keeps M "
                           "micro-batches of activations). 1F1B: alternate one forward and one "
                           "backward once the pipe is full (keeps at most P)."));
  m_ep = spinBox("ep", 1, 64, 1,
                 tr("Expert-parallel degree (mixture of experts): the experts are spread over "
                    "ep ranks and tokens travel to their expert by all-to-all. Divides dp."));
  // [Interconnect and kernels]
  m_link = new QComboBox;
  m_link->setObjectName("link");
  const QList<QPair<QString, QString>> links = {{tr("None (shared memory)"), "none"},
                                                {tr("NVLink — emulated"), "nvlink"},
                                                {tr("PCIe — emulated"), "pcie"},
                                                {tr("InfiniBand — emulated"), "infiniband"},
                                                {tr("Ethernet — emulated"), "ethernet"}};
  for (const auto& [text, name] : links) {
    m_link->addItem(text, name);
    try {
      const LinkProfile p = loadLinkProfile(name.toStdString());
      m_link->setItemData(
          m_link->count() - 1,
          p.emulated() ? tr("%1: %2 µs per transfer, %3 GB/s per direction (emulated: transfers "
                            "are held back to this speed)")
                             .arg(QString::fromStdString(p.title))
                             .arg(p.latencyUs)
                             .arg(p.bandwidthGBps)
                       : tr("Thread ranks copy through shared memory at full speed"),
          Qt::ToolTipRole);
    } catch (const std::exception&) {  // the profile files are missing: the engine will say so
    }
  }
  m_link->setToolTip(
      tr("Interconnect between the ranks. Except for “none” it is emulated: "
         "each transfer takes at least the link's latency + bytes / bandwidth, "
         "so step times show what a slower link does."));
  m_gemm = new QComboBox;
  m_gemm->setObjectName("gemmKernel");
  m_gemm->setToolTip(
      tr("The matrix-multiply kernel of every layer's forward and backward pass, a rung of the "
         "chosen device's ladder (CPU: naive → SIMD → threaded → tiled → OpenBLAS; GPU: naive → "
         "coalesced → tiled → tensor cores → cuBLAS). Hover an entry for what it does; compare "
         "their speed with `paralab-bench gemm`."));
  fillGemm("cpu");
  // [Model, data, training]
  m_model = comboBox("model", {{tr("MLP"), "mlp"}, {tr("Mixture of experts"), "moe"}},
                     tr("MLP: residual blocks of LayerNorm → H→4H → GELU → 4H→H. Mixture of "
                        "experts: each block's FFN becomes E experts behind a router."));
  m_hidden = spinBox("hidden", 1, 8192, 16,
                     tr("Hidden width H: the width of every residual block. The model is "
                        "784 → H, then L blocks of [LayerNorm → H→4H → GELU → 4H→H], then H → 10; "
                        "parameters grow as about 8·L·H²."));
  m_layers =
      spinBox("layers", 1, 64, 1,
              tr("Residual blocks L: how deep the MLP is. Each block adds about 8·H² "
                 "parameters and one forward and backward pass of its two matrix products."));
  m_experts = spinBox("experts", 1, 256, 1, tr("Experts per block (E)."));
  m_topk = spinBox("topk", 1, 256, 1, tr("Experts each token is routed to (top-k of the router)."));
  m_dataset = comboBox(
      "dataset",
      {{tr("Fashion-MNIST"), "fashion-mnist"}, {tr("Synthetic (Gaussian blobs)"), "synthetic"}},
      tr("Training data. Fashion-MNIST: 60 000 clothing images of 28×28 pixels in "
         "10 classes. Synthetic: 10 overlapping Gaussian blobs seen through a fixed "
         "random projection as 784 pixels, generated in memory (nothing to install, quick "
         "to start)."));
  m_batch = spinBox("batch", 1, 65536, 32,
                    tr("Batch B: samples per step, summed over all ranks with strong scaling "
                       "(per rank with weak). Larger batches raise samples/s until the machine "
                       "is busy, and take fewer, larger steps."));
  m_lr = new QDoubleSpinBox;
  m_lr->setObjectName("lr");
  m_lr->setDecimals(5);
  m_lr->setRange(0.00001, 10);
  m_lr->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  m_lr->setToolTip(
      tr("Learning rate: how far each step moves the parameters along the gradient. "
         "Too small learns slowly; too large makes the loss jump or diverge."));
  m_optimizer =
      comboBox("optimizer",
               {{tr("SGD"), "sgd"}, {tr("SGD with momentum"), "momentum"}, {tr("Adam"), "adam"}},
               tr("How gradients become updates. SGD: parameters −= lr · gradient. "
                  "Momentum: keeps a running velocity (one extra copy of the parameters). "
                  "Adam: per-parameter step sizes (two extra copies)."));
  m_steps = spinBox("steps", 0, 10'000'000, 100,
                    tr("Steps to run before the run finishes; “until stopped” runs until you "
                       "press Pause or Reset."));
  m_steps->setSpecialValueText(tr("until stopped"));
  m_evalEvery = spinBox("evalEvery", 0, 1'000'000, 10,
                        tr("Measure test accuracy every K steps (the orange points of the loss "
                           "chart), on held-out test samples; “never” skips it."));
  m_evalEvery->setSpecialValueText(tr("never"));
  m_evalEvery->setSuffix(tr(" steps"));
  m_seed = spinBox("seed", 0, INT_MAX, 1,
                   tr("Seed of the initial weights, the data order and the synthetic data: the "
                      "same seed and settings give the same loss curve."));

  // A group whose rows are "label: control"; the label carries the control's tooltip too, so
  // hovering either explains it.
  auto group = [this](const QString& title, const QList<QPair<QString, QWidget*>>& rows) {
    auto* box = new QGroupBox(title);
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    for (const auto& [text, control] : rows) {
      control->setProperty(kBaseTip, control->toolTip());
      if (text.isEmpty()) {
        form->addRow(control);
      } else {
        auto* label = new QLabel(text);
        label->setBuddy(control);
        label->setToolTip(control->toolTip());
        form->addRow(label, control);
      }
      m_formOf.insert(control, form);
    }
    return box;
  };

  m_problem = new QLabel;
  m_problem->setObjectName("configProblem");
  m_problem->setWordWrap(true);
  m_problem->setTextFormat(Qt::PlainText);
  m_problem->setVisible(false);
  m_note = new QLabel;
  m_note->setObjectName("configNote");
  m_note->setWordWrap(true);
  m_note->setTextFormat(Qt::PlainText);
  m_note->setVisible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setSpacing(8);
  // validate()'s line at the top, where it is seen whichever group is scrolled into view.
  layout->addWidget(m_problem);
  layout->addWidget(m_note);
  layout->addWidget(
      group(tr("Execution"),
            {{tr("Execution"), m_execution}, {tr("Device"), m_device}, {tr("Ranks"), m_ranks}}));
  layout->addWidget(group(tr("Parallelism"), {{tr("Strategy"), m_strategy},
                                              {tr("ZeRO stage"), m_zero},
                                              {tr("All-reduce"), m_dpVersion},
                                              {tr("Servers"), m_servers},
                                              {tr("Average"), m_syncEvery},
                                              {tr("Neighbours"), m_topology},
                                              {tr("Scaling"), m_scaling}}));
  layout->addWidget(group(tr("Model parallelism"), {{tr("Data parallel (dp)"), m_dp},
                                                    {tr("Tensor parallel (tp)"), m_tp},
                                                    {QString(), m_sp},
                                                    {tr("Pipeline stages (pp)"), m_pp},
                                                    {tr("Micro-batches"), m_microbatches},
                                                    {tr("Schedule"), m_schedule},
                                                    {tr("Expert parallel (ep)"), m_ep}}));
  layout->addWidget(group(tr("Interconnect and kernels"),
                          {{tr("Interconnect"), m_link}, {tr("GEMM kernel"), m_gemm}}));
  layout->addWidget(group(tr("Model"), {{tr("Kind"), m_model},
                                        {tr("Hidden width H"), m_hidden},
                                        {tr("Residual blocks L"), m_layers},
                                        {tr("Experts"), m_experts},
                                        {tr("Top-k"), m_topk}}));
  layout->addWidget(group(tr("Data"), {{tr("Dataset"), m_dataset}, {tr("Batch"), m_batch}}));
  layout->addWidget(group(tr("Training"), {{tr("Learning rate"), m_lr},
                                           {tr("Optimizer"), m_optimizer},
                                           {tr("Steps"), m_steps},
                                           {tr("Test accuracy every"), m_evalEvery},
                                           {tr("Seed"), m_seed}}));
  layout->addStretch(1);

  setItemEnabled(m_device, 1, false, tr("Looking for a GPU…"));
}

// [SECTION] Values

RunConfig ConfigPanel::defaults() {
  RunConfig c;
  c.steps = 1000;  // about two epochs of Fashion-MNIST: long enough to watch the loss fall
  return c;
}

RunConfig ConfigPanel::config() const {
  RunConfig c = m_base;
  c.model = dataOf(m_model);
  c.hidden = m_hidden->value();
  c.layers = m_layers->value();
  c.experts = m_experts->value();
  c.topk = m_topk->value();
  c.dataset = dataOf(m_dataset);
  c.batch = m_batch->value();
  c.lr = m_lr->value();
  c.optimizer = dataOf(m_optimizer);
  c.steps = m_steps->value();
  c.evalEvery = m_evalEvery->value();
  c.seed = uint64_t(m_seed->value());
  c.device = dataOf(m_device);
  c.kernel = dataOf(m_gemm);
  c.link = dataOf(m_link);
  c.scaling = dataOf(m_scaling);
  if (dataOf(m_execution) == "serial") {
    c.ranks = 1;
    c.strategy = "sync";
    c.zero = 0;
    c.dp = 0;
    c.tp = c.pp = c.ep = 1;
    c.sp = false;
    c.microbatches = 1;
    c.servers = 1;
    return c;
  }
  const Applies a = applies();
  c.ranks = m_ranks->value();
  c.strategy = a.strategy ? dataOf(m_strategy) : "sync";
  c.zero = a.zero ? m_zero->currentData().toInt() : 0;
  c.dpVersion = dataOf(m_dpVersion);
  c.servers = c.strategy == "ps-sync" || c.strategy == "ps-async" ? m_servers->value() : 1;
  c.syncEvery = m_syncEvery->value();
  c.topology = dataOf(m_topology);
  c.dp = a.dp ? m_dp->value() : 0;
  c.tp = a.tp;
  c.sp = a.sp && m_sp->isChecked();
  c.pp = a.pp;
  c.microbatches = a.pipeline ? m_microbatches->value() : 1;
  c.schedule = dataOf(m_schedule);
  c.ep = a.ep ? m_ep->value() : 1;
  return c;
}

ConfigPanel::Applies ConfigPanel::applies() const {
  Applies a;
  a.parallel = dataOf(m_execution) == "parallel";
  a.moe = dataOf(m_model) == "moe";
  const bool sync = dataOf(m_strategy) == "sync";
  // Tensor and pipeline parallelism apply to sync only; the strategy can be chosen while they
  // are not in use. Deciding tp and pp first keeps the two from locking each other.
  a.modelParallel = a.parallel && m_hasModelParallel && sync && !a.moe;
  a.tp = a.modelParallel ? m_tp->value() : 1;
  a.pp = a.modelParallel ? m_pp->value() : 1;
  a.strategy = a.parallel && !a.moe && a.tp == 1 && a.pp == 1;
  a.zero = a.parallel && !a.moe && (sync || !a.strategy);
  a.sp = a.modelParallel && a.tp > 1;
  a.pipeline = a.modelParallel && a.pp > 1;
  a.ep = a.parallel && m_hasMoe && a.moe;
  a.dp = a.parallel && (m_hasModelParallel || m_hasMoe);
  return a;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  m_base = c;
  {
    const QList<QWidget*> children = findChildren<QWidget*>();
    std::vector<QSignalBlocker> blockers;
    blockers.reserve(size_t(children.size()));
    for (QWidget* w : children) blockers.emplace_back(w);
    const bool parallel = c.ranks > 1;
    selectData(m_execution, QString(parallel ? "parallel" : "serial"));
    if (parallel) m_ranks->setValue(c.ranks);
    selectData(m_strategy, c.strategy);
    selectData(m_zero, QString::number(c.zero));
    selectData(m_dpVersion, c.dpVersion);
    m_servers->setValue(c.servers);
    m_syncEvery->setValue(c.syncEvery);
    selectData(m_topology, c.topology);
    selectData(m_scaling, c.scaling);
    m_dp->setValue(c.dp);
    m_tp->setValue(c.tp);
    m_sp->setChecked(c.sp);
    m_pp->setValue(c.pp);
    m_microbatches->setValue(c.microbatches);
    selectData(m_schedule, c.schedule);
    m_ep->setValue(c.ep);
    selectData(m_link, c.link);
    selectData(m_device, c.device);
    fillGemm(dataOf(m_device));
    selectData(m_gemm, c.kernel);
    selectData(m_model, c.model);
    m_hidden->setValue(c.hidden);
    m_layers->setValue(c.layers);
    m_experts->setValue(c.experts);
    m_topk->setValue(c.topk);
    selectData(m_dataset, c.dataset);
    m_batch->setValue(c.batch);
    m_lr->setValue(c.lr);
    selectData(m_optimizer, c.optimizer);
    m_steps->setValue(c.steps);
    m_evalEvery->setValue(c.evalEvery);
    m_seed->setValue(int(std::min<uint64_t>(c.seed, INT_MAX)));
  }
  updateAvailability();
  showValidation();
  emit configChanged();
}

void ConfigPanel::onChanged() {
  fillGemm(dataOf(m_device));
  updateAvailability();
  showValidation();
  emit configChanged();
}

// [SECTION] What applies: enabled, shown, and why not

void ConfigPanel::setAvailable(QWidget* w, bool available, const QString& reason) {
  w->setEnabled(available);
  const QString base = w->property(kBaseTip).toString();
  const QString tip =
      available || reason.isEmpty() ? base : base + "\n\n" + tr("Not available: %1").arg(reason);
  w->setToolTip(tip);
  if (QFormLayout* form = m_formOf.value(w))
    if (QWidget* label = form->labelForField(w)) {
      label->setEnabled(available);
      label->setToolTip(tip);
    }
}

void ConfigPanel::setRowShown(QWidget* w, bool shown) {
  if (QFormLayout* form = m_formOf.value(w)) form->setRowVisible(w, shown);
}

void ConfigPanel::updateAvailability() {
  const Applies a = applies();
  const bool parallel = a.parallel, moe = a.moe;
  const std::string strategy = a.strategy ? dataOf(m_strategy) : "sync";
  const bool sync = strategy == "sync";
  const QString serialWhy = tr("serial execution trains on one rank (choose Parallel)");

  setAvailable(m_ranks, parallel, serialWhy);
  setAvailable(m_strategy, a.strategy,
               !parallel ? serialWhy
               : moe     ? tr("a mixture of experts trains with synchronous data parallelism")
                         : tr("tensor and pipeline parallelism compose with sync only (set tp "
                              "and pp to 1 to choose another strategy)"));
  setAvailable(m_zero, a.zero,
               !parallel ? serialWhy
               : moe     ? tr("a mixture of experts trains without ZeRO")
                         : tr("ZeRO shards synchronous data parallelism (strategy sync); the "
                              "run uses ZeRO 0"));
  setAvailable(m_scaling, parallel, serialWhy);
  setRowShown(m_dpVersion, parallel && sync && m_zero->currentData().toInt() == 0);
  setRowShown(m_servers, parallel && (strategy == "ps-sync" || strategy == "ps-async"));
  setRowShown(m_syncEvery, parallel && strategy == "local-sgd");
  setRowShown(m_topology, parallel && strategy == "gossip");
  m_servers->setMaximum(m_ranks->value());

  // Model parallelism lights up with the engine's "model-parallel" and "moe" table rows.
  const QString noMp = tr("the engine has no tensor or pipeline parallelism yet");
  const bool mpOk = a.modelParallel;
  const QString mpWhy = !m_hasModelParallel ? noMp
                        : !parallel         ? serialWhy
                        : moe ? tr("a mixture of experts composes with data and expert "
                                   "parallelism only")
                              : tr("tensor and pipeline parallelism compose with strategy sync");
  setAvailable(m_dp, a.dp, serialWhy);
  setAvailable(m_tp, mpOk, mpWhy);
  setAvailable(m_pp, mpOk, mpWhy);
  setAvailable(
      m_sp, a.sp,
      mpOk ? tr("sequence parallelism splits the tensor-parallel group's work (tp ≥ 2)") : mpWhy);
  const QString ppWhy =
      mpOk ? tr("micro-batches and schedules belong to a pipeline (pp ≥ 2)") : mpWhy;
  setAvailable(m_microbatches, a.pipeline, ppWhy);
  setAvailable(m_schedule, a.pipeline, ppWhy);
  setAvailable(m_ep, a.ep,
               !m_hasMoe   ? tr("the engine has no expert parallelism yet")
               : !parallel ? serialWhy
                           : tr("expert parallelism spreads the experts of a mixture-of-experts "
                                "model (Model kind)"));
  const int moeIndex = m_model->findData("moe");
  setItemEnabled(m_model, moeIndex, m_hasMoe,
                 m_hasMoe ? tr("Each block's FFN becomes E experts behind a router")
                          : tr("The engine has no mixture-of-experts model yet"));
  setRowShown(m_experts, moe);
  setRowShown(m_topk, moe);
}

void ConfigPanel::showValidation() {
  const QString p = problem();
  m_problem->setText(p.isEmpty() ? QString() : tr("Cannot run: %1").arg(p));
  m_problem->setVisible(!p.isEmpty());
  // Red that reads on light and dark palettes alike.
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  m_problem->setStyleSheet(dark ? "color: #ff8a80;" : "color: #c62828;");
}

// validate()'s line in the panel's words: the field it names becomes the control's label
// ("ZeRO stage: …" for "zero: …") and flags lose their dashes ("--strategy sync" reads
// "strategy sync"), so the learner knows which control to change.
QString ConfigPanel::problem() const {
  const auto err = config().validate();
  if (!err) return {};
  QString text = QString::fromStdString(*err);
  text.replace(QRegularExpression("--([a-z][a-z-]*)"), "\\1");
  const int colon = text.indexOf(": ");
  if (colon <= 0) return text;
  const QString key = text.left(colon);
  auto* control = findChild<QWidget*>(key == "kernel" ? QString("gemmKernel") : key);
  QFormLayout* form = control ? m_formOf.value(control) : nullptr;
  auto* label = form ? qobject_cast<QLabel*>(form->labelForField(control)) : nullptr;
  if (!label) return text;
  return label->text().remove('&').trimmed() + text.mid(colon);
}

void ConfigPanel::setNote(const QString& note, bool warning) {
  m_note->setText(note);
  m_note->setVisible(!note.isEmpty());
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  m_note->setStyleSheet(warning ? (dark ? "color: #ffcc80;" : "color: #a84300;")
                                : (dark ? "color: #b0b0b0;" : "color: #555555;"));
}

void ConfigPanel::setLiveHint(const QString& hint) {
  for (QGroupBox* box : findChildren<QGroupBox*>()) box->setToolTip(hint);
  m_note->setToolTip(hint);
}

QString ConfigPanel::note() const { return m_note->isHidden() ? QString() : m_note->text(); }

// [SECTION] Device and GEMM: the CUDA runtime may take a moment to answer, so it is asked off
// the GUI thread and the GPU entry stays disabled until it has.

void ConfigPanel::probeGpu() {
  m_gpuProbe = std::thread([this] {
    const GpuAvailability gpus = gpuAvailability();
    const QString name = QString::fromStdString(gpus.name);
    const QString reason = gpus.count > 0
                               ? QString()
                               : tr("no usable GPU (%1)").arg(QString::fromStdString(gpus.reason));
    QMetaObject::invokeMethod(
        this,
        [this, name, count = gpus.count, reason] {
          if (count > 0)
            setItemEnabled(
                m_device, 1, true,
                tr("%n GPU(s): %1; rank r computes on GPU r mod %n", "", count).arg(name));
          else
            setGpuReason(reason);
        },
        Qt::QueuedConnection);
  });
}

void ConfigPanel::setGpuReason(const QString& reason) {
  m_gpuReason = reason;
  setItemEnabled(m_device, 1, false, reason);
  m_device->setToolTip(m_device->property(kBaseTip).toString() + "\n\n" +
                       tr("GPU not available: %1").arg(reason));
  if (QFormLayout* form = m_formOf.value(m_device))
    if (QWidget* label = form->labelForField(m_device)) label->setToolTip(m_device->toolTip());
}

// The GEMM list holds the ladder of `device` (the engine's registry), each entry's tooltip its
// summary. Switching device keeps the kernel when the other ladder has one of that name (naive,
// tiled, vendor), else picks vendor.
void ConfigPanel::fillGemm(const std::string& device) {
  if (device == m_gemmDevice) return;
  const QSignalBlocker block(m_gemm);
  const QString previous = m_gemm->currentData().toString();
  m_gemm->clear();
  for (const GemmChoice& k : gemmChoices(device)) {
    const QString name = QString::fromStdString(k.name);
    m_gemm->addItem(name, name);
    m_gemm->setItemData(m_gemm->count() - 1, QString::fromStdString(k.summary), Qt::ToolTipRole);
  }
  m_gemmDevice = device;
  selectData(m_gemm, QString("vendor"));
  selectData(m_gemm, previous);
}

}  // namespace paralab
