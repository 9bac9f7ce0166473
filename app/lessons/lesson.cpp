// Loading lessons (lesson.md -> Lesson, one or all), capability checks, and a paragraph as HTML;
// the parser is lesson_parser.h, what a comparison shows is in lesson_measure.cpp. The format is
// documented in lessons/README.md; errors name the file and line. See
// tests/lessons/tst_lessons_format.cpp and tst_lessons.cpp.
#include "lesson.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSet>

#include "glossary.h"
#include "lesson_parser.h"
#include "platform.h"  // dataDir

namespace paralab::lessons {

// [SECTION] Loading a lesson, or all of them.
ParseResult parseLesson(const QString& text, const QString& slug, const QString& path, int cores) {
  return LessonParser(text, slug, path, cores).run();
}

QString lessonsRoot() { return QString::fromStdString(paralab::dataDir("lessons")); }

ParseResult loadLesson(const QString& lessonDir, int cores) {
  const QString path = QDir(lessonDir).filePath("lesson.md");
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    ParseResult r;
    r.errors << path + ": cannot be read (" + f.errorString() + ")";
    return r;
  }
  return parseLesson(QString::fromUtf8(f.readAll()), QDir(lessonDir).dirName(), path, cores);
}

LibraryResult loadLessons(const QString& lessonsRoot, int cores) {
  LibraryResult out;
  const QDir root(lessonsRoot);
  const QStringList dirs =
      root.entryList({"[0-9][0-9]-*"}, QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  if (dirs.isEmpty()) out.errors << lessonsRoot + ": no lesson directories (NN-slug) found";
  for (const QString& d : dirs) {
    ParseResult r = loadLesson(root.filePath(d), cores);
    out.errors << r.errors;
    if (r.lesson) out.lessons << *r.lesson;
  }
  return out;
}

// [SECTION] Capabilities.

QStringList benchKinds() {
  QStringList out;
  for (const std::string& k : jobs::benchKinds()) out << QString::fromStdString(k);
  return out;
}

jobs::BenchValues benchValues(const Bench& bench) {
  jobs::BenchValues out;
  for (auto it = bench.options.begin(); it != bench.options.end(); ++it) {
    const QJsonValue v = it.value();
    SettingValue value;
    if (v.isString())
      value = v.toString().toStdString();
    else if (v.isDouble() && v.toDouble() == double(v.toInteger()))
      value = int64_t(v.toInteger());
    else if (v.isDouble())
      value = v.toDouble();
    else if (v.isBool())
      value = v.toBool();
    else
      value = std::string();  // an array or object: no row takes it, so its check refuses it
    out[it.key().toStdString()] = value;
  }
  return out;
}

double benchOption(const Bench& bench, const QString& key) {
  return jobs::benchRequest(bench.kind.toStdString(), benchValues(bench)).number(key.toStdString());
}

QString benchWord(const Bench& bench, const QString& key) {
  return QString::fromStdString(
      jobs::benchRequest(bench.kind.toStdString(), benchValues(bench)).word(key.toStdString()));
}

QStringList missingNeeds(const QStringList& needs, const QStringList& available) {
  QStringList out;
  for (const QString& n : needs)
    if (!available.contains(n) && !out.contains(n)) out << n;
  return out;
}

QString describeMissing(const QString& need) {
  const QString kind = need.section(':', 0, 0), name = need.section(':', 1);
  if (need == "device:cuda")
    return "needs a CUDA GPU: this machine has none the engine can use (no GPU, no driver, or a "
           "build without CUDA)";
  if (kind == "strategy")
    return QString("needs the engine's '%1' strategy, which this build does not have yet (coming)")
        .arg(name);
  return QString("needs '%1', which this build does not offer").arg(need);
}

QStringList allNeeds(const Lesson& lesson) {
  QStringList out = lesson.needs;
  for (const Step& s : lesson.steps)
    for (const QString& n : s.needs)
      if (!out.contains(n)) out << n;
  return out;
}

// [SECTION] Text: glossary links and a paragraph as HTML.
QStringList glossaryReferences(const QString& markdown) {
  static const QRegularExpression re("\\[\\[([^\\]|]+)(?:\\|[^\\]]*)?\\]\\]");
  QStringList out;
  for (auto it = re.globalMatch(markdown); it.hasNext();) out << it.next().captured(1).trimmed();
  return out;
}

QString paragraphHtml(const QString& text, const Glossary* glossary) {
  static const QRegularExpression code("`([^`]+)`");
  const QString one = text.simplified();
  QList<TermMatch> links;  // the first occurrence of each term
  QSet<QString> linked;
  if (glossary)
    for (const TermMatch& m : glossary->findIn(one))
      if (!linked.contains(m.term)) {
        linked << m.term;
        links << m;
      }
  // one[from, to), escaped, with the links that lie wholly inside it.
  auto plain = [&](int from, int to) {
    QString html;
    int at = from;
    for (const TermMatch& m : links) {
      if (m.start < from || m.start + m.length > to) continue;
      html += one.mid(at, m.start - at).toHtmlEscaped() + "<a href=\"" +
              Glossary::linkTarget(m.term) + "\">" + one.mid(m.start, m.length).toHtmlEscaped() +
              "</a>";
      at = m.start + m.length;
    }
    return html + one.mid(at, to - at).toHtmlEscaped();
  };
  QString html;
  int at = 0;
  for (auto it = code.globalMatch(one); it.hasNext();) {
    const auto m = it.next();
    html +=
        plain(at, int(m.capturedStart())) + "<code>" + m.captured(1).toHtmlEscaped() + "</code>";
    at = int(m.capturedEnd());
  }
  return html + plain(at, int(one.size()));
}

}  // namespace paralab::lessons
