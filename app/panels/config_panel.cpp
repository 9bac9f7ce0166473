// ConfigPanel: grouped run settings made from the engine's settings table (see config_panel.h).
// Nothing here names a setting's range, choices or help: a control is the table's row drawn as
// a widget. The window adds one control of its own, Serial / Parallel.
// See tests/app/tst_window.cpp (everyControlSetsItsField, invalidIsExplainedInline).
#include "panels/config_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <climits>
#include <cmath>
#include <vector>

#include "capabilities.h"
#include "job_command.h"
#include "panels/job_fields.h"
#include "panels/wheel_guard.h"
#include "schema.h"

namespace paralab {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

void selectData(QComboBox* box, const QString& value) {
  const int i = box->findData(value);
  if (i >= 0) box->setCurrentIndex(i);
}

void setItemEnabled(QComboBox* box, int index, bool enabled, const QString& tip) {
  auto* model = qobject_cast<QStandardItemModel*>(box->model());
  if (!model || !model->item(index)) return;
  model->item(index)->setEnabled(enabled);
  model->item(index)->setToolTip(tip);
}

// The control's value in the schema's terms.
SettingValue valueOf(const Setting& s, const QWidget* w) {
  if (auto* box = qobject_cast<const QComboBox*>(w))
    return parseValue(s, box->currentData().toString().toStdString());
  if (auto* spin = qobject_cast<const QSpinBox*>(w)) return int64_t(spin->value());
  if (auto* spin = qobject_cast<const QDoubleSpinBox*>(w)) return spin->value();
  if (auto* check = qobject_cast<const QCheckBox*>(w)) return check->isChecked();
  return qobject_cast<const QLineEdit*>(w)->text().toStdString();
}

constexpr int kRealDecimals = 5;

}  // namespace

// [SECTION] Construction

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent) {
  buildControls();
  setConfig(defaults());
  for (const Control& c : m_controls) {
    QWidget* w = c.widget;
    if (auto* box = qobject_cast<QComboBox*>(w))
      connect(box, &QComboBox::currentIndexChanged, this, &ConfigPanel::onChanged);
    else if (auto* spin = qobject_cast<QSpinBox*>(w))
      connect(spin, &QSpinBox::valueChanged, this, &ConfigPanel::onChanged);
    else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(w))
      connect(dspin, &QDoubleSpinBox::valueChanged, this, &ConfigPanel::onChanged);
    else if (auto* check = qobject_cast<QCheckBox*>(w))
      connect(check, &QCheckBox::toggled, this, &ConfigPanel::onChanged);
    else if (auto* edit = qobject_cast<QLineEdit*>(w))
      connect(edit, &QLineEdit::editingFinished, this, &ConfigPanel::onChanged);
  }
  connect(m_execution, &QComboBox::currentIndexChanged, this, &ConfigPanel::onExecutionChanged);
  connect(m_jobFields, &JobFields::hostsChanged, this, &ConfigPanel::onChanged);
  probeGpu();
}

ConfigPanel::~ConfigPanel() = default;

QWidget* ConfigPanel::makeControl(const Setting& s) {
  QWidget* w = nullptr;
  if (s.choices) {
    // Long entries ("InfiniBand NDR — emulated") are shown whole in the list, not by widening
    // the panel, which shares its dock area with the lessons.
    auto* box = new QComboBox;
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(14);
    w = box;
  } else if (s.type == SettingType::Integer) {
    auto* spin = new QSpinBox;
    spin->setRange(int(s.min), int(std::min<double>(s.max, INT_MAX)));
    spin->setSingleStep(s.step);
    spin->setAccelerated(true);
    if (s.min == 0 && !s.zeroMeans.empty())  // "auto: ranks / (tp × pp)" reads "auto"
      spin->setSpecialValueText(qs(s.zeroMeans.substr(0, s.zeroMeans.find(':'))));
    if (!s.unit.empty()) spin->setSuffix(" " + qs(s.unit));
    w = spin;
  } else if (s.type == SettingType::Real) {
    auto* spin = new QDoubleSpinBox;
    spin->setDecimals(kRealDecimals);
    spin->setRange(s.minOpen ? s.min + std::pow(10.0, -kRealDecimals) : s.min, s.max);
    spin->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    if (!s.unit.empty()) spin->setSuffix(" " + qs(s.unit));
    w = spin;
  } else if (s.type == SettingType::Switch) {
    w = new QCheckBox(qs(s.label));
  } else {
    w = new QLineEdit;
  }
  w->setObjectName(qs(s.key));
  return w;
}

