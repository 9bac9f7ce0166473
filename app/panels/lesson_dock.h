// LessonDock: the lessons panel — steps with glossary hovers, a prediction locked in before the
// step's experiment may run, the experiment sent to the run controls, prediction vs reference vs
// measurement, retrieval practice and flashcards (progress persists); beside the lessons, a
// review of every lesson's due cards and the glossary to browse. The window adds it with
// addPanel() and wires its signals to the run. See tests/lessons/tst_lessons_dock.cpp.
#pragma once
#include <QDockWidget>
#include <QJsonObject>
#include <QList>

#include "config.h"
#include "flashcards.h"
#include "glossary.h"
#include "lesson.h"
#include "progress.h"
#include "panels/step_tools.h"

class QButtonGroup;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QStackedWidget;
class QTextBrowser;
class QTimer;
class QWidget;

namespace paralab {

class FlashcardPage;
class GlossaryPage;
class RetrievalPage;
class ReviewPage;

class LessonDock : public QDockWidget {
  Q_OBJECT
 public:
  struct Paths {
    QString lessons = lessons::lessonsRoot();
    QString progress = lessons::Progress::defaultPath();
    QString flashcards = lessons::FlashcardDeck::defaultPath();
    int cores = 0;  // sweeps sized to the machine are sized for these (0: this machine's)
  };
  // What the dock reads at start and keeps: the lessons and the glossary (with what could not
  // be read), and the learner's progress and flashcards, each saved to its file as it changes.
  struct Course {
    explicit Course(const Paths& from)
        : paths(from), progress(from.progress), deck(from.flashcards) {}
    Paths paths;
    QList<lessons::Lesson> lessons;
    QStringList errors;  // lessons and glossary, at load
    lessons::Glossary glossary;
    lessons::Progress progress;
    lessons::FlashcardDeck deck;
  };
  // `capabilities`: what the engine offers (lessons::engineCapabilities()); lessons and steps
  // needing more are shown as "coming" with the reason and cannot be run.
  explicit LessonDock(const QStringList& capabilities, QWidget* parent = nullptr);
  LessonDock(const QStringList& capabilities, const Paths& paths, QWidget* parent = nullptr);
  ~LessonDock() override;

  const QList<lessons::Lesson>& lessons() const { return m_course.lessons; }
  QStringList loadErrors() const { return m_course.errors; }
  // What could not be read or saved — lessons, glossary, progress, flashcards — a line each,
  // shown above the lesson text while there is any (empty: all is well).
  QStringList problems() const;
  int currentLesson() const { return m_lesson; }
  // Pages of the current lesson: 0 the introduction, 1..n its steps, then retrieval practice,
  // then flashcards.
  int currentPage() const { return m_page; }
  int pageCount() const;
  const lessons::Step* currentStep() const;  // nullptr on the other pages

  // Both show the lesson view (not the review or the glossary).
  void openLesson(int index);
  void openPage(int page);

  // What the dock shows under its lesson list: a lesson's pages, the review of every lesson's
  // due cards ("Review: 12 cards due" opens it), or the glossary ("Glossary").
  enum class View { Lesson, Review, Glossary };
  View currentView() const;
  void openReview();
  void openGlossary();
  ReviewPage* reviewPage() const { return m_review; }
  GlossaryPage* glossaryPage() const { return m_glossaryPage; }

  // The run the window made for the current step's experiment: its steps as `paralab-run
  // --json` prints them (lessons::stepJson), or its sweep (lessons::sweepJson). Fills the
  // comparison of the current step.
  void showRunResult(const QList<QJsonObject>& steps);
  void showSweepResult(const QJsonObject& sweep);
  // A benchmark's result (benchJson) for the step's comparison, as a sweep's is.
  void showBenchResult(const QJsonObject& bench);

  // The current step's benchmark (runBench) is measuring: `done` of `total` pieces; its
  // progress bar and Cancel show until showBenchFinished(), which says how it ended.
  void showBenchProgress(int done, int total);
  void showBenchFinished(const QString& message);
  bool benchRunning() const { return m_benchRunning; }

