// ConfigPanel: grouped run settings (see config_panel.h). Tooltips say what each setting
// does in the words of the lessons. See tests/app/tst_app.cpp (controlsChangeConfig).
#include "config_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <climits>

namespace paralab {

namespace {

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

// A group whose rows are "label: control"; the label carries the control's tooltip too, so
// hovering either explains it.
QGroupBox* group(const QString& title, const QList<QPair<QString, QWidget*>>& rows) {
  auto* box = new QGroupBox(title);
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  for (const auto& [text, control] : rows) {
    auto* label = new QLabel(text);
    label->setBuddy(control);
    label->setToolTip(control->toolTip());
    form->addRow(label, control);
  }
  return box;
}

void selectData(QComboBox* box, const std::string& value) {
  const int i = box->findData(QString::fromStdString(value));
  if (i >= 0) box->setCurrentIndex(i);
}

}  // namespace

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent) {
  m_hidden = spinBox("hidden", 1, 8192, 16,
                     tr("Hidden width H: the width of every residual block. The model is "
                        "784 → H, then L blocks of [LayerNorm → H→4H → GELU → 4H→H], then H → 10; "
                        "parameters grow as about 8·L·H²."));
  m_layers =
      spinBox("layers", 1, 64, 1,
              tr("Residual blocks L: how deep the MLP is. Each block adds about 8·H² "
                 "parameters and one forward and backward pass of its two matrix products."));
  m_dataset = comboBox(
      "dataset",
      {{tr("Fashion-MNIST"), "fashion-mnist"}, {tr("Synthetic (teacher network)"), "synthetic"}},
      tr("Training data. Fashion-MNIST: 60 000 clothing images of 28×28 pixels in "
         "10 classes. Synthetic: Gaussian inputs labelled by a fixed random "
         "network, generated in memory (nothing to install, quick to start)."));
  m_batch = spinBox("batch", 1, 65536, 32,
                    tr("Global batch B: samples per step, summed over all ranks. Larger batches "
                       "raise samples/s until the machine is busy, and take fewer, larger steps."));
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

  m_problem = new QLabel;
  m_problem->setObjectName("configProblem");
  m_problem->setWordWrap(true);
  m_problem->setStyleSheet("color: #c62828;");
  m_problem->setVisible(false);
  m_note = new QLabel;
  m_note->setObjectName("configNote");
  m_note->setWordWrap(true);
  m_note->setForegroundRole(QPalette::PlaceholderText);
  m_note->setVisible(false);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(group(tr("Model (MLP)"),
                          {{tr("Hidden width H"), m_hidden}, {tr("Residual blocks L"), m_layers}}));
  layout->addWidget(
      group(tr("Data"), {{tr("Dataset"), m_dataset}, {tr("Batch (global)"), m_batch}}));
  layout->addWidget(group(tr("Training"), {{tr("Learning rate"), m_lr},
                                           {tr("Optimizer"), m_optimizer},
                                           {tr("Steps"), m_steps},
                                           {tr("Test accuracy every"), m_evalEvery},
                                           {tr("Seed"), m_seed}}));
  layout->addWidget(m_problem);
  layout->addWidget(m_note);
  layout->addStretch(1);

  setConfig(defaults());

  for (QSpinBox* box : {m_hidden, m_layers, m_batch, m_steps, m_evalEvery, m_seed})
    connect(box, &QSpinBox::valueChanged, this, &ConfigPanel::onChanged);
  connect(m_lr, &QDoubleSpinBox::valueChanged, this, &ConfigPanel::onChanged);
  for (QComboBox* box : {m_dataset, m_optimizer})
    connect(box, &QComboBox::currentIndexChanged, this, &ConfigPanel::onChanged);
}

RunConfig ConfigPanel::defaults() {
  RunConfig c;
  c.steps = 1000;  // about two epochs of Fashion-MNIST: long enough to watch the loss fall
  return c;
}

RunConfig ConfigPanel::config() const {
  RunConfig c = m_base;
  c.hidden = m_hidden->value();
  c.layers = m_layers->value();
  c.dataset = m_dataset->currentData().toString().toStdString();
  c.batch = m_batch->value();
  c.lr = m_lr->value();
  c.optimizer = m_optimizer->currentData().toString().toStdString();
  c.steps = m_steps->value();
  c.evalEvery = m_evalEvery->value();
  c.seed = uint64_t(m_seed->value());
  return c;
}

void ConfigPanel::setConfig(const RunConfig& c) {
  m_base = c;
  const QSignalBlocker blockers[] = {
      QSignalBlocker(m_hidden), QSignalBlocker(m_layers),    QSignalBlocker(m_dataset),
      QSignalBlocker(m_batch),  QSignalBlocker(m_lr),        QSignalBlocker(m_optimizer),
      QSignalBlocker(m_steps),  QSignalBlocker(m_evalEvery), QSignalBlocker(m_seed)};
  m_hidden->setValue(c.hidden);
  m_layers->setValue(c.layers);
  selectData(m_dataset, c.dataset);
  m_batch->setValue(c.batch);
  m_lr->setValue(c.lr);
  selectData(m_optimizer, c.optimizer);
  m_steps->setValue(c.steps);
  m_evalEvery->setValue(c.evalEvery);
  m_seed->setValue(int(std::min<uint64_t>(c.seed, INT_MAX)));
  showValidation();
  emit configChanged();
}

void ConfigPanel::setNote(const QString& note) {
  m_note->setText(note);
  m_note->setVisible(!note.isEmpty());
}

void ConfigPanel::onChanged() {
  showValidation();
  emit configChanged();
}

void ConfigPanel::showValidation() {
  const auto problem = config().validate();
  m_problem->setText(problem ? QString::fromStdString(*problem) : QString());
  m_problem->setVisible(problem.has_value());
}

}  // namespace paralab