void ConfigPanel::buildControls() {
  m_execution = new QComboBox;
  m_execution->setObjectName("execution");
  m_execution->addItem(tr("Serial (one rank)"), "serial");
  m_execution->addItem(tr("Parallel (several ranks)"), "parallel");
  m_execution->setToolTip(
      tr("Serial trains on one rank: the reference every parallel run is compared with. "
         "Parallel splits the work over several ranks (threads in this process), each running "
         "the same program on its own shard."));

  auto* layout = new QVBoxLayout(this);
  layout->setSpacing(8);
  m_problem = new QLabel;
  m_problem->setObjectName("configProblem");
  m_note = new QLabel;
  m_note->setObjectName("configNote");
  for (QLabel* l : {m_problem, m_note}) {
    l->setWordWrap(true);
    l->setTextFormat(Qt::PlainText);
    l->setVisible(false);
    layout->addWidget(l);  // at the top, seen whichever group is scrolled into view
  }

  // A group per name of the table, its rows "label: control" in table order; the label carries
  // the control's tooltip too, so hovering either explains it.
  for (const std::string& group : settingGroups()) {
    auto* box = new QGroupBox(qs(group));
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    const auto addRow = [&](const QString& label, QWidget* w) {
      if (label.isEmpty()) {
        form->addRow(w);
      } else {
        auto* l = new QLabel(label);
        l->setBuddy(w);
        l->setToolTip(w->toolTip());
        form->addRow(l, w);
      }
      m_formOf.insert(w, form);
    };
    if (group == "Execution") addRow(tr("Execution"), m_execution);
    for (const Setting& s : runSettings()) {
      if (!s.inWindow || s.group != group) continue;
      Control c{&s, makeControl(s), qs(s.help) + (s.more.empty() ? "" : "\n\n" + qs(s.more))};
      c.widget->setToolTip(c.tip);
      if (s.choices) fillChoices(c, RunConfig{});
      addRow(s.type == SettingType::Switch ? QString() : qs(s.label), c.widget);
      m_controls.append(c);
      if (s.key == "device") {  // the GPU's reason, where a learner looks for the GPU
        m_gpuNote = new QLabel;
        m_gpuNote->setObjectName("gpuNote");
        m_gpuNote->setWordWrap(true);
        m_gpuNote->setEnabled(false);  // read as a note, in the palette's muted text
        addRow(QString(), m_gpuNote);
        form->setRowVisible(m_gpuNote, false);
      }
    }
    if (group == "Execution") addRow(QString(), m_jobFields = new JobFields);
    if (form->rowCount() == 0) {  // a group with no control in the window
      delete box;
      continue;
    }
    layout->addWidget(box);
  }
  layout->addStretch(1);
  WheelGuard::guard(this);  // the wheel scrolls the settings, not the field under the pointer
  m_ranks = findChild<QSpinBox*>("ranks");
  auto* device = findChild<QComboBox*>("device");
  setItemEnabled(device, device->findData("cuda"), false, tr("Looking for a GPU…"));
  // Ranks as processes need this build's MPI and an mpirun; NCCL a GPU too (probeGpu).
  auto* backend = findChild<QComboBox*>("backend");
  const QString noMpi = !mpiBuilt()                 ? tr("this build has no MPI")
                        : mpirunProgram().isEmpty() ? tr("mpirun was not found (install OpenMPI)")
                                                    : QString();
  setItemEnabled(backend, backend->findData("mpi"), noMpi.isEmpty(), noMpi);
  // A Slurm job's ranks are this build's paralab-run under the cluster's mpirun.
  setItemEnabled(backend, backend->findData("slurm"), mpiBuilt(),
                 mpiBuilt() ? QString() : tr("this build has no MPI"));
  setItemEnabled(backend, backend->findData("nccl"), false,
                 !noMpi.isEmpty() ? noMpi
                 : !ncclBuilt()   ? tr("this build has no NCCL")
                                  : tr("Looking for a GPU…"));
}

// [SECTION] Values

RunConfig ConfigPanel::defaults() {
  RunConfig c;
  c.steps = 1000;  // about two epochs of Fashion-MNIST: long enough to watch the loss fall
  return c;
}

bool ConfigPanel::serial() const { return m_execution->currentData().toString() == "serial"; }

RunConfig ConfigPanel::shown() const {
  RunConfig c = m_base;
  for (const Control& k : m_controls) k.setting->set(c, valueOf(*k.setting, k.widget));
  return c;
}

RunConfig ConfigPanel::config() const { return settingsInEffect(shown(), serial()).config; }

