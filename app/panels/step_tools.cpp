// The tools under a lesson step's text, laid out once (step_tools.h); LessonDock fills them.
// See tests/lessons/tst_lessons_dock.cpp.
#include "panels/step_tools.h"

#include <QButtonGroup>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>

namespace paralab {

StepTools::StepTools(QWidget* parent) : QWidget(parent) {
  auto* sv = new QVBoxLayout(this);
  sv->setContentsMargins(0, 0, 0, 0);
  comparison = new QLabel(this);
  comparison->setObjectName("lessonComparison");
  comparison->setWordWrap(true);
  comparison->setTextFormat(Qt::RichText);
  comparison->setTextInteractionFlags(Qt::LinksAccessibleByMouse);

  auto* pred = new QGroupBox(tr("Your prediction (before you run)"), this);
  auto* pf = new QVBoxLayout(pred);  // not a QFormLayout: its rows clip a wrapped label
  askLabel = new QLabel(pred);
  askLabel->setWordWrap(true);
  predictionEdit = new QLineEdit(pred);
  predictionEdit->setObjectName("lessonPrediction");
  lock = new QPushButton(tr("Lock in"), pred);
  lock->setObjectName("lessonLock");
  // As wide as its longer text, so "Lock in" becoming "Try again" moves nothing.
  lock->setMinimumWidth(std::max(lock->sizeHint().width(), [&] {
    QPushButton probe(tr("Try again"));
    return probe.sizeHint().width();
  }()));
  choiceBox = new QWidget(pred);
  choiceBox->setObjectName("lessonChoices");
  new QGridLayout(choiceBox);  // two columns: four choices take two lines of the narrow dock
  choiceBox->layout()->setContentsMargins(0, 0, 0, 0);
  choiceGroup = new QButtonGroup(choiceBox);
  auto* pr = new QHBoxLayout;
  pr->addWidget(predictionEdit, 1);
  pr->addStretch(0);  // takes the room only where the edit is hidden: Lock in stays at the right
  pr->addWidget(lock);
  pf->addWidget(askLabel);
  pf->addWidget(choiceBox);
  pf->addLayout(pr);

  auto* exp = new QGroupBox(tr("Experiment"), this);
  auto* ev = new QVBoxLayout(exp);
  experimentLabel = new QLabel(exp);
  experimentLabel->setWordWrap(true);
  experimentLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  benchLabel = new QLabel(exp);
  benchLabel->setObjectName("lessonBenchLabel");
  benchLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  benchLabel->setWordWrap(true);
  auto* eb = new QHBoxLayout;
  apply = new QPushButton(tr("Apply to controls"), exp);
  run = new QPushButton(tr("Run"), exp);
  apply->setObjectName("lessonApply");
  run->setObjectName("lessonRun");
  benchProgress = new QProgressBar(exp);
  benchProgress->setObjectName("lessonBenchProgress");
  benchCancel = new QPushButton(tr("Cancel"), exp);
  benchCancel->setObjectName("lessonBenchCancel");
  benchProgress->hide();
  benchCancel->hide();
  eb->addWidget(apply);
  eb->addWidget(run);
  eb->addWidget(benchProgress, 1);
  eb->addWidget(benchCancel);
  ev->addWidget(experimentLabel);
  ev->addWidget(benchLabel);
  ev->addLayout(eb);

  sv->addStretch(1);  // room to spare goes above: the boxes keep to the foot of the page
  sv->addWidget(comparison);
  sv->addWidget(pred);
  sv->addWidget(exp);
}

}  // namespace paralab
