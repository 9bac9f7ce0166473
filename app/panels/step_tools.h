// The tools under a lesson step's text, as widgets: the comparison (prediction vs reference vs
// measurement), the prediction box with Lock in, and the experiment box with Apply, Run and a
// benchmark's progress and Cancel. Built once; LessonDock fills them for the step it shows and
// decides what they mean (lesson_step.cpp). See tests/lessons/tst_lessons_dock.cpp.
#pragma once
#include <QString>
#include <QWidget>
#include <optional>

#include "lesson.h"

class QButtonGroup;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace paralab {

class StepTools : public QWidget {
  Q_OBJECT
 public:
  explicit StepTools(QWidget* parent = nullptr);

  // From the top. Whatever grows while a step is open (the comparison after a lock or a run, a
  // line saying why an answer cannot be read) is above every button and grows upward into the
  // text: the buttons stay under the pointer (tst_lessons_dock_layout: buttonsStayPut).
  QLabel* comparison;
  // The prediction: its question, a number typed or one of its choices picked, and Lock in.
  QLabel* askLabel;
  QLineEdit* predictionEdit;
  QWidget* choiceBox;  // the radio buttons of a prediction with choices, two to a line
  QButtonGroup* choiceGroup;
  QPushButton* lock;
  // The experiment: its settings in words, a benchmark's line, and its buttons.
  QLabel* experimentLabel;
  QLabel* benchLabel;
  QPushButton* apply;
  QPushButton* run;
  QProgressBar* benchProgress;  // with benchCancel, shown while the step's benchmark measures
  QPushButton* benchCancel;
};

// What the learner did on the step shown, forgotten when another step opens: its last
// measurement (or why none could be read), a prediction typed that could not be read, "Try
// again" pressed, and how the step's last benchmark ended.
struct StepAttempt {
  std::optional<double> measured;
  std::optional<lessons::ChoiceMeasurement> choiceMeasured;  // the same, for choices
  QString measureError;
  QString typingError;    // why the prediction typed could not be read ("" none)
  bool retrying = false;  // "Try again" pressed: a new attempt is being typed
  QString benchStatus;    // how the step's last benchmark ended ("" none yet)
};

}  // namespace paralab
