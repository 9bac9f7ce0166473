// SweepPanel: settings, progress and table of a scaling sweep (see sweep_panel.h).
// See tests/app/tst_window.cpp (sweepRunsOffTheGuiThread).
#include "panels/sweep_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "sweep_runner.h"

namespace paralab {

SweepPanel::SweepPanel(std::function<RunConfig()> baseConfig, QWidget* parent)
    : QWidget(parent), m_baseConfig(std::move(baseConfig)), m_runner(new SweepRunner(this)) {
  m_ranks = new QLineEdit("1, 2, 4, 8");
  m_ranks->setObjectName("sweepRanks");
  m_ranks->setToolTip(
      tr("Rank counts to measure, separated by commas. The 1-rank run is the "
         "baseline every speedup is measured against (added when missing)."));
  m_steps = new QSpinBox;
  m_steps->setObjectName("sweepSteps");
  m_steps->setRange(1, 10000);
  m_steps->setValue(20);
  m_steps->setToolTip(
      tr("Steps timed at each rank count; the median step time is used, so one "
         "slow step (a page fault, another program) does not skew the point."));
  m_warmup = new QSpinBox;
  m_warmup->setObjectName("sweepWarmup");
  m_warmup->setRange(0, 1000);
  m_warmup->setValue(3);
  m_warmup->setToolTip(
      tr("Steps run first at each rank count and not timed (caches, thread "
         "start-up, first allocations)."));
  m_runButton = new QPushButton(tr("Run sweep"));
  m_runButton->setObjectName("sweepRun");
  m_runButton->setToolTip(
      tr("Train the current settings at each rank count in the background "
         "and draw the speedup chart; the window stays usable"));
  m_cancelButton = new QPushButton(tr("Cancel"));
  m_cancelButton->setObjectName("sweepCancel");
  m_cancelButton->setToolTip(tr("Stop after the step in flight; the points finished are kept"));
  m_cancelButton->setEnabled(false);
  m_progress = new QProgressBar;
  m_progress->setObjectName("sweepProgress");
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setToolTip(tr("Steps done of all the sweep's steps (warm-up included)"));
  m_status = new QLabel;
  m_status->setObjectName("sweepStatus");
  m_status->setWordWrap(true);
  m_table = new QTableWidget(0, 5);
  m_table->setObjectName("sweepTable");
  m_table->setHorizontalHeaderLabels(
      {tr("ranks"), tr("step ms"), tr("samples/s"), tr("speedup"), tr("efficiency")});
  m_table->verticalHeader()->setVisible(false);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setToolTip(
      tr("Measured: median step time at each rank count. Speedup T1/TN (strong) "
         "or N·T1/TN (weak, scaled); efficiency = speedup / N."));

  m_over = new QComboBox;
  m_over->setObjectName("sweepOver");
  m_over->addItems({tr("rank count"), tr("checkpoint interval K")});
  m_over->setToolTip(
      tr("Rank counts: speedup and efficiency. Checkpoint interval K: the same run under the "
         "same emulated failures with a checkpoint every K steps, its goodput beside "
         "Young/Daly's optimum √(2·C·MTBF)."));
  m_mtbf = new QDoubleSpinBox;
  m_mtbf->setObjectName("sweepMtbf");
  m_mtbf->setRange(0.001, 86400);
  m_mtbf->setDecimals(3);
  m_mtbf->setValue(0.5);
  m_mtbf->setSuffix(tr(" s"));
  m_mtbf->setToolTip(
      tr("Mean time between failures (emulated, seeded): a failure loses the "
         "steps since the last checkpoint"));
  m_mtbf->setEnabled(false);
  m_valuesLabel = new QLabel(tr("Ranks"));
  m_stepsLabel = new QLabel(tr("Timed steps"));
  auto* form = new QFormLayout;
  form->addRow(tr("Sweep over"), m_over);
  form->addRow(m_valuesLabel, m_ranks);
  form->addRow(tr("MTBF"), m_mtbf);
  form->addRow(m_stepsLabel, m_steps);
  form->addRow(tr("Warm-up steps"), m_warmup);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_runButton);
  buttons->addWidget(m_cancelButton);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(m_progress);
  layout->addWidget(m_status);
  layout->addWidget(m_table, 1);

