// LessonDock: the lessons panel (see lesson_dock.h). Renders a lesson page by page with
// QTextBrowser's Markdown, glossary terms as links whose definition shows on hover; a step's
// prediction, experiment and comparison are in lesson_step.cpp, the review across lessons in
// review_page.cpp, the glossary to browse in glossary_page.cpp.
// See tests/lessons/tst_lessons_dock.cpp.
#include "panels/lesson_dock.h"

#include <QCoreApplication>
#include <QComboBox>
#include <QEvent>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QStackedWidget>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine_bridge.h"
#include "panels/flashcard_page.h"
#include "panels/glossary_page.h"
#include "panels/retrieval_page.h"
#include "panels/review_page.h"

namespace paralab {

using namespace paralab::lessons;

LessonDock::LessonDock(const QStringList& capabilities, QWidget* parent)
    : LessonDock(capabilities, Paths{}, parent) {}

LessonDock::LessonDock(const QStringList& capabilities, const Paths& paths, QWidget* parent)
    : QDockWidget(tr("Lessons"), parent),
      m_caps(capabilities),
      m_course(paths) {
  setObjectName("lessonDock");
  const LibraryResult lib = loadLessons(paths.lessons, paths.cores);
  m_course.lessons = lib.lessons;
  m_course.errors = lib.errors;
  for (const Lesson& l : m_course.lessons) {  // a file from before steps were keyed by title
    QStringList titles;
    for (const Step& s : l.steps) titles << s.title;
    m_course.progress.adoptPageKeys(l.slug, titles);
  }
  m_course.glossary = Glossary::load(paths.lessons + "/glossary.md", &m_course.errors);
  build();
  fillLessonList();
  showProblems();
  if (!m_course.lessons.isEmpty()) openLesson(0);
}

LessonDock::~LessonDock() = default;

// [SECTION] Layout.

// From the top: the lesson list; the review and glossary buttons; what could not be read or
// saved; then the view: a lesson's pages, the review or the glossary.
void LessonDock::build() {
  auto* root = new QWidget(this);
  auto* v = new QVBoxLayout(root);
  m_picker = new QComboBox(root);
  m_picker->setObjectName("lessonPicker");
  m_reviewButton = new QPushButton(root);
  m_reviewButton->setObjectName("lessonReviewButton");
  m_reviewButton->setToolTip(tr("The due flashcards of every lesson, mixed"));
  m_glossaryButton = new QPushButton(tr("Glossary"), root);
  m_glossaryButton->setObjectName("lessonGlossaryButton");
  m_glossaryButton->setToolTip(tr("Every term, its definition and the steps that use it"));
  for (QPushButton* b : {m_reviewButton, m_glossaryButton}) b->setCheckable(true);
  auto* home = new QHBoxLayout;
  home->addWidget(m_reviewButton, 1);
  home->addWidget(m_glossaryButton);
  m_problems = new QLabel(root);
  m_problems->setObjectName("lessonProblems");
  m_problems->setWordWrap(true);
  m_problems->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_problems->hide();

  m_views = new QStackedWidget(root);
  m_views->addWidget(buildLessonView());
  m_review = new ReviewPage(m_course.lessons, m_course.progress, m_course.deck, m_course.glossary);
  m_views->addWidget(m_review);
  m_glossaryPage = new GlossaryPage(m_course.glossary, m_course.lessons);
  m_views->addWidget(m_glossaryPage);
  connect(m_reviewButton, &QPushButton::clicked, this,
          [this] { currentView() == View::Review ? showView(View::Lesson) : openReview(); });
  connect(m_glossaryButton, &QPushButton::clicked, this,
          [this] { currentView() == View::Glossary ? showView(View::Lesson) : openGlossary(); });
  connect(m_review, &ReviewPage::back, this, [this] { showView(View::Lesson); });
  connect(m_glossaryPage, &GlossaryPage::back, this, [this] { showView(View::Lesson); });
  connect(m_glossaryPage, &GlossaryPage::openPage, this, [this](int lesson, int page) {
    openLesson(lesson);
    openPage(page);
  });
  connect(m_review->cards(), &FlashcardPage::reviewed, this, [this] {
    showProblems();
    updateReviewCount();
  });
  m_countTimer = new QTimer(this);
  connect(m_countTimer, &QTimer::timeout, this, &LessonDock::updateReviewCount);
  m_countTimer->start(60 * 1000);

  v->addWidget(m_picker);
  v->addLayout(home);
  v->addWidget(m_problems);
  v->addWidget(m_views, 1);
  setWidget(root);
  connect(m_picker, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i != m_lesson) openLesson(i);
  });
  // The lesson open already, picked again from the review or the glossary: back to its page.
  connect(m_picker, &QComboBox::activated, this, [this](int i) {
    if (i == m_lesson) showView(View::Lesson);
  });
  showView(View::Lesson);
}

