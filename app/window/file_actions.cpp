// The window's files (see file_actions.h). See tests/app/tst_window_export.cpp and
// tests/app/tst_window_trust.cpp (openRunShowsTheRecordedRun).
#include "window/file_actions.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QSaveFile>
#include <QStatusBar>
#include <fstream>
#include <nlohmann/json.hpp>

#include "charts/chart_hub.h"
#include "charts/holdings_map.h"
#include "charts/timeline_chart.h"
#include "export/chart_export.h"
#include "export/chrome_trace.h"
#include "job_runner.h"
#include "metrics/run_record.h"
#include "metrics/step_views.h"
#include "panels/config_panel.h"
#include "panels/export_panel.h"
#include "settings.h"
#include "window/lesson_router.h"
#include "window/run_controller.h"

namespace paralab {

FileActions::FileActions(QMainWindow* window, RunController* runs, ChartHub* hub,
                         ConfigPanel* panel)
    : QObject(window), m_window(window), m_runs(runs), m_hub(hub), m_panel(panel) {}

// Where files went, or why not, is said until the next message: a learner looks for them
// later.
void FileActions::say(const QString& message, int timeoutMs) {
  m_window->statusBar()->showMessage(message, timeoutMs);
}

void FileActions::exportChart(Chart* chart) {
  m_hub->refreshAll();
  QDir().mkpath(Settings::exportDir());  // the dialog opens where the files will go
  ExportPanel panel(chart, Settings::exportDir(), m_window);
  if (panel.exec() != QDialog::Accepted) return;
  const QString err = panel.exportNow();
  if (err.isEmpty()) Settings::setExportDir(QFileInfo(panel.path()).absolutePath());
  say(err.isEmpty() ? tr("Wrote %1").arg(QDir::toNativeSeparators(panel.path())) : err);
}

void FileActions::exportAll() {
  QDir().mkpath(Settings::exportDir());
  const QString dir =
      QFileDialog::getExistingDirectory(m_window, tr("Export All to Folder"), Settings::exportDir());
  if (dir.isEmpty()) return;
  QStringList written;
  const QString err = exportAllTo(dir, &written);
  if (err.isEmpty()) Settings::setExportDir(dir);
  say(err.isEmpty()
          ? tr("Wrote %1 files to %2").arg(written.size()).arg(QDir::toNativeSeparators(dir))
          : err);
}

RunReport FileActions::report() const {
  const ShownRun& run = m_runs->shown();
  const MetricHistory& history = run.history;
  RunReport r;
  r.config = run.config;
  r.changes = run.changes;
  r.state = QString::fromLatin1(runStateName(run.showing ? run.state : RunState::Idle));
  r.steps = history.stepsSeen();
  r.parameterCount = run.parameterCount;
  r.last = run.lastStep;
  r.window = std::min<int>(MetricHistory::kMeanWindow, int(r.steps));
  r.lossMean = history.recentLoss();
  if (!history.accuracy().isEmpty()) {
    r.accuracyStep = history.accuracy().back().step;
    r.accuracyPercent = history.accuracy().back().percent;
    if (const double loss = history.accuracy().back().loss; loss >= 0) r.testLoss = loss;
  }
  r.meanStepMs = history.recentStepMs();
  r.samplesPerS = history.recentSamplesPerS();
  r.sweep = m_sweep;
  r.sweepConfig = m_sweptConfig;
  RunSummary overRun;  // the overlap meter over every step, from the run's file
  history.steps().forEach([&](const MetricHistory::Row&, const StepMetrics& m) { overRun.add(m); });
  r.overlap = std::move(overRun.overlap);
  return r;
}

QString FileActions::exportAllTo(const QString& dir, QStringList* written, QSize size) {
  // The steps taken since the last poll, then every chart drawn, shown or not.
  m_runs->poll();
  const ShownRun& run = m_runs->shown();
  m_hub->refreshAll();
  QStringList files, empty;
  if (QString err = paralab::exportAllCharts(m_hub->charts(), dir, &files, size, &empty);
      !err.isEmpty())
    return err;
  // A recorded run cut short has no settings to write: its charts, steps and trace only.
  const QString configPath = QDir(dir).filePath("run-config.json");
  if (!run.settingsUnknown) {
    QSaveFile file(configPath);
    const std::string text = run.config.toJson().dump(2) + "\n";
    if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
        !file.commit())
      return tr("cannot write '%1': %2").arg(configPath, file.errorString());
    files << configPath;
  }
  // Every step and the run's settings, as paralab-run --json writes them: File > Open Run
  // shows them again, its timeline and holdings map too. The lines of the last steps carry
  // each rank's spans (StepViewsLog::kSteps steps; older lines go without), and the holdings
  // come on the first line the window kept them for and again when they changed.
  const QString runPath = QDir(dir).filePath("run.jsonl");
  {
    QSaveFile file(runPath);
    QString readError;
    if (file.open(QIODevice::WriteOnly)) {
      RunSummary summary;
      StepViewsLog::Lines views(run.stepViews);
      readError = run.history.steps().forEach([&](const MetricHistory::Row&, const StepMetrics& m) {
        summary.add(m);
        nlohmann::json line = toJson(m);
        views.addTo(line);
        file.write(QByteArray::fromStdString(line.dump() + "\n"));
      });
      if (summary.steps > 0 && !run.settingsUnknown)
        file.write(QByteArray::fromStdString(toJson(summary, run.config).dump() + "\n"));
    }
    if (!readError.isEmpty()) return readError;
    if (file.error() != QFileDevice::NoError || !file.commit())
      return tr("cannot write '%1': %2").arg(runPath, file.errorString());
    files << runPath;
  }
  const QString tracePath = QDir(dir).filePath("trace.json");
  const QString emulated =
      run.config.link == "none" ? QString() : QString::fromStdString(run.config.link);
  if (QString err = writeChromeTrace(tracePath, m_hub->lastSnapshot().spans, emulated);
      !err.isEmpty())
    return err;
  files << tracePath;
  // A Slurm job's batch script, as submitted (sbatch job.sbatch runs the same job again).
  if (const JobRunner* job = m_runs->jobRunner(); job && !job->batchScript().isEmpty()) {
    const QString scriptPath = QDir(dir).filePath("job.sbatch");
    QSaveFile file(scriptPath);
    if (!file.open(QIODevice::WriteOnly) || file.write(job->batchScript().toUtf8()) < 0 ||
        !file.commit())
      return tr("cannot write '%1': %2").arg(scriptPath, file.errorString());
    files << scriptPath;
  }
  if (!run.settingsUnknown) {
    RunReport r = report();
    for (const QString& f : files) r.files << QFileInfo(f).fileName();
    r.files << "summary.md"
            << "summary.html";
    r.notExported = empty;
    if (QString err = writeSummary(dir, r, &files); !err.isEmpty()) return err;
  }
  if (written) *written = files;
  return {};
}

