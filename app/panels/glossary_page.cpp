// GlossaryPage: the glossary to browse and filter, each term linked to the lesson pages that
// use it (see glossary_page.h). See tests/lessons/tst_lessons_dock.cpp (glossary*).
#include "panels/glossary_page.h"

#include <QCursor>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QTextBrowser>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

namespace paralab {

using namespace paralab::lessons;

void showGlossaryTip(const Glossary& glossary, const QString& link, QWidget* over) {
  const QString tip = glossary.tooltip(link);
  if (tip.isEmpty()) return QToolTip::hideText();
  QToolTip::showText(QCursor::pos(), tip, over);
}

GlossaryPage::GlossaryPage(const Glossary& glossary, const QList<Lesson>& lessons, QWidget* parent)
    : QWidget(parent), m_glossary(glossary), m_lessons(lessons) {
  setObjectName("lessonGlossary");
  auto* title = new QLabel("<h3>" + tr("Glossary") + "</h3>", this);
  m_count = new QLabel(this);
  m_count->setObjectName("glossaryCount");
  m_filter = new QLineEdit(this);
  m_filter->setObjectName("glossaryFilter");
  m_filter->setPlaceholderText(tr("Filter: a term or part of one"));
  m_filter->setClearButtonEnabled(true);
  connect(m_filter, &QLineEdit::textChanged, this, [this] { render(); });
  m_text = new QTextBrowser(this);
  m_text->setObjectName("glossaryText");
  m_text->setOpenLinks(false);
  connect(m_text, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() != "lesson") return;
    const int lesson = int(std::find_if(m_lessons.begin(), m_lessons.end(),
                                        [&](const Lesson& l) { return l.slug == url.host(); }) -
                           m_lessons.begin());
    const int page = url.path().mid(1).toInt();
    if (lesson < m_lessons.size()) emit openPage(lesson, page);
  });
  // A step's number is all the link shows: its title comes on hover.
  connect(m_text, &QTextBrowser::highlighted, this, [this](const QUrl& url) {
    for (const Lesson& l : m_lessons) {
      const int page = url.path().mid(1).toInt();
      if (url.scheme() != "lesson" || l.slug != url.host()) continue;
      if (page >= 1 && page <= l.steps.size())
        return QToolTip::showText(QCursor::pos(),
                                  tr("Step %1: %2").arg(page).arg(l.steps[page - 1].title), m_text);
    }
    QToolTip::hideText();
  });
  auto* backButton = new QPushButton(tr("◀ Back to the lesson"), this);
  backButton->setObjectName("glossaryBack");
  connect(backButton, &QPushButton::clicked, this, &GlossaryPage::back);
  auto* head = new QHBoxLayout;
  head->addWidget(title);
  head->addStretch();
  head->addWidget(m_count);
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->addLayout(head);
  column->addWidget(m_filter);
  column->addWidget(m_text, 1);
  column->addWidget(backButton, 0, Qt::AlignLeft);
  indexUses();
  render();
}

// Which pages use which term: the same findIn that makes a page's hover links, over the page's
// heading and text, so a page listed here is a page where the term is (or could be) a link.
void GlossaryPage::indexUses() {
  for (int l = 0; l < m_lessons.size(); ++l) {
    const Lesson& lesson = m_lessons[l];
    QStringList pages = {lesson.title + "\n\n" + lesson.objectives.join('\n') + "\n\n" +
                         lesson.intro};
    for (const Step& s : lesson.steps) pages << s.title + "\n\n" + s.markdown;
    for (int p = 0; p < pages.size(); ++p) {
      QSet<QString> terms;
      for (const TermMatch& m : m_glossary.findIn(pages[p])) terms << m.term;
      for (const QString& t : terms) m_uses[t] << Use{l, p};
    }
  }
}

QUrl GlossaryPage::link(const Use& use) const {
  return QUrl(QString("lesson://%1/%2").arg(m_lessons[use.lesson].slug).arg(use.page));
}

void GlossaryPage::setFilter(const QString& text) { m_filter->setText(text); }

void GlossaryPage::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_text) render();
}

// The terms the filter keeps (a part of the term or of one of its other spellings, in any case),
// A to Z, each as a heading, its definition, and the pages using it lesson by lesson:
// "2. Amdahl's law: introduction, step 1, 3".
void GlossaryPage::render() {
  const QString filter = m_filter->text().trimmed();
  QList<const GlossaryTerm*> terms;
  for (const GlossaryTerm& t : m_glossary.terms()) {
    const bool keep = filter.isEmpty() || t.term.contains(filter, Qt::CaseInsensitive) ||
                      std::any_of(t.aliases.begin(), t.aliases.end(), [&](const QString& a) {
                        return a.contains(filter, Qt::CaseInsensitive);
                      });
    if (keep) terms << &t;
  }
  std::sort(terms.begin(), terms.end(), [](const GlossaryTerm* a, const GlossaryTerm* b) {
    return QString::localeAwareCompare(a->term.toLower(), b->term.toLower()) < 0;
  });
  m_shown.clear();
  QString md;
  for (const GlossaryTerm* t : terms) {
    m_shown << t->term;
    md += "#### " + t->term + "\n\n";
    if (!t->aliases.isEmpty()) md += "*" + tr("Also: %1").arg(t->aliases.join(", ")) + "*\n\n";
    md += t->definition + "\n\n";
    const QList<Use> uses = m_uses.value(t->term);
    if (uses.isEmpty()) continue;
    QStringList lessons;
    for (int i = 0; i < uses.size();) {
      const Lesson& l = m_lessons[uses[i].lesson];
      QStringList pages;
      for (; i < uses.size() && &m_lessons[uses[i].lesson] == &l; ++i) {
        const QString shown = uses[i].page == 0 ? tr("introduction")
                              : pages.isEmpty() || pages.last().startsWith('[' + tr("intro"))
                                  ? tr("step %1").arg(uses[i].page)
                                  : QString::number(uses[i].page);
        pages << "[" + shown + "](" + link(uses[i]).toString() + ")";
      }
      // "11\." : not the start of a numbered list inside the bullet.
      lessons << QString("%1\\. %2: %3").arg(l.number).arg(l.title, pages.join(", "));
    }
    md += "*" + tr("Used in:") + "*\n\n";
    for (const QString& line : lessons) md += "- " + line + "\n";
    md += "\n";
  }
  if (terms.isEmpty()) md = tr("No term contains “%1”.").arg(filter);
  m_text->setMarkdown(md);
  m_count->setText(filter.isEmpty()
                       ? tr("%1 terms").arg(terms.size())
                       : tr("%1 of %2").arg(terms.size()).arg(m_glossary.terms().size()));
}

}  // namespace paralab