// A lesson's pages: its header, the page's text and the page's tools, scrolled as one page
// (the text as tall as its lines, never a box of its own to scroll); Back / Next under it,
// always in view. On a laptop's 720 px the page scrolls and every control can be reached
// (tst_window_screen: everyStepReachableOnALaptop).
QWidget* LessonDock::buildLessonView() {
  m_lessonView = new QWidget;
  auto* v = new QVBoxLayout(m_lessonView);
  v->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(m_lessonView);
  scroll->setObjectName("lessonScroll");
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Always there, so the page keeps one width: a bar coming as the comparison grows would
  // move every button sideways, and rewrap the text under the learner's eyes.
  scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  auto* root = new QWidget;
  root->setObjectName("lessonPage");
  root->installEventFilter(this);  // a new width (a scroll bar came or went): heights anew
  m_header = new QLabel(root);
  m_header->setWordWrap(true);
  m_text = new QTextBrowser(root);
  m_text->setObjectName("lessonText");
  m_text->setOpenLinks(false);
  m_text->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the page scrolls instead
  m_text->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  connect(m_text, &QTextBrowser::highlighted, this,
          [this](const QUrl& url) { showGlossaryTip(m_course.glossary, url.toString(), m_text); });

  auto* nav = new QHBoxLayout;
  m_prev = new QPushButton(tr("◀ Back"), root);
  m_next = new QPushButton(tr("Next ▶"), root);
  m_pageLabel = new QLabel(root);
  nav->addWidget(m_prev);
  nav->addStretch();
  nav->addWidget(m_pageLabel);
  nav->addStretch();
  nav->addWidget(m_next);
  connect(m_prev, &QPushButton::clicked, this, [this] { openPage(m_page - 1); });
  connect(m_next, &QPushButton::clicked, this, [this] { openPage(m_page + 1); });

  m_tools = new QStackedWidget(root);
  m_tools->addWidget(new QWidget);  // nothing to do on this page

  // Step tools (step_tools.h): the comparison, the prediction and the experiment.
  m_step = new StepTools;
  connect(m_step->comparison, &QLabel::linkHovered, this, [this](const QString& link) {
    showGlossaryTip(m_course.glossary, link, m_step->comparison);
  });
  connect(m_step->lock, &QPushButton::clicked, this, &LessonDock::lockPrediction);
  connect(m_step->predictionEdit, &QLineEdit::returnPressed, this, [this] {
    if (!m_step->predictionEdit->isReadOnly()) lockPrediction();
  });
  connect(m_step->benchCancel, &QPushButton::clicked, this, &LessonDock::cancelBench);
  connect(m_step->apply, &QPushButton::clicked, this, [this] {
    QString error;
    if (!predictionLocked()) return;
    if (const auto c = stepConfig(&error)) emit applyExperiment(*c);
  });
  connect(m_step->run, &QPushButton::clicked, this, [this] {
    QString error;
    const Step* s = currentStep();
    if (s && s->bench && !s->bench->kind.isEmpty() && !s->experiment) {
      if (!predictionLocked() || m_benchRunning) return;
      m_attempt.benchStatus.clear();
      emit runBench(*s->bench);
      return;
    }
    const auto c = stepConfig(&error);
    if (!c || !s || !predictionLocked()) return;
    m_attempt.measured.reset();
    m_attempt.choiceMeasured.reset();
    m_attempt.measureError.clear();
    refreshComparison();
    if (s->sweep)
      emit runSweep(*c, s->sweep->ranks, s->sweep->steps, s->sweep->warmup);
    else
      emit runExperiment(*c);
  });
  m_tools->addWidget(m_step);

  // Retrieval practice: filled per lesson, in a scroll area (a lesson asks several questions,
  // each with room for an answer: more than the dock's height shares with the text).
  m_retrieval = new RetrievalPage(m_course.progress, m_course.glossary);
  connect(m_retrieval, &RetrievalPage::saved, this, &LessonDock::showProblems);
  m_tools->addWidget(m_retrieval);

  // Flashcards.
  m_cards = new FlashcardPage(m_course.deck, &m_course.glossary);
  connect(m_cards, &FlashcardPage::reviewed, this, [this] {
    showProblems();
    updateReviewCount();
  });
  m_tools->addWidget(m_cards);

  auto* page = new QVBoxLayout(root);
  page->setContentsMargins(0, 0, 0, 0);
  page->addWidget(m_header);
  page->addWidget(m_text);
  page->addStretch(1);  // room to spare goes between: the step's tools keep to the foot
  page->addWidget(m_tools);
  scroll->setWidget(root);
  v->addWidget(scroll, 1);
  v->addLayout(nav);
  return m_lessonView;
}

