// Glossary parsing and term finding (see glossary.h). See tests/lessons/tst_lessons_glossary.cpp.
#include "glossary.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QUrl>
#include <algorithm>
#include <vector>

namespace paralab::lessons {

Glossary Glossary::parse(const QString& text, QStringList* errors) {
  Glossary g;
  QStringList def;
  auto finish = [&] {
    if (g.m_terms.isEmpty()) return;
    GlossaryTerm& t = g.m_terms.last();
    while (!def.isEmpty() && def.last().trimmed().isEmpty()) def.removeLast();
    while (!def.isEmpty() && def.first().trimmed().isEmpty()) def.removeFirst();
    t.definition = def.join('\n');
    if (t.definition.isEmpty() && errors) *errors << QString("glossary.md:%1: '%2' has no definition").arg(t.line).arg(t.term);
    def.clear();
  };
  const QStringList lines = text.split('\n');
  for (int i = 0; i < lines.size(); ++i) {
    QString line = lines[i];
    if (line.endsWith('\r')) line.chop(1);
    if (line.startsWith("## ")) {
      finish();
      GlossaryTerm t;
      t.term = line.mid(3).trimmed();
      t.line = i + 1;
      if (errors && g.find(t.term))
        *errors << QString("glossary.md:%1: '%2' is defined twice").arg(t.line).arg(t.term);
      g.m_terms << t;
    } else if (!g.m_terms.isEmpty() && def.isEmpty() && line.startsWith("Also:")) {
      for (const QString& a : line.mid(5).split(',', Qt::SkipEmptyParts))
        if (!a.trimmed().isEmpty()) g.m_terms.last().aliases << a.trimmed();
    } else if (!g.m_terms.isEmpty()) {
      def << line;
    }
  }
  finish();
  if (g.m_terms.isEmpty() && errors) *errors << "glossary.md: no terms ('## term' headings)";
  return g;
}

Glossary Glossary::load(const QString& path, QStringList* errors) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    if (errors) *errors << path + ": cannot be read (" + f.errorString() + ")";
    return {};
  }
  return parse(QString::fromUtf8(f.readAll()), errors);
}

namespace {

bool caseSensitive(const QString& s) {
  return std::any_of(s.begin(), s.end(), [](QChar c) { return c.isUpper(); });
}
bool isWordChar(QChar c) { return c.isLetterOrNumber() || c == '_'; }

// Length of `spelling` matched at `pos` in `text` as a whole word, with an optional plural
// -s / -es; 0 when it does not match there.
int matchAt(const QString& text, int pos, const QString& spelling) {
  if (pos > 0 && isWordChar(text[pos - 1])) return 0;
  const Qt::CaseSensitivity cs = caseSensitive(spelling) ? Qt::CaseSensitive : Qt::CaseInsensitive;
  if (QStringView(text).mid(pos, spelling.size()).compare(spelling, cs) != 0) return 0;
  for (const QLatin1String suffix : {QLatin1String("es"), QLatin1String("s"), QLatin1String("")}) {
    const int end = pos + int(spelling.size() + suffix.size());
    if (end > text.size()) continue;
    if (!suffix.isEmpty() && QStringView(text).mid(pos + spelling.size(), suffix.size()).compare(suffix, Qt::CaseInsensitive) != 0)
      continue;
    if (end == text.size() || !isWordChar(text[end])) return end - pos;
  }
  return 0;
}

}  // namespace

const GlossaryTerm* Glossary::find(const QString& name) const {
  const QString n = name.trimmed();
  for (const GlossaryTerm& t : m_terms) {
    QStringList spellings = t.aliases;
    spellings.prepend(t.term);
    for (const QString& s : spellings)
      if (matchAt(n, 0, s) == n.size()) return &t;
  }
  return nullptr;
}