  connect(m_runButton, &QPushButton::clicked, this, [this] { run(); });
  connect(m_cancelButton, &QPushButton::clicked, this, &SweepPanel::cancel);
  connect(m_runner, &SweepRunner::progress, this, [this](int done, int total) {
    m_progress->setRange(0, total);
    m_progress->setValue(done);
  });
  connect(m_runner, &SweepRunner::finished, this, &SweepPanel::onFinished);
  connect(m_runner, &SweepRunner::goodputFinished, this, &SweepPanel::onGoodputFinished);
  connect(m_over, &QComboBox::currentIndexChanged, this,
          [this](int i) { setOver(i == 1 ? Over::CheckpointInterval : Over::Ranks); });
}

void SweepPanel::setOver(Over over, double mtbfS) {
  const bool k = over == Over::CheckpointInterval;
  if (mtbfS > 0) m_mtbf->setValue(mtbfS);
  if (m_over->currentIndex() != int(k)) return m_over->setCurrentIndex(int(k));  // comes back
  m_mtbf->setEnabled(k);
  m_warmup->setEnabled(!k);
  m_valuesLabel->setText(k ? tr("Intervals K") : tr("Ranks"));
  m_stepsLabel->setText(k ? tr("Steps a run") : tr("Timed steps"));
  m_ranks->setText(k ? "1, 2, 4, 8, 16, 32, 64" : "1, 2, 4, 8");
  m_steps->setValue(k ? 2000 : 20);
  m_ranks->setToolTip(k ? tr("Checkpoint intervals to measure, in steps, separated by commas")
                        : tr("Rank counts to measure, separated by commas. The 1-rank run is "
                             "the baseline every speedup is measured against (added when "
                             "missing)."));
}

bool SweepPanel::isRunning() const { return m_runner->isRunning(); }

void SweepPanel::setRanks(const QString& list) { m_ranks->setText(list); }

void SweepPanel::setSteps(int steps, int warmup) {
  m_steps->setValue(steps);
  m_warmup->setValue(warmup);
}

QString SweepPanel::run() {
  if (isRunning()) return tr("a sweep is running");
  // The engine's own parser, so the panel accepts exactly what --sweep does.
  if (m_over->currentIndex() == 1) return runGoodput(m_baseConfig());
  std::vector<int> ranks;
  QString why;
  try {
    QString spec = m_ranks->text();
    spec.remove(' ');
    ranks = parseSweep("ranks=" + spec.toStdString());
  } catch (const std::exception& e) {
    why = QString::fromStdString(e.what());
  }
  const RunConfig base = m_baseConfig();
  if (why.isEmpty()) {
    std::vector<int> all = ranks;
    if (all.empty() || all.front() != 1) all.insert(all.begin(), 1);
    for (int n : all) {  // every point must be a valid run, said before any is started
      RunConfig c = base;
      c.ranks = n;
      if (auto err = c.validate()) {
        const QString e = QString::fromStdString(*err);
        why = n == 1 ? tr("at 1 rank: %1").arg(e) : tr("at %1 ranks: %2").arg(n).arg(e);
        break;
      }
    }
  }
  if (!why.isEmpty()) {
    // Nothing of an earlier sweep stays on show as if it answered these settings.
    m_table->setRowCount(0);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_status->setText(tr("Cannot sweep: %1. Change the settings or the rank counts, then Run "
                         "sweep again.")
                          .arg(why));
    return why;
  }
  m_beforeNote = m_beforeRun ? m_beforeRun() : QString();
  const QString& before = m_beforeNote;
  m_swept = base;
  m_table->setRowCount(0);
  m_runner->start(base, ranks, m_steps->value(), m_warmup->value());
  m_status->setText((before.isEmpty() ? QString() : before + ' ') +
                    tr("Measuring %1 scaling… (the window stays usable)")
                        .arg(QString::fromStdString(nameOf(base.scaling))));
  m_progress->setRange(0, 0);  // busy until the first report
  m_runButton->setEnabled(false);
  m_cancelButton->setEnabled(true);
  emit runningChanged(true);
  return {};
}

