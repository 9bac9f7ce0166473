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

namespace paralab::lessons {

// [SECTION] Loading a lesson, or all of them.
ParseResult parseLesson(const QString& text, const QString& slug, const QString& path, int cores) {
  return LessonParser(text, slug, path, cores).run();
}

QString lessonsRoot() {
  const QString env = qEnvironmentVariable("PARALAB_LESSONS_DIR");
  if (!env.isEmpty()) return env;
#ifdef PARALAB_LESSONS_DIR
  return QStringLiteral(PARALAB_LESSONS_DIR);
#else
  return QStringLiteral("lessons");
#endif
}

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
  return {"gemm-ladder", "simd-width", "false-sharing", "latency", "roofline", "layouts"};
}

QList<BenchOption> benchOptions(const QString& kind) {
  if (kind == "gemm-ladder")
    return {{"size", 16, 2048, 512}, {"threads", 0, 64, 0}, {"repeats", 1, 20, 3}};
  if (kind == "simd-width") return {{"repeats", 1, 20, 5}};
  if (kind == "false-sharing") return {{"threads", 0, 8, 0}, {"increments", 1000, 1e8, 2e6}};
  if (kind == "latency")
    return {{"model", 0, 0, 0, {"mlp", "gpt"}},
            {"max-batch", 1, 4096, 1024},
            {"hidden", 16, 1024, 128},
            {"layers", 1, 8, 2},
            {"seq", 1, 1024, 64},
            {"heads", 1, 64, 4}};
  if (kind == "roofline")
    return {{"precision", 0, 0, 0, {"fp32", "tf32"}},
            {"max-batch", 2, 4096, 4096},
            {"hidden", 16, 1024, 128},
            {"layers", 1, 8, 2},
            {"repeats", 1, 20, 5}};
  if (kind == "layouts")
    return {{"gpu", 0, 0, 0, {"h100-sxm", "a100-80gb", "h200"}},
            {"node-link", 0, 0, 0, {"infiniband", "ethernet"}},
            {"recompute", 0, 0, 0, {"selective", "full", "none"}},
            {"gpus", 8, 16384, 512},
            {"layers", 1, 256, 80},
            {"hidden", 64, 65536, 8192},
            {"heads", 1, 512, 64},
            {"seq", 1, 131072, 4096},
            {"vocab", 2, 1000000, 32000},
            {"batch", 1, 1000000, 1024},
            {"pp", 1, 128, 8},
            {"min-tp", 1, 64, 8},
            {"max-tp", 1, 64, 16}};
  return {};
}

double benchOption(const Bench& bench, const QString& key) {
  for (const BenchOption& o : benchOptions(bench.kind))
    if (o.key == key) return bench.options.value(key).toDouble(o.fallback);
  return 0;
}

QString benchWord(const Bench& bench, const QString& key) {
  for (const BenchOption& o : benchOptions(bench.kind))
    if (o.key == key && !o.words.isEmpty())
      return bench.options.value(key).toString(o.words.first());
  return QString();
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