void ConfigPanel::showValue(const Control& c, const RunConfig& config) {
  const SettingValue v = c.setting->get(config);
  if (auto* box = qobject_cast<QComboBox*>(c.widget))
    selectData(box, qs(formatValue(v)));
  else if (auto* spin = qobject_cast<QSpinBox*>(c.widget))
    spin->setValue(int(std::get<int64_t>(v)));
  else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(c.widget))
    dspin->setValue(std::get<double>(v));
  else if (auto* check = qobject_cast<QCheckBox*>(c.widget))
    check->setChecked(std::get<bool>(v));
  else if (auto* edit = qobject_cast<QLineEdit*>(c.widget))
    edit->setText(qs(formatValue(v)));
}

// A combo lists the setting's choices for `config`, each entry's tooltip its summary. When the
// list follows another setting (the GEMM ladder follows the device) and changes, the value is
// kept where the new list has it, else the setting's default is chosen.
void ConfigPanel::fillChoices(const Control& c, const RunConfig& config) {
  auto* box = qobject_cast<QComboBox*>(c.widget);
  const Setting& s = *c.setting;
  const std::string follows =
      s.choicesFollow.empty() ? "" : formatValue(findSetting(s.choicesFollow)->get(config));
  if (m_choicesFor.contains(box) && m_choicesFor.value(box) == follows) return;
  m_choicesFor.insert(box, follows);
  const QSignalBlocker block(box);
  const QString previous = box->currentData().toString();
  box->clear();
  for (const SettingChoice& ch : s.choices(config)) {
    box->addItem(qs(ch.label.empty() ? ch.value : ch.label), qs(ch.value));
    if (!ch.summary.empty()) box->setItemData(box->count() - 1, qs(ch.summary), Qt::ToolTipRole);
  }
  selectData(box, qs(formatValue(s.get(RunConfig{}))));
  selectData(box, previous);
}

void ConfigPanel::setConfig(const RunConfig& c) {
  m_base = c;
  {
    std::vector<QSignalBlocker> blockers;
    for (QWidget* w : findChildren<QWidget*>()) blockers.emplace_back(w);
    const bool parallel = c.ranks > 1;
    selectData(m_execution, parallel ? "parallel" : "serial");
    if (parallel) m_parallelRanks = c.ranks;
    for (const Control& k : m_controls)
      if (k.setting->choices) fillChoices(k, c);
    for (const Control& k : m_controls) showValue(k, c);
    m_ranks->setMinimum(parallel ? 2 : 1);
    m_ranks->setValue(parallel ? c.ranks : 1);
  }
  updateAvailability();
  showValidation();
  emit configChanged();
}

void ConfigPanel::onChanged() {
  const RunConfig now = shown();
  for (const Control& k : m_controls)
    if (!k.setting->choicesFollow.empty()) fillChoices(k, now);
  if (!serial()) m_parallelRanks = m_ranks->value();
  updateAvailability();
  showValidation();
  emit configChanged();
}

// Serial shows the one rank it trains on; Parallel brings back the count last chosen.
void ConfigPanel::onExecutionChanged() {
  {
    const QSignalBlocker block(m_ranks);
    m_ranks->setMinimum(serial() ? 1 : 2);
    m_ranks->setValue(serial() ? 1 : m_parallelRanks);
  }
  onChanged();
}

// [SECTION] What applies: enabled, shown, and why not

void ConfigPanel::setAvailable(QWidget* w, const QString& tip, bool available,
                               const QString& reason) {
  w->setEnabled(available);
  const QString full =
      available || reason.isEmpty() ? tip : tip + "\n\n" + tr("Not available: %1").arg(reason);
  w->setToolTip(full);
  if (QFormLayout* form = m_formOf.value(w))
    if (QWidget* label = form->labelForField(w)) {
      label->setEnabled(available);
      label->setToolTip(full);
    }
}

void ConfigPanel::updateAvailability() {
  const RunConfig now = shown();
  const SettingsInEffect effect = settingsInEffect(now, serial());
  for (const Control& k : m_controls) {
    const Setting& s = *k.setting;
    const std::string* why = effect.why(s.key);
    QString reason = why ? qs(*why) : QString();
    reason.replace(QRegularExpression("--([a-z][a-z-]*)"), "\\1");  // flags read as controls
    setAvailable(k.widget, k.tip, !why, reason);
    // A control greyed because it does not apply reads the value in effect, not the one it had
    // while it applied: a tp 2 left behind under Hogwild would say the run splits its layers,
    // and would come back unasked with sync. Serial is a mode of its own: Parallel brings the
    // parallel controls back as they were.
    if (why && !(serial() && s.parallelOnly)) {
      const QSignalBlocker quiet(k.widget);
      showValue(k, effect.config);
    }
    if (s.hideUnlessApplies)
      if (QFormLayout* form = m_formOf.value(k.widget)) form->setRowVisible(k.widget, !why);
    if (s.maxOf)  // servers up to ranks, top-k up to experts
      if (auto* spin = qobject_cast<QSpinBox*>(k.widget))
        spin->setMaximum(int(std::min(s.max, s.maxOf(effect.config))));
  }
  // The device's own reason (no GPU) stays on its tooltip and in the note under it.
  if (!m_gpuReason.isEmpty()) setGpuReason(m_gpuReason);
  // A job's hosts and launcher command, under the choice that makes one.
  const bool job = effect.config.backend != Backend::Thread;
  if (QFormLayout* form = m_formOf.value(m_jobFields)) form->setRowVisible(m_jobFields, job);
  if (job) m_jobFields->showCommand(effect.config);
}