// Runs per K, each with its own failure times (the same at every K).
constexpr int kGoodputRepeats = 3;

QString SweepPanel::runGoodput(const RunConfig& panelBase) {
  RunConfig base = panelBase;
  base.mtbfS = m_mtbf->value();
  base.steps = m_steps->value();
  std::vector<int> ks;
  QString why;
  try {
    QString spec = m_ranks->text();
    spec.remove(' ');
    ks = parseCheckpointSweep("checkpoint-every=" + spec.toStdString());
    for (int k : ks) {
      RunConfig c = base;
      c.checkpointEvery = k;
      if (auto err = c.validate()) {
        why = tr("at K = %1: %2").arg(k).arg(QString::fromStdString(*err));
        break;
      }
    }
  } catch (const std::exception& e) {
    why = QString::fromStdString(e.what());
  }
  if (!why.isEmpty()) {
    m_table->setRowCount(0);
    m_status->setText(tr("Cannot sweep: %1. Change the settings or the intervals, then Run "
                         "sweep again.")
                          .arg(why));
    return why;
  }
  m_beforeNote = m_beforeRun ? m_beforeRun() : QString();
  m_swept = base;
  m_table->setRowCount(0);
  m_runner->startGoodput(base, ks, kGoodputRepeats);
  m_status->setText((m_beforeNote.isEmpty() ? QString() : m_beforeNote + ' ') +
                    tr("Measuring goodput at each K under failures every %1 s (emulated)… (the "
                       "window stays usable)")
                        .arg(base.mtbfS));
  m_progress->setRange(0, 0);
  m_runButton->setEnabled(false);
  m_cancelButton->setEnabled(true);
  emit runningChanged(true);
  return {};
}

void SweepPanel::onGoodputFinished(const GoodputSweepResult& r, const QString& error) {
  m_runButton->setEnabled(true);
  m_cancelButton->setEnabled(false);
  m_progress->setRange(0, 1);
  m_progress->setValue(error.isEmpty() && !r.cancelled ? 1 : 0);
  emit runningChanged(false);
  if (!error.isEmpty()) return m_status->setText(tr("The sweep failed: %1").arg(error));
  m_goodput = r;
  m_table->setRowCount(int(r.points.size()));
  for (int i = 0; i < int(r.points.size()); ++i) {
    const GoodputPoint& p = r.points[size_t(i)];
    const QStringList cells = {QString::number(p.checkpointEvery),
                               QString::number(p.goodput, 'f', 1), QString::number(p.failures),
                               QString::number(p.lostS, 'f', 2),
                               QString::number(p.checkpointS, 'f', 2)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(i, c, item);
    }
  }
  m_table->setHorizontalHeaderLabels(
      {tr("K"), tr("goodput/s"), tr("failures"), tr("lost s"), tr("ckpt s")});
  m_status->setText(
      (r.cancelled ? tr("Cancelled: %1 points kept. ").arg(r.points.size())
                   : tr("Done: %1 points. ").arg(r.points.size())) +
      tr("Measured C = %1 ms a checkpoint, a step %2 ms. Young/Daly (reference): √(2·C·MTBF) "
         "= %3 steps; best K measured: %4.")
          .arg(1e3 * r.checkpointCostS, 0, 'f', 2)
          .arg(1e3 * r.stepS, 0, 'f', 2)
          .arg(r.youngDalySteps, 0, 'f', 1)
          .arg(r.bestK));
  emit goodputSweepFinished(r);
}