  // What the comparison shows now, as text (also for tests): prediction, reference, measured.
  QString comparisonText() const;
  // Whether the current step's prediction is locked in (a step that asks none counts as
  // locked): until it is, the step's experiment does not run.
  bool predictionLocked() const;

 signals:
  // Put this configuration on the run controls (the learner then presses Start).
  void applyExperiment(const paralab::RunConfig& config);
  // Apply and start it.
  void runExperiment(const paralab::RunConfig& config);
  // Run a scaling sweep of `base` at these rank counts.
  void runSweep(const paralab::RunConfig& base, const QList<int>& ranks, int steps, int warmup);
  // A step opened that asks for a prediction before its sweep: an earlier sweep's result (the
  // same sweep, often, with the fitted value asked for) must not be on show while the learner
  // predicts.
  void sweepToPredict();
  // Run the step's teaching benchmark (a ```bench block with a kind) off the GUI thread and
  // draw it; cancelBench() stops it.
  void runBench(const paralab::lessons::Bench& bench);
  void cancelBench();

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;  // a new theme: the page is laid out in its colours

 private:
  // `buttonsWereAt`: where the step's buttons were before a change already made (their y in
  // the dock), for them to stay there; by default where they are now.
  void fitWrappedLabels(std::optional<int> buttonsWereAt = std::nullopt);
  QWidget* buttonsAnchor() const;  // Lock in, else Run, where a step shows them (else null)
  void activateLayouts();
  QScrollArea* pageScroll() const;  // the lesson page's: its text and tools
  void build();
  QWidget* buildLessonView();
  void showView(View view);
  void updateReviewCount();  // the "Review: N cards due" button
  void fillLessonList();
  void showPage();
  void showStepTools(const lessons::Step& step);
  void updateRunButtons();
  void lockPrediction();  // or, once locked, "Try again": a new attempt beside the first
  void markCompleted(int lesson);
  void showProblems();
  void refreshComparison();
  // The current step's comparison measured on one result object (a sweep's, a benchmark's).
  void measureFrom(const QJsonObject& result);
  void keepMeasurement();  // the current step's measurement, into the progress file
  // A prediction with choices: one radio button per choice; the comparison of the pick with the
  // reference answer and the measured one (lesson_step.cpp).
  void showChoices(const lessons::Prediction& p);
  QString choiceComparisonText(const lessons::Step& s) const;
  QStringList missingFor(const lessons::Step* step) const;
  std::optional<RunConfig> stepConfig(QString* error) const;

  QStringList m_caps;
  Course m_course;
  QLabel* m_problems = nullptr;  // problems(), in the accent of a warning
  int m_lesson = -1;
  int m_page = 0;
  StepAttempt m_attempt;  // on the step shown

  QComboBox* m_picker = nullptr;
  QPushButton *m_reviewButton = nullptr, *m_glossaryButton = nullptr;
  QStackedWidget* m_views = nullptr;  // the lesson view, the review, the glossary
  QWidget* m_lessonView = nullptr;
  ReviewPage* m_review = nullptr;
  GlossaryPage* m_glossaryPage = nullptr;
  QTimer* m_countTimer = nullptr;  // cards fall due while the dock is open
  QLabel* m_header = nullptr;
  QTextBrowser* m_text = nullptr;
  QString m_markdown;  // of the page shown, glossary links made
  QLabel* m_pageLabel = nullptr;
  QPushButton *m_prev = nullptr, *m_next = nullptr;
  QStackedWidget* m_tools = nullptr;
  StepTools* m_step = nullptr;  // the step tools: comparison, prediction, experiment
  bool m_benchRunning = false;  // the step's benchmark measures (it goes on past the step)
  // Retrieval and cards.
  RetrievalPage* m_retrieval = nullptr;
  FlashcardPage* m_cards = nullptr;
};

}  // namespace paralab