void FileActions::openRun() {
  const QString path =
      QFileDialog::getOpenFileName(m_window, tr("Open a Recorded Run"), Settings::exportDir(),
                                   tr("Recorded runs (*.jsonl *.json);;All files (*)"));
  if (path.isEmpty()) return;
  QStringList losses;
  if (const QString run = m_runs->atRisk(); !run.isEmpty())
    losses << tr("%1 ends; its charts show the file instead.").arg(run);
  if (!askBeforeLoss(m_window, tr("Open %1?").arg(QFileInfo(path).fileName()), losses,
                     tr("Open")))
    return;
  // A file cut short opens with a line in the status bar (openRunFile), not a dialog.
  if (const QString err = openRunFile(path, nullptr); !err.isEmpty()) m_runs->showError(err);
}

QString FileActions::openRunFile(const QString& path, QString* notice) {
  if (notice) notice->clear();
  std::ifstream in(path.toStdString());
  if (!in) return tr("cannot open '%1'").arg(QDir::toNativeSeparators(path));
  const QString name = QFileInfo(path).fileName();
  QApplication::setOverrideCursor(Qt::WaitCursor);
  // Read twice: once to check the whole file, so a refused one leaves the run shown as it
  // was; then into the history (holding every step in between could be gigabytes).
  RunConfig config;
  bool hasSettings = false;
  int64_t incomplete = 0;
  const auto read = [&](const std::function<void(const StepMetrics&)>& onStep) {
    in.clear();
    in.seekg(0);
    return readRecordedRun(in, onStep, &config, &hasSettings, &incomplete);
  };
  if (const std::string err = read([](const StepMetrics&) {}); !err.empty()) {
    QApplication::restoreOverrideCursor();
    return tr("%1: %2").arg(name, QString::fromStdString(err));
  }
  m_runs->reset();  // the run shown stops; what is read replaces its data
  ShownRun& run = m_runs->shown();
  std::optional<StepMetrics> last;
  int64_t firstStep = 0;
  const std::string err = read([&](const StepMetrics& m) {
    run.history.append(m);
    if (!last) firstStep = m.step;
    last = m;
  });
  QApplication::restoreOverrideCursor();
  if (!err.empty() || !last) {  // the file changed between the two reads
    m_runs->reset();
    return tr("%1: %2").arg(name, err.empty() ? tr("no step in it") : QString::fromStdString(err));
  }
  m_runs->showRecorded(name, hasSettings ? &config : nullptr, *last);
  // The timeline and the holdings map draw what the lines carry (each rank's spans of the last
  // steps, the latest holdings); a file written before lines carried them says so in each.
  in.clear();
  in.seekg(0);
  const RunViews views = readRunViews(in);
  if (views.hasSpans() || views.hasHoldings()) {
    // Spans its lines left out (over kMaxLineSpans a rank a step): the timeline's legend says
    // how many, and its lines written again count them.
    Snapshot s = m_hub->lastSnapshot();
    s.spans = views.spans();
    s.spansLeftOut = views.spansLeftOut();
    s.holdings = views.holdings(&*last);
    m_hub->show(run.history, s);
    m_hub->refreshAll();
    // Exported again, its lines carry what it showed (the holdings from its first line).
    run.stepViews.add(s.spans, views.holdings(nullptr), firstStep, last->step, s.spansLeftOut);
  }
  if (auto* t = m_hub->find<TimelineChart>(); t && !views.hasSpans())
    t->setPlaceholderText(tr("%1 has no spans: its lines carry none (recorded before "
                             "paralab-run wrote them, exported by a window from before, or run "
                             "with --no-instrument)").arg(name));
  if (auto* h = m_hub->find<HoldingsMap>(); h && !views.hasHoldings())
    h->setPlaceholderText(tr("%1 says nothing of what the ranks hold: its lines carry no "
                             "holdings (recorded before paralab-run wrote them, or exported by "
                             "a window from before)").arg(name));
  const int64_t steps = run.history.stepsSeen();
  // A file cut short: every step it has is shown, and one line says where it ends.
  const QString cut =
      incomplete > 0 ? tr("%1: line %2 is incomplete; showing the %3 steps before it")
                           .arg(name)
                           .arg(incomplete)
                           .arg(steps)
      : !hasSettings ? tr("%1: no summary line (the run was stopped early); showing its %2 "
                          "steps, their settings unknown")
                           .arg(name)
                           .arg(steps)
                     : QString();
  if (notice) *notice = cut;
  say(!cut.isEmpty() ? cut
                     : tr("Showing the run recorded in %1: %2 steps")
                           .arg(QDir::toNativeSeparators(path))
                           .arg(steps));
  return {};
}

void FileActions::openConfig() {
  const QString path = QFileDialog::getOpenFileName(m_window, tr("Open Run Settings"), QString(),
                                                    tr("JSON settings (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  RunConfig c = m_panel->config();
  try {
    applyJsonFile(c, path.toStdString());
  } catch (const ConfigError& e) {
    m_runs->showError(QString::fromStdString(e.what()));
    return;
  }
  m_panel->setConfig(c);
  say(tr("Loaded %1").arg(path), 5000);
}

void FileActions::saveConfig() {
  const QString chosen = QFileDialog::getSaveFileName(
      m_window, tr("Save Run Settings"), "paralab-run.json", tr("JSON settings (*.json)"));
  if (chosen.isEmpty()) return;
  const QString path = Settings::withJsonSuffix(chosen);
  QSaveFile file(path);
  const std::string text = m_panel->config().toJson().dump(2) + "\n";
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), qint64(text.size())) < 0 ||
      !file.commit()) {
    m_runs->showError(tr("cannot write '%1': %2").arg(path, file.errorString()));
    return;
  }
  say(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
}

}  // namespace paralab