void SweepPanel::cancel() {
  if (!isRunning()) return;
  m_runner->cancel();
  m_status->setText(tr("Cancelling after the step in flight…"));
}

void SweepPanel::onFinished(const SweepResult& result, const QString& error) {
  m_runButton->setEnabled(true);
  m_cancelButton->setEnabled(false);
  m_progress->setRange(0, 1);
  m_progress->setValue(error.isEmpty() && !result.cancelled ? 1 : 0);
  emit runningChanged(false);
  if (!error.isEmpty()) {
    m_status->setText(tr("The sweep failed: %1").arg(error) +
                      (m_beforeNote.isEmpty() ? QString() : "\n" + m_beforeNote));
    return;
  }
  m_result = result;
  showTable(result);
  QString fit;
  if (result.points.size() >= 2) {
    const bool weak = result.scaling == Scaling::Weak;
    const QString basis = QString::fromStdString(
        fitBasis(result.points.front().ranks, result.points.back().ranks, result.cores));
    // A fitted fraction outside 0..1 is no fraction of the work: said in words, no number.
    if (const std::string caveat = fitCaveat(result); !caveat.empty())
      fit = tr("%1's law does not fit these points (%2): the fitted fraction lies %3")
                .arg(weak ? "Gustafson" : "Amdahl", basis, QString::fromStdString(caveat));
    else  // with what it stands on: the ranks fitted and whether they shared the cores
      fit = (weak ? tr("Gustafson fit (reference, fitted on %1): serial fraction s = %2, R² = %3")
                        .arg(basis)
                        .arg(result.gustafson.s, 0, 'f', 3)
                        .arg(QString::fromStdString(r2Text(result.gustafson.r2)))
                  : tr("Amdahl fit (reference, fitted on %1): parallel fraction p = %2, R² = %3")
                        .arg(basis)
                        .arg(result.amdahl.p, 0, 'f', 3)
                        .arg(QString::fromStdString(r2Text(result.amdahl.r2))));
    fit += ".";
    if (QString cores = QString::fromStdString(coresCaveat(result)); !cores.isEmpty())
      fit += " " + cores.left(1).toUpper() + cores.mid(1) + ".";
    // Strong scaling trains the same steps at every rank count: how far the losses parted.
    if (const double gap = result.maxLossGap(); std::isfinite(gap))
      fit += " " + tr("Loss curves: at most %1 nats from the 1-rank run's.")
                       .arg(QString::number(gap, 'g', 2));
  }
  m_status->setText((result.cancelled ? tr("Cancelled: %1 points kept. ").arg(result.points.size())
                                      : tr("Done: %1 points. ").arg(result.points.size())) +
                    fit + (m_beforeNote.isEmpty() ? QString() : "\n" + m_beforeNote));
  emit sweepFinished(result);
}

void SweepPanel::clearResult(const QString& why) {
  if (isRunning()) return;
  m_result.reset();
  m_table->setRowCount(0);
  m_status->setText(why);
}

void SweepPanel::showTable(const SweepResult& result) {
  m_table->setHorizontalHeaderLabels(
      {tr("ranks"), tr("step ms"), tr("samples/s"), tr("speedup"), tr("efficiency")});
  m_table->setRowCount(int(result.points.size()));
  for (int i = 0; i < int(result.points.size()); ++i) {
    const SweepPoint& p = result.points[size_t(i)];
    const QStringList cells = {QString::number(p.ranks), QString::number(p.stepMs, 'f', 2),
                               QLocale().toString(p.samplesPerS, 'f', 0),
                               QString::number(p.speedup, 'f', 2),
                               QString("%1 %").arg(100 * p.efficiency, 0, 'f', 0)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(i, c, item);
    }
  }
}

}  // namespace paralab