QScrollArea* LessonDock::pageScroll() const {
  return m_lessonView->findChild<QScrollArea*>("lessonScroll");
}

bool LessonDock::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Resize && watched->objectName() == "lessonPage")
    if (auto* r = static_cast<QResizeEvent*>(event); r->size().width() != r->oldSize().width())
      QTimer::singleShot(0, this, [this] { fitWrappedLabels(); });
  return QDockWidget::eventFilter(watched, event);
}

LessonDock::View LessonDock::currentView() const {
  return m_views->currentWidget() == m_review         ? View::Review
         : m_views->currentWidget() == m_glossaryPage ? View::Glossary
                                                      : View::Lesson;
}

void LessonDock::openReview() {
  m_review->refresh();
  showView(View::Review);
}

void LessonDock::openGlossary() { showView(View::Glossary); }

void LessonDock::showView(View view) {
  QWidget* shown = view == View::Review     ? static_cast<QWidget*>(m_review)
                   : view == View::Glossary ? static_cast<QWidget*>(m_glossaryPage)
                                            : m_lessonView;
  m_views->setCurrentWidget(shown);
  // As in the tools' stack: only the view shown asks for room (the review's card is as tall as
  // the longest card of any lesson, which no lesson page should have to leave room for).
  for (int i = 0; i < m_views->count(); ++i) {
    const auto policy = m_views->widget(i) == shown ? QSizePolicy::Preferred : QSizePolicy::Ignored;
    m_views->widget(i)->setSizePolicy(policy, policy);
  }
  m_reviewButton->setChecked(view == View::Review);
  m_glossaryButton->setChecked(view == View::Glossary);
  updateReviewCount();
  activateLayouts();
  if (view == View::Lesson) fitWrappedLabels();
}

void LessonDock::updateReviewCount() {
  const int due = m_review->dueNow();
  m_reviewButton->setText(due == 0   ? tr("Review: no cards due")
                          : due == 1 ? tr("Review: 1 card due")
                                     : tr("Review: %1 cards due").arg(due));
}

void LessonDock::fillLessonList() {
  for (int i = 0; i < m_course.lessons.size(); ++i) {
    m_picker->addItem(QString());
    markCompleted(i);
  }
}

// The lesson's line in the picker: "2. Amdahl's law ✓" once finished, at once (not at the next
// start of the window).
void LessonDock::markCompleted(int i) {
  const Lesson& l = m_course.lessons[i];
  const bool coming = !missingNeeds(l.needs, m_caps).isEmpty();
  const bool done = m_course.progress.lesson(l.slug).completed;
  m_picker->setItemText(
      i, QString("%1. %2%3%4")
             .arg(l.number)
             .arg(l.title, coming ? tr(" — coming") : QString(), done ? " ✓" : QString()));
}

int LessonDock::pageCount() const {
  return m_lesson < 0 ? 0 : int(m_course.lessons[m_lesson].steps.size()) + 3;
}

const Step* LessonDock::currentStep() const {
  if (m_lesson < 0 || m_page < 1 || m_page > m_course.lessons[m_lesson].steps.size()) return nullptr;
  return &m_course.lessons[m_lesson].steps[m_page - 1];
}

QStringList LessonDock::missingFor(const Step* step) const {
  QStringList needs = m_course.lessons[m_lesson].needs;
  if (step) needs << step->needs;
  return missingNeeds(needs, m_caps);
}