QList<TermMatch> Glossary::findIn(const QString& markdown) const {
  // Spellings, longest first, so "ring all-reduce" wins over "all-reduce" where both start.
  std::vector<std::pair<QString, const GlossaryTerm*>> spellings;
  for (const GlossaryTerm& t : m_terms) {
    spellings.emplace_back(t.term, &t);
    for (const QString& a : t.aliases) spellings.emplace_back(a, &t);
  }
  std::stable_sort(spellings.begin(), spellings.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

  QList<TermMatch> out;
  const QString& s = markdown;
  bool fenced = false;
  bool lineStart = true;
  auto skipLine = [&](int i) {
    const int end = int(s.indexOf('\n', i));
    return end < 0 ? int(s.size()) : end + 1;
  };
  for (int i = 0; i < s.size();) {
    if (lineStart) {
      int j = i;
      while (j < s.size() && s[j] == ' ') ++j;
      if (QStringView(s).mid(j, 3) == u"```" || QStringView(s).mid(j, 3) == u"~~~") {
        fenced = !fenced;  // the fence line itself is code too
        i = skipLine(i);
        continue;
      }
      if (fenced) {
        i = skipLine(i);
        continue;
      }
    }
    if (s[i] == '`') {  // an inline code span: skip to its closing backtick
      const int end = int(s.indexOf('`', i + 1));
      i = end < 0 ? int(s.size()) : end + 1;
      lineStart = false;
      continue;
    }
    int len = 0;
    const GlossaryTerm* hit = nullptr;
    for (const auto& [spelling, term] : spellings)
      if ((len = matchAt(s, i, spelling)) > 0) {
        hit = term;
        break;
      }
    if (hit) {
      out << TermMatch{hit->term, i, len};
      i += len;
      lineStart = false;
      continue;
    }
    lineStart = s[i] == '\n';
    ++i;
  }
  return out;
}

QString Glossary::linkMarkdown(const QString& markdown) const {
  // [[term]] and [[term|words]] become links; then the first plain occurrence of every other
  // glossary term. A link's target is glossary:<term>; hovering it shows the definition.
  auto link = [](const QString& shown, const QString& term) {
    return QString("[%1](%2)").arg(shown, linkTarget(term));
  };
  static const QRegularExpression ref("\\[\\[([^\\]|]+)(?:\\|([^\\]]*))?\\]\\]");
  QString md;
  QSet<QString> linked;
  int at = 0;
  for (auto it = ref.globalMatch(markdown); it.hasNext();) {
    const auto m = it.next();
    const GlossaryTerm* t = find(m.captured(1));
    const QString shown = m.captured(2).isEmpty() ? m.captured(1) : m.captured(2);
    md += markdown.mid(at, m.capturedStart() - at) + (t ? link(shown, t->term) : shown);
    if (t) linked << t->term;
    at = int(m.capturedEnd());
  }
  md += markdown.mid(at);
  QList<TermMatch> firsts;
  for (const TermMatch& m : findIn(md)) {
    if (linked.contains(m.term)) continue;
    // Inside a link made above ("[words](glossary:...)"): a '[' opened before it and not closed.
    if (md.lastIndexOf('[', m.start) > md.lastIndexOf(']', m.start)) continue;
    if (md.lastIndexOf("(glossary:", m.start) > md.lastIndexOf(')', m.start)) continue;
    // Not in a heading (a link there would lose the heading's weight) nor in `code`.
    const int lineStart = int(md.lastIndexOf('\n', m.start)) + 1;
    if (md.mid(lineStart, 1) == "#") continue;
    if (md.mid(lineStart, m.start - lineStart).count('`') % 2 == 1) continue;
    linked << m.term;
    firsts << m;
  }
  for (int i = int(firsts.size()) - 1; i >= 0; --i)
    md.replace(firsts[i].start, firsts[i].length,
               link(md.mid(firsts[i].start, firsts[i].length), firsts[i].term));
  return md;
}

QString Glossary::linkTarget(const QString& term) {
  return "glossary:" + QString::fromLatin1(QUrl::toPercentEncoding(term));
}

QString Glossary::tooltip(const QString& link) const {
  const QUrl url(link);
  if (url.scheme() != "glossary") return {};
  const GlossaryTerm* t = find(url.path());
  return t ? "<b>" + t->term.toHtmlEscaped() + "</b><br>" + t->definition.toHtmlEscaped()
           : QString();
}

}  // namespace paralab::lessons
