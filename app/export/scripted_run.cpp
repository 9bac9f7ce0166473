// Scripted runs (see scripted_run.h): the same window, session and export code as interactive
// use, so what coursework automation writes is what the window shows.
// See tests/app/tst_app.cpp (scriptedExport) and tests/app/tst_window.cpp.
#include "export/scripted_run.h"


#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <vector>

#include "charts/chart.h"
#include "charts/chart_hub.h"
#include "command_line.h"
#include "main_window.h"
#include "panels/config_panel.h"
#include "panels/sweep_panel.h"
#include "panels/welcome_page.h"
#include "platform.h"  // residentBytes, heapInUseBytes, threadSwitches, threadCpuMs

namespace paralab {

namespace {

void printLine(FILE* stream, const QString& text) {
  std::fprintf(stream, "paralab: %s\n", text.toLocal8Bit().constData());
  std::fflush(stream);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

int runScripted(MainWindow& window, const CommandLine& commandLine) {
  const QString dir = commandLine.exportDir;  // made by parseCommandLine
  QObject::connect(&window, &MainWindow::runEnded, &window, [&](bool ok, const QString& error) {
    if (!ok) {
      printLine(stderr, QObject::tr("run failed: %1").arg(error));
      QApplication::exit(window.history().isEmpty() && window.runState() != RunState::Failed ? 2
                                                                                             : 1);
      return;
    }
    QStringList written;
    if (const QString err = window.exportAllTo(dir, &written); !err.isEmpty()) {
      printLine(stderr, err);
      QApplication::exit(1);
      return;
    }
    const auto& h = window.history();
    printLine(stdout,
              QObject::tr("%1 steps, final loss %2 nats, %3 samples/s; wrote %4 files to %5")
                  .arg(h.stepsSeen())
                  .arg(h.rows().isEmpty() ? 0.0 : h.rows().back().loss, 0, 'f', 4)
                  .arg(h.recentSamplesPerS(), 0, 'f', 0)
                  .arg(written.size())
                  .arg(dir));
    QApplication::exit(0);
  });
  window.configPanel()->setConfig(commandLine.config);
  QTimer::singleShot(0, &window, &MainWindow::start);
  return QApplication::exec();
}

int openRecorded(MainWindow& window, const CommandLine& commandLine) {
  if (!commandLine.scripted()) window.restoreSettings(true);  // its layout and theme
  QString notice;
  if (const QString err = window.openRunFile(commandLine.openFile, &notice); !err.isEmpty()) {
    printLine(stderr, QObject::tr("open: %1").arg(err));
    return 2;
  }
  if (!notice.isEmpty()) printLine(stderr, QObject::tr("open: %1").arg(notice));  // still 0
  if (commandLine.scripted()) {
    QStringList written;
    if (const QString err = window.exportAllTo(commandLine.exportDir, &written); !err.isEmpty()) {
      printLine(stderr, err);
      return 1;
    }
    printLine(stdout, QObject::tr("%1 steps recorded in %2; wrote %3 files to %4")
                          .arg(window.history().stepsSeen())
                          .arg(window.recordedFrom())
                          .arg(written.size())
                          .arg(commandLine.exportDir));
    return 0;
  }
  if (WelcomePage* welcome = window.welcomePage()) welcome->hide();  // the run is the point
  window.show();
  return QApplication::exec();
}

namespace {

double residentMb() { return double(residentBytes()) / (1024.0 * 1024.0); }
double heapInUseMb() { return double(heapInUseBytes()) / (1024.0 * 1024.0); }

// A scaling sweep measured before the training starts (beside it, it would share the cores),
// so the speedup chart has a sweep to draw; false when it could not run.
bool sweepFirst(MainWindow& window) {
  window.sweepPanel()->setRanks("1, 2, 4, 8");
  window.sweepPanel()->setSteps(6, 2);
  QEventLoop wait;
  QObject::connect(window.sweepPanel(), &SweepPanel::runningChanged, &wait, [&](bool running) {
    if (!running) wait.quit();
  });
  window.runSweep();
  if (window.sweepPanel()->isRunning()) wait.exec();
  return window.sweepPanel()->result().has_value();
}

}  // namespace

int runFrameBench(MainWindow& window, const CommandLine& commandLine) {
  RunConfig config = commandLine.config;
  config.steps = 0;  // trains for as long as the benchmark lasts
  if (auto err = config.validate()) {
    printLine(stderr, QString::fromStdString(*err));
    return 2;
  }
  window.configPanel()->setConfig(config);
  window.resize(1920, 1080);
  window.show();
  window.chartHub()->showEveryChart(3);
  const bool swept = sweepFirst(window);
  // The window's own timer is replaced by one that times each frame; same interval.
  auto* poll = window.findChild<QTimer*>("pollTimer");
  const int intervalMs = poll->interval();
  window.start();
  poll->stop();
  QObject::disconnect(poll, nullptr, &window, nullptr);

  // Room for every frame's figures, taken (and touched) now: the measurement's own storage
  // must not show up as the window's memory growing (4 doubles a frame: 3 MB an hour).
  const size_t room = size_t(commandLine.benchFramesS) * 1000 / size_t(intervalMs) + 1000;
  std::vector<double> frames, lateness, polls, cpu;
  for (auto* v : {&frames, &lateness, &polls, &cpu}) {
    v->assign(room, 0.0);
    v->clear();  // keeps the capacity, its pages already resident
  }
  // The 3 slowest frames: ms, at s, GUI CPU ms, the GUI thread's waits and preemptions.
  std::vector<std::array<double, 5>> slowest;
  std::map<QString, std::pair<double, int>> replots;  // per chart: summed replot ms, count
  for (Chart* c : window.charts())
    QObject::connect(c, &QCustomPlot::afterReplot, &window, [&replots, c] {
      auto& [ms, n] = replots[c->stem()];
      ms += c->replotTime();
      ++n;
    });
  // Memory is read at every frame. Live changes move it up and down with the layout (ZeRO 1
  // holds other buffers than ZeRO 0), so growth compares like with like: the highest RSS of
  // the first third of the run (after a warm-up: its buffers, the charts' first full drawing)
  // against the highest of the last third, each spanning several changes. A leak raises the
  // second; a bounded process has the same high-water mark in both.
  const qint64 runMs = qint64(commandLine.benchFramesS) * 1000;
  const qint64 warmUpMs = std::min<qint64>(30000, runMs / 10);
  const double rssAtStart = residentMb();
  double rssFirstThird = 0, rssLastThird = 0, rssPeak = 0;
  QStringList changeTimes;  // s since the start, of each live change asked for
  // A memory line every twentieth of the run (at least 10 s apart): the trend, not two ends.
  const qint64 memoryLineMs = std::max<qint64>(10000, qint64(commandLine.benchFramesS) * 50);
  QElapsedTimer total, sinceTick, sinceChange, sinceMemoryLine;
  total.start();
  sinceMemoryLine.start();
  sinceTick.start();
  sinceChange.start();
  QTimer tick;
  tick.setInterval(intervalMs);
  tick.setTimerType(Qt::PreciseTimer);
  QObject::connect(&tick, &QTimer::timeout, &window, [&] {
    // How late this tick came: time the GUI thread was busy with something else.
    if (frames.size() == room) return QApplication::exit(0);  // a late end: no more room
    lateness.push_back(std::max(0.0, sinceTick.nsecsElapsed() / 1e6 - intervalMs));
    sinceTick.restart();
    QElapsedTimer frame;
    frame.start();
    const double cpu0 = threadCpuMs();
    const ThreadSwitches switches0 = threadSwitches();
    window.poll();
    polls.push_back(frame.nsecsElapsed() / 1e6);
    // The charts queue their replots and repaints; run them now, inside the measurement.
    QCoreApplication::sendPostedEvents();
    for (Chart* c : window.charts())
      if (ChartHub::isInView(c)) c->repaint();
    frames.push_back(frame.nsecsElapsed() / 1e6);
    cpu.push_back(threadCpuMs() - cpu0);
    const ThreadSwitches switches = threadSwitches();
    slowest.push_back({frames.back(), total.elapsed() / 1000.0, cpu.back(),
                       double(switches.waits - switches0.waits),
                       double(switches.preemptions - switches0.preemptions)});
    std::sort(slowest.begin(), slowest.end(), std::greater<>());
    if (slowest.size() > 3) slowest.pop_back();
    const double rss = residentMb();
    if (total.elapsed() >= warmUpMs && total.elapsed() < warmUpMs + (runMs - warmUpMs) / 3)
      rssFirstThird = std::max(rssFirstThird, rss);
    if (total.elapsed() >= runMs - (runMs - warmUpMs) / 3)
      rssLastThird = std::max(rssLastThird, rss);
    rssPeak = std::max(rssPeak, rss);
    if (sinceMemoryLine.elapsed() >= memoryLineMs) {
      sinceMemoryLine.restart();
      printLine(stdout, QObject::tr("at %1 s: RSS %2 MB, heap in use %3 MB, %4 steps")
                            .arg(total.elapsed() / 1000.0, 0, 'f', 0)
                            .arg(residentMb(), 0, 'f', 1)
                            .arg(heapInUseMb(), 0, 'f', 1)
                            .arg(window.history().stepsSeen()));
    }
    // A live change of the running training, as a learner makes one: through the settings.
    if (commandLine.reconfigureEveryS > 0 &&
        sinceChange.elapsed() >= qint64(commandLine.reconfigureEveryS) * 1000) {
      sinceChange.restart();
      RunConfig c = window.configPanel()->config();
      c.zero = c.zero == 0 ? 1 : 0;
      window.configPanel()->setConfig(c);
      changeTimes << QString::number(total.elapsed() / 1000.0, 'f', 1);
    }
    if (total.elapsed() >= qint64(commandLine.benchFramesS) * 1000) QApplication::exit(0);
  });
  tick.start();
  QApplication::exec();
  const double rssEnd = residentMb();
  const RunConfig& c = window.runConfig();
  int visible = 0;
  for (Chart* ch : window.charts()) visible += ChartHub::isInView(ch);
  printLine(stdout, QObject::tr("frame bench: %1 ranks (%2), %3 s, %4 frames at %5 ms, %6 of %7 "
                                "charts visible, %8, %9 steps trained (%10 samples/s)")
                        .arg(c.ranks)
                        .arg(QString::fromStdString(c.strategy))
                        .arg(commandLine.benchFramesS)
                        .arg(frames.size())
                        .arg(intervalMs)
                        .arg(visible)
                        .arg(window.charts().size())
                        .arg(swept ? QObject::tr("a sweep at 1, 2, 4, 8 ranks drawn")
                                   : QObject::tr("no sweep (it could not run)"))
                        .arg(window.history().stepsSeen())
                        .arg(window.history().recentSamplesPerS(), 0, 'f', 0));
  printLine(stdout, QObject::tr("frame ms (poll + repaint of visible charts): median %1, p95 %2, "
                                "worst %3; tick lateness ms: median %4, worst %5")
                        .arg(percentile(frames, 0.5), 0, 'f', 2)
                        .arg(percentile(frames, 0.95), 0, 'f', 2)
                        .arg(percentile(frames, 1.0), 0, 'f', 2)
                        .arg(percentile(lateness, 0.5), 0, 'f', 2)
                        .arg(percentile(lateness, 1.0), 0, 'f', 2));
  QStringList slow;
  for (const auto& [ms, at, cpuMs, waits, preempted] : slowest)
    slow << QObject::tr("%1 ms at %2 s (GUI CPU %3 ms, %4 waits, %5 preemptions)")
                .arg(ms, 0, 'f', 1)
                .arg(at, 0, 'f', 1)
                .arg(cpuMs, 0, 'f', 1)
                .arg(waits, 0, 'f', 0)
                .arg(preempted, 0, 'f', 0);
  printLine(stdout, QObject::tr("slowest frames: %1").arg(slow.join("; ")));
  printLine(stdout, QObject::tr("GUI thread CPU per frame ms: median %1, p95 %2, worst %3 (the "
                                "rest of a frame's wall time the cores were busy training)")
                        .arg(percentile(cpu, 0.5), 0, 'f', 2)
                        .arg(percentile(cpu, 0.95), 0, 'f', 2)
                        .arg(percentile(cpu, 1.0), 0, 'f', 2));
  QStringList perChart;
  const double seconds = total.elapsed() / 1000.0;
  for (const auto& [stem, r] : replots)
    perChart << QString("%1 %2 ms × %3/s")
                    .arg(stem)
                    .arg(r.first / std::max(1, r.second), 0, 'f', 2)
                    .arg(r.second / seconds, 0, 'f', 1);
  printLine(stdout, QObject::tr("of which poll (copy + chart data) median %1 ms; replots: %2")
                        .arg(percentile(polls, 0.5), 0, 'f', 2)
                        .arg(perChart.join(", ")));
  printLine(
      stdout,
      QObject::tr("RSS MB: %1 at the start, %2 at the end; highest %3 in the first third "
                  "after %4 s of warm-up, %5 in the last third: growth %6 %; peak %7; %8 "
                  "live changes%9")
          .arg(rssAtStart, 0, 'f', 1)
          .arg(rssEnd, 0, 'f', 1)
          .arg(rssFirstThird, 0, 'f', 1)
          .arg(warmUpMs / 1000)
          .arg(rssLastThird, 0, 'f', 1)
          .arg(rssFirstThird > 0 ? 100.0 * (rssLastThird - rssFirstThird) / rssFirstThird : 0.0, 0,
               'f', 2)
          .arg(rssPeak, 0, 'f', 1)
          .arg(changeTimes.size())
          .arg(changeTimes.isEmpty() ? QString() : " at " + changeTimes.join(", ") + " s"));
  window.reset();
  return 0;
}

}  // namespace paralab
