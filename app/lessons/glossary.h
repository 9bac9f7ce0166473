// Glossary: the terms of lessons/glossary.md and their definitions, and where they occur in a
// lesson's text (what the lesson view underlines and explains on hover).
// See tests/lessons/tst_lessons_glossary.cpp.
#pragma once
#include <QList>
#include <QString>
#include <QStringList>

namespace paralab::lessons {

struct GlossaryTerm {
  QString term;         // as its heading writes it, e.g. "all-reduce", "ZeRO"
  QStringList aliases;  // other spellings ("allreduce"); plurals in -s/-es match by themselves
  QString definition;   // Markdown
  int line = 0;
};

// One occurrence of a term in a text.
struct TermMatch {
  QString term;  // the glossary's spelling
  int start = 0;
  int length = 0;
};

class Glossary {
 public:
  // Parses glossary.md: "## term", an optional "Also: alias, alias" line, then the definition.
  static Glossary parse(const QString& text, QStringList* errors = nullptr);
  static Glossary load(const QString& path, QStringList* errors = nullptr);

  const QList<GlossaryTerm>& terms() const { return m_terms; }
  // The term whose name or alias is `name` (matched as findIn matches), or nullptr.
  const GlossaryTerm* find(const QString& name) const;
  // Every occurrence in `markdown`, left to right, not overlapping, longest term first where
  // two start together. Whole words only; a term or alias with a capital letter ("ZeRO",
  // "NVLink") matches only as written, an all-lowercase one in any case. Code (`inline` and
  // fenced) is skipped: a flag like `--zero` is not the term.
  QList<TermMatch> findIn(const QString& markdown) const;
  // `markdown` with its glossary terms as links to "glossary:<term>" (the lesson view shows
  // the definition on hover): every [[term]] and [[term|words]], then the first plain
  // occurrence of each other term, not in a heading, in code or inside a link.
  QString linkMarkdown(const QString& markdown) const;
  // What a link to "glossary:<term>" (from linkMarkdown or paragraphHtml) shows on hover: the
  // term in bold and its definition, as rich text; empty for any other link.
  QString tooltip(const QString& link) const;
  // A term's link target, "glossary:<term>" percent-encoded.
  static QString linkTarget(const QString& term);

 private:
  QList<GlossaryTerm> m_terms;
};

}  // namespace paralab::lessons
