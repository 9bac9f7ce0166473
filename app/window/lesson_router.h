// LessonRouter: the learner's way through the window. The welcome page and its ways in
// (remembered), the lessons dock wired to the run (a step's experiment to the settings and the
// run or sweep it asks for, a step's benchmark measured, the measurement back to the step), and
// the questions asked before a lesson would lose a run or the learner's settings.
// See tests/app/tst_window_trust.cpp (welcomeOffersAWayIn, lessonAsksBeforeReplacing) and
// tests/app/tst_window.cpp (lessonExperimentRunsAndReportsBack).
#pragma once
#include <QObject>
#include <QStringList>
#include <optional>

#include "config.h"

class QMainWindow;
class QWidget;

namespace paralab {

class BenchRunner;
class ChartHub;
class ConfigPanel;
class DockLayout;
class LessonDock;
class RunController;
class SweepPanel;
class WelcomePage;

// A question with what would be lost, one line each; true at once when nothing would be. The
// default button loses nothing (Enter by habit).
bool askBeforeLoss(QWidget* parent, const QString& question, const QStringList& losses,
                   const QString& yes);

class LessonRouter : public QObject {
  Q_OBJECT
 public:
  // Makes the lessons dock (in `layout`'s left column) and the benchmark runner.
  LessonRouter(QMainWindow* window, RunController* runs, ChartHub* hub, ConfigPanel* panel,
               SweepPanel* sweep, DockLayout* layout);

  LessonDock* dock() const { return m_dock; }
  BenchRunner* benchRunner() const { return m_bench; }
  WelcomePage* welcome() const { return m_welcome; }
  // The welcome page over the charts, not modal.
  void showWelcome();
  // "lesson", "free" or "open": that tab in front; remembered once `remember` is set.
  void startAs(const QString& choice);
  void setRemember(bool remember) { m_remember = remember; }
  // Why nothing may start now: a lesson's benchmark is measuring ("" when none is).
  QString measuring() const;

 signals:
  void openRunChosen();  // the welcome's "Open a run"
  void sweepAsked();     // a step's sweep, its ranks and steps set on the sweep panel

 private:
  void connectDock();
  void connectBench();
  void coverCharts();
  // The settings are the learner's own unless they are the defaults or what a lesson put there.
  bool settingsAreTheLearners(const RunConfig& replacement) const;
  // What a lesson's settings would replace (the run shown, the learner's settings), asked first.
  bool mayReplaceWith(const RunConfig& lesson, bool newRun);
  void useLessonSettings(const RunConfig& config);

  QMainWindow* m_window;
  RunController* m_runs;
  ChartHub* m_hub;
  ConfigPanel* m_panel;
  SweepPanel* m_sweep;
  DockLayout* m_layout;
  LessonDock* m_dock = nullptr;
  BenchRunner* m_bench = nullptr;  // a lesson step's teaching benchmark
  WelcomePage* m_welcome = nullptr;
  bool m_remember = false;
  int64_t m_experimentRun = -1;                    // a lesson step's run: its result goes back
  std::optional<RunConfig> m_experimentSweepBase;  // a lesson step's sweep: likewise
  std::optional<RunConfig> m_lessonConfig;  // the settings a lesson last put on the panel
};

}  // namespace paralab
