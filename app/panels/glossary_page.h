// GlossaryPage: the lessons panel's glossary to browse — every term of lessons/glossary.md in
// alphabetical order with its definition, a filter box, and under each term links to the lesson
// pages that use it (found by Glossary::findIn, the matcher that makes the hover links); a click
// opens that lesson at that page. See tests/lessons/tst_lessons_dock.cpp (glossary*).
#pragma once
#include <QHash>
#include <QList>
#include <QUrl>
#include <QWidget>

#include "glossary.h"
#include "lesson.h"

class QLabel;
class QLineEdit;
class QTextBrowser;

namespace paralab {

// The hover of a glossary link: `link`'s term and definition (Glossary::tooltip) beside the
// pointer over `over`, or no tooltip when `link` is not a glossary link. What every text of the
// lessons panel with glossary links calls on its linkHovered / highlighted.
void showGlossaryTip(const lessons::Glossary& glossary, const QString& link, QWidget* over);

class GlossaryPage : public QWidget {
  Q_OBJECT
 public:
  // A page of a lesson: 0 its introduction, 1..n its steps (as LessonDock numbers them).
  struct Use {
    int lesson = 0;
    int page = 0;
    bool operator==(const Use&) const = default;
  };
  // `glossary` and `lessons` are the dock's and outlive the page.
  GlossaryPage(const lessons::Glossary& glossary, const QList<lessons::Lesson>& lessons,
               QWidget* parent = nullptr);

  // The terms listed now, in order (all of them, or those the filter keeps).
  QStringList shownTerms() const { return m_shown; }
  // The pages that use `term` (its name as the glossary writes it), lesson by lesson.
  QList<Use> uses(const QString& term) const { return m_uses.value(term); }
  // The link under a term that opens `use`.
  QUrl link(const Use& use) const;
  void setFilter(const QString& text);

 signals:
  void openPage(int lesson, int page);
  void back();  // "Back to the lesson" pressed

 protected:
  void changeEvent(QEvent* event) override;  // a new theme: links in its colour

 private:
  void indexUses();
  void render();

  const lessons::Glossary& m_glossary;
  const QList<lessons::Lesson>& m_lessons;
  QHash<QString, QList<Use>> m_uses;  // term -> pages, in lesson and page order
  QStringList m_shown;
  QLineEdit* m_filter = nullptr;
  QLabel* m_count = nullptr;
  QTextBrowser* m_text = nullptr;
};

}  // namespace paralab