QString ConfigPanel::hosts() const { return m_jobFields->hosts(); }
void ConfigPanel::setHosts(const QString& hosts) { m_jobFields->setHosts(hosts); }

void ConfigPanel::showValidation() {
  const QString p = problem();
  m_problem->setText(p.isEmpty() ? QString() : tr("Cannot run: %1").arg(p));
  m_problem->setVisible(!p.isEmpty());
  // Red that reads on light and dark palettes alike.
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  m_problem->setStyleSheet(dark ? "color: #ff8a80;" : "color: #c62828;");
}

// validate()'s line in the panel's words: the setting it names becomes the control's label
// ("ZeRO stage: …" for "zero: …") and flags lose their dashes ("--strategy sync" reads
// "strategy sync"), so the learner knows which control to change.
QString ConfigPanel::problem() const {
  const auto err = config().validate();
  if (!err) return {};
  QString text = qs(*err);
  text.replace(QRegularExpression("--([a-z][a-z-]*)"), "\\1");
  const int colon = text.indexOf(": ");
  if (colon <= 0) return text;
  auto* control = findChild<QWidget*>(text.left(colon));
  if (!control) return text;
  QString label;
  if (auto* check = qobject_cast<QCheckBox*>(control))
    label = check->text();
  else if (QFormLayout* form = m_formOf.value(control))
    if (auto* l = qobject_cast<QLabel*>(form->labelForField(control))) label = l->text();
  return label.isEmpty() ? text : label.remove('&').trimmed() + text.mid(colon);
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

// [SECTION] Device: the CUDA runtime may take a moment to answer, so it is asked off the GUI
// thread and the GPU entry stays disabled until it has.

void ConfigPanel::probeGpu() {
  // finished() runs on the job's thread: the answer is read on this one, once it is posted
  // (after m_gpuProbe holds the job).
  m_gpuProbe = jobs::startGpuProbe({.finished = [this] {
    QMetaObject::invokeMethod(
        this, [this] { showGpus(); }, Qt::QueuedConnection);
  }});
}

void ConfigPanel::showGpus() {
  GpuAvailability gpus = m_gpuProbe->result().value_or(GpuAvailability{});
  if (!m_gpuProbe->result()) gpus.reason = m_gpuProbe->error();
  const QString name = qs(gpus.name);
  const QString reason = gpus.count > 0 ? QString() : tr("no usable GPU (%1)").arg(qs(gpus.reason));
  auto* device = findChild<QComboBox*>("device");
  if (gpus.count > 0)
    setItemEnabled(device, device->findData("cuda"), true,
                   tr("%n GPU(s): %1; rank r computes on GPU r mod %n", "", gpus.count).arg(name));
  else
    setGpuReason(reason);
  auto* backend = findChild<QComboBox*>("backend");
  if (mpiBuilt() && ncclBuilt() && !mpirunProgram().isEmpty())
    setItemEnabled(backend, backend->findData("nccl"), gpus.count > 0,
                   gpus.count > 0 ? tr("%n process(es), one per GPU", "", gpus.count) : reason);
}

void ConfigPanel::setGpuReason(const QString& reason) {
  m_gpuReason = reason;
  if (QFormLayout* form = m_formOf.value(m_gpuNote)) {
    m_gpuNote->setText(tr("GPU not available: %1").arg(reason));
    form->setRowVisible(m_gpuNote, !reason.isEmpty());
  }
  auto* device = findChild<QComboBox*>("device");
  setItemEnabled(device, device->findData("cuda"), false, reason);
  for (const Control& k : m_controls)
    if (k.widget == device)
      setAvailable(device, k.tip + "\n\n" + tr("GPU not available: %1").arg(reason),
                   device->isEnabled(), QString());
}

}  // namespace paralab
