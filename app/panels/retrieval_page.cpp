// RetrievalPage: a lesson's questions, answered in writing before the model answer shows (see
// retrieval_page.h). See tests/lessons/tst_lessons_dock.cpp.
#include "panels/retrieval_page.h"

#include <QGroupBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "panels/glossary_page.h"

namespace paralab {

using namespace paralab::lessons;

RetrievalPage::RetrievalPage(Progress& progress, const Glossary& glossary, QWidget* parent)
    : QScrollArea(parent), m_progress(progress), m_glossary(glossary) {
  setObjectName("lessonRetrieval");
  m_page = new QWidget;
  m_questions = new QVBoxLayout(m_page);
  m_questions->setContentsMargins(0, 0, 0, 0);
  setWidget(m_page);
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
}

void RetrievalPage::showLesson(const Lesson& l) {
  while (QLayoutItem* item = m_questions->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  const LessonProgress p = m_progress.lesson(l.slug);
  for (int i = 0; i < l.retrieval.size(); ++i) {
    // The question in a wrapping label: a QGroupBox title does not wrap, and a long question
    // would hold the whole dock at its width.
    auto* box = new QGroupBox(m_page);
    auto* bv = new QVBoxLayout(box);
    // Written over several lines in lesson.md; one paragraph here, wrapped to the dock.
    auto* question =
        new QLabel(QString("%1. %2").arg(i + 1).arg(paragraphHtml(l.retrieval[i].q)), box);
    question->setTextFormat(Qt::RichText);
    question->setObjectName("lessonQuestion");
    question->setWordWrap(true);
    question->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = question->font();
    bold.setBold(true);
    question->setFont(bold);
    bv->addWidget(question);
    auto* edit = new QPlainTextEdit(p.answers.value(i), box);
    edit->setPlaceholderText(tr("Write your answer first…"));
    edit->setFixedHeight(4 * edit->fontMetrics().lineSpacing());  // a few lines; it scrolls
    auto* answer = new QLabel(box);
    answer->setWordWrap(true);
    answer->setTextFormat(Qt::RichText);
    answer->setObjectName("lessonModelAnswer");
    answer->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::TextSelectableByMouse);
    connect(answer, &QLabel::linkHovered, this,
            [this, answer](const QString& link) { showGlossaryTip(m_glossary, link, answer); });
    answer->hide();  // until revealed: an empty label would still take a line
    auto* reveal = new QPushButton(tr("Show the model answer"), box);
    reveal->setEnabled(!edit->toPlainText().trimmed().isEmpty());
    connect(edit, &QPlainTextEdit::textChanged, reveal,
            [edit, reveal] { reveal->setEnabled(!edit->toPlainText().trimmed().isEmpty()); });
    const QString slug = l.slug, a = paragraphHtml(l.retrieval[i].a, &m_glossary);
    connect(reveal, &QPushButton::clicked, this, [this, slug, i, edit, answer, a] {
      m_progress.setAnswer(slug, i, edit->toPlainText());
      emit saved();
      answer->setText(a);
      answer->show();
    });
    bv->addWidget(edit);
    bv->addWidget(reveal);
    bv->addWidget(answer);
    m_questions->addWidget(box);
  }
  m_questions->addStretch();
}

}  // namespace paralab