std::optional<RunConfig> LessonDock::stepConfig(QString* error) const {
  const Step* s = currentStep();
  if (!s || !s->experiment || !missingFor(s).isEmpty()) return std::nullopt;
  return configFromExperiment(*s->experiment, error);
}

// [SECTION] Pages.

void LessonDock::openLesson(int index) {
  if (index < 0 || index >= m_course.lessons.size()) return;
  m_lesson = index;
  m_picker->setCurrentIndex(index);
  const Lesson& l = m_course.lessons[index];
  QStringList why;
  for (const QString& n : missingNeeds(l.needs, m_caps)) why << describeMissing(n);
  m_header->setText(tr("%1 minutes. %2")
                        .arg(l.minutes)
                        .arg(why.isEmpty() ? QString() : tr("Coming: ") + why.join("; ")));
  m_retrieval->showLesson(l);
  const LessonProgress p = m_course.progress.lesson(l.slug);
  openPage(std::min(p.stepReached, pageCount() - 1));
}

void LessonDock::openPage(int page) {
  if (m_lesson < 0) return;
  if (currentView() != View::Lesson) showView(View::Lesson);
  m_page = std::clamp(page, 0, pageCount() - 1);
  const Lesson& l = m_course.lessons[m_lesson];
  // A new attempt; what this step measured the last time it ran, kept with the progress.
  m_attempt = {};
  const LessonProgress kept = m_course.progress.lesson(l.slug);
  if (const Step* s = currentStep()) {
    if (kept.measured.contains(s->title)) m_attempt.measured = kept.measured.value(s->title);
    if (s->prediction && kept.measuredChoices.contains(s->title))
      m_attempt.choiceMeasured = choiceAnswer(*s->prediction, kept.measuredChoices.value(s->title).values);
  }
  m_course.progress.reachStep(l.slug, m_page);
  m_step->predictionEdit->clear();  // a new step starts empty (a locked prediction is filled in again)
  if (m_page == pageCount() - 1) {
    m_course.progress.complete(l.slug);
    markCompleted(m_lesson);
  }
  showProblems();
  showPage();
  if (const Step* s = currentStep(); s && s->sweep && s->prediction && !predictionLocked())
    emit sweepToPredict();
}

void LessonDock::showPage() {
  const Lesson& l = m_course.lessons[m_lesson];
  const int steps = int(l.steps.size());
  QString md;
  if (m_page == 0) {
    md = "## " + l.title + "\n\n**" + tr("You will be able to:") + "**\n\n";
    for (const QString& o : l.objectives) md += "- " + o + "\n";
    md += "\n" + l.intro;
    m_pageLabel->setText(tr("Introduction"));
    m_tools->setCurrentIndex(0);
  } else if (const Step* s = currentStep()) {
    md = "### " + tr("Step %1: %2").arg(m_page).arg(s->title) + "\n\n" + s->markdown;
    m_pageLabel->setText(tr("Step %1 of %2").arg(m_page).arg(steps));
    showStepTools(*s);
  } else if (m_page == steps + 1) {
    md = "### " + tr("Retrieval practice") + "\n\n" +
         tr("Answer each question in writing, then compare with the model answer.");
    m_pageLabel->setText(tr("Retrieval practice"));
    m_tools->setCurrentWidget(m_retrieval);
  } else {
    md = "### " + tr("Flashcards");
    m_pageLabel->setText(tr("Flashcards"));
    m_cards->showLesson(l);
    m_tools->setCurrentWidget(m_cards);
  }
  // Only the page shown asks for room: a stacked widget is otherwise as tall and wide as its
  // largest page, and the step tools would stand in the retrieval page's height.
  for (int i = 0; i < m_tools->count(); ++i) {
    const auto policy =
        i == m_tools->currentIndex() ? QSizePolicy::Preferred : QSizePolicy::Ignored;
    m_tools->widget(i)->setSizePolicy(policy, policy);
  }
  m_tools->updateGeometry();
  // Retrieval practice and flashcards are the page's work: they take the height the text (a
  // heading and a line of instructions) leaves; a step's tools keep to the foot of the page.
  const bool practice =
      m_tools->currentWidget() == m_retrieval || m_tools->currentWidget() == m_cards;
  if (auto* column = qobject_cast<QBoxLayout*>(m_text->parentWidget()->layout())) {
    column->setStretch(column->indexOf(m_tools) - 1, practice ? 0 : 1);
    column->setStretchFactor(m_tools, practice ? 1 : 0);
  }
  m_markdown = m_course.glossary.linkMarkdown(md);
  m_text->setMarkdown(m_markdown);
  m_prev->setEnabled(m_page > 0);
  m_next->setEnabled(m_page < pageCount() - 1);
  activateLayouts();  // the page's new proportions now, not at the next event
  fitWrappedLabels();
  pageScroll()->verticalScrollBar()->setValue(0);  // a new page is read from its top
}

void LessonDock::resizeEvent(QResizeEvent* event) {
  QDockWidget::resizeEvent(event);
  fitWrappedLabels();
}

// Markdown takes its link colour from the palette when it is laid out: a page shown before a
// switch to the dark theme would keep the light theme's dark blue links on a near-black page.
void LessonDock::changeEvent(QEvent* event) {
  QDockWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange || !m_text) return;
  const int at = m_text->verticalScrollBar()->value();
  m_text->setMarkdown(m_markdown);
  m_text->verticalScrollBar()->setValue(at);
  showProblems();
  refreshComparison();
}

QWidget* LessonDock::buttonsAnchor() const {
  if (m_tools->currentWidget() != m_step) return nullptr;
  for (QWidget* w : {static_cast<QWidget*>(m_step->lock), static_cast<QWidget*>(m_step->run)})
    if (w->isVisible()) return w;
  return nullptr;
}

// Qt's layouts size a word-wrapped label by a hint taken at some other width (the stack and the
// group boxes pass on minimums, not heights at this width), which cuts the last lines of a step's
// texts in a narrow dock. So each label, then each box, then the stack gets, as its minimum, the
// height it needs at the width it has now; widths do not depend on these heights, so one pass
// settles the page. tst_lessons_dock checks every page of every lesson at 380 px.
// The page's text is as tall as its lines at its width, as a label is: one scroll bar, the
// page's. While a step is open its buttons stay under the pointer (tst_lessons_dock_layout:
// buttonsStayPut): what grew above them is scrolled up by as much.
void LessonDock::fitWrappedLabels(std::optional<int> buttonsWereAt) {
  if (!widget() || !widget()->layout()) return;
  QWidget* anchor = buttonsAnchor();
  const int anchorY =
      buttonsWereAt.value_or(anchor ? anchor->mapTo(this, QPoint()).y() : 0);
  QTextDocument* doc = m_text->document();
  doc->setTextWidth(m_text->width() - 2 * m_text->frameWidth());
  m_text->setFixedHeight(int(std::ceil(doc->size().height())) + 2 * m_text->frameWidth());
  for (QLabel* label : m_step->findChildren<QLabel*>())
    if (label->wordWrap())
      label->setMinimumHeight(label->isVisible() ? label->heightForWidth(label->width()) : 0);
  for (QGroupBox* box : m_step->findChildren<QGroupBox*>()) {
    box->layout()->invalidate();
    box->setMinimumHeight(box->isVisible() ? box->layout()->totalHeightForWidth(box->width()) : 0);
  }
  m_step->layout()->invalidate();
  const bool step = m_tools->currentWidget() == m_step;
  m_tools->setMinimumHeight(step ? m_step->layout()->totalHeightForWidth(m_tools->width())
                                 : 0);
  activateLayouts();
  if (anchor && anchor->isVisible())
    if (const int moved = anchor->mapTo(this, QPoint()).y() - anchorY; moved != 0) {
      QScrollBar* bar = pageScroll()->verticalScrollBar();
      bar->setValue(bar->value() + moved);
    }
}

// The dock's column, then the view's inside it: a layout invalidated below the top one would
// wait for the next event loop pass, and a page would be measured (and drawn) half laid out.
void LessonDock::activateLayouts() {
  widget()->layout()->activate();
  m_lessonView->layout()->activate();
  m_text->parentWidget()->layout()->activate();
  // The scroll area sizes its page when it handles a layout request: now, not at the next pass.
  QEvent request(QEvent::LayoutRequest);
  QCoreApplication::sendEvent(pageScroll(), &request);
  // Where the tools keep their height, the activation above does not reach their own layout:
  // a label that grew would lie below the box until the next pass of the event loop.
  m_step->layout()->activate();
}

}  // namespace paralab
