// Lesson parsing (lesson.md -> Lesson), capability checks, and a paragraph as HTML; what a
// comparison shows is in lesson_measure.cpp. The format is documented in lessons/README.md;
// errors name the file and line. See tests/lessons/tst_lessons_format.cpp and tst_lessons.cpp.
#include "lesson.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <cmath>

#include "formula.h"
#include "glossary.h"
#include "train/sweep.h"

namespace paralab::lessons {

namespace {

// [SECTION] Small helpers.

QStringList parseList(QString v) {
  v = v.trimmed();
  if (v.startsWith('[') && v.endsWith(']')) v = v.mid(1, v.size() - 2);
  QStringList out;
  for (const QString& s : v.split(',', Qt::SkipEmptyParts))
    if (!s.trimmed().isEmpty()) out << s.trimmed();
  return out;
}

QString trimBlankLines(const QStringList& lines) {
  int b = 0, e = int(lines.size());
  while (b < e && lines[b].trimmed().isEmpty()) ++b;
  while (e > b && lines[e - 1].trimmed().isEmpty()) --e;
  return lines.mid(b, e - b).join('\n');
}

// The keys of `o` that are not in `allowed`, as one message ("" when none).
QString unknownKeys(const QJsonObject& o, const QStringList& allowed) {
  QStringList bad;
  for (const QString& k : o.keys())
    if (!allowed.contains(k)) bad << "'" + k + "'";
  if (bad.isEmpty()) return {};
  return QString("unknown key %1 (allowed: %2)").arg(bad.join(", "), allowed.join(", "));
}

bool isInt(const QJsonValue& v) { return v.isDouble() && v.toDouble() == double(v.toInteger()); }

// [SECTION] The parser.

class LessonParser {
 public:
  LessonParser(const QString& text, const QString& slug, const QString& path, int cores)
      : m_lines(text.split('\n')),
        m_where(path.isEmpty() ? slug + "/lesson.md" : path),
        m_cores(cores > 0 ? cores : machineCores()) {
    m_lesson.slug = slug;
    m_lesson.path = path;
    static const QRegularExpression nn("^(\\d+)-");
    const auto m = nn.match(slug);
    if (m.hasMatch()) m_lesson.number = m.captured(1).toInt();
    for (QString& l : m_lines)
      if (l.endsWith('\r')) l.chop(1);
  }

  ParseResult run() {
    int body = frontMatter();
    if (body >= 0) this->body(body);
    ParseResult r;
    r.errors = m_errors;
    if (m_errors.isEmpty()) r.lesson = m_lesson;
    return r;
  }

 private:
  enum class Section { Intro, Step, Retrieval, Cards };

  void error(int line, const QString& what) { m_errors << QString("%1:%2: %3").arg(m_where).arg(line).arg(what); }

  // Returns the index of the first body line, or -1 when the front matter is unusable.
  int frontMatter() {
    if (m_lines.isEmpty() || m_lines[0].trimmed() != "---") {
      error(1, "a lesson starts with front matter: a line '---', then title, minutes, objectives, needs, then '---'");
      return -1;
    }
    int i = 1;
    QString listKey;  // the key whose "  - item" lines follow
    bool closed = false;
    for (; i < m_lines.size(); ++i) {
      const QString raw = m_lines[i];
      const QString line = raw.trimmed();
      if (line == "---") {
        closed = true;
        ++i;
        break;
      }
      if (line.isEmpty() || line.startsWith('#')) continue;
      if (line.startsWith("- ")) {
        if (listKey.isEmpty()) error(i + 1, "a '- item' line must follow 'objectives:' or 'needs:'");
        else (listKey == "objectives" ? m_lesson.objectives : m_lesson.needs) << line.mid(2).trimmed();
        continue;
      }
      const int colon = line.indexOf(':');
      if (colon <= 0) {
        error(i + 1, QString("expected 'key: value' in the front matter, got '%1'").arg(line));
        continue;
      }
      const QString key = line.left(colon).trimmed();
      const QString value = line.mid(colon + 1).trimmed();
      listKey.clear();
      if (key == "title") {
        m_lesson.title = value;
      } else if (key == "minutes") {
        bool ok = false;
        m_lesson.minutes = value.toInt(&ok);
        if (!ok || m_lesson.minutes <= 0) error(i + 1, "minutes: expected a positive whole number of minutes");
      } else if (key == "objectives" || key == "needs") {
        if (value.isEmpty()) listKey = key;
        else (key == "objectives" ? m_lesson.objectives : m_lesson.needs) << parseList(value);
      } else {
        error(i + 1, QString("unknown front-matter key '%1' (allowed: title, minutes, objectives, needs)").arg(key));
      }
    }
    if (!closed) {
      error(1, "the front matter is not closed by a line '---'");
      return -1;
    }
    if (m_lesson.title.isEmpty()) error(1, "front matter: 'title' is missing");
    if (m_lesson.minutes == 0) error(1, "front matter: 'minutes' is missing");
    if (m_lesson.objectives.isEmpty()) error(1, "front matter: 'objectives' is missing (a list)");
    checkNeeds(2, m_lesson.needs);
    return i;
  }

  void checkNeeds(int line, const QStringList& needs) {
    static const QRegularExpression re("^(strategy|device):[a-z0-9-]+$");
    for (const QString& n : needs)
      if (!re.match(n).hasMatch()) error(line, QString("need '%1' is not 'strategy:NAME' or 'device:NAME'").arg(n));
  }

  void body(int first) {
    Section section = Section::Intro;
    QStringList text;      // Markdown lines of the current intro or step
    bool wantNeeds = false;  // the line after a step heading may be "needs: ..."
    Card* card = nullptr;
    bool inAnswer = false;
    QString fence;           // the open fence's marker (``` or ~~~), "" when none
    QString block;           // the kind of the open special block, "" when an ordinary fence
    int blockLine = 0;
    QStringList blockLines;

    auto finishText = [&] {
      if (section == Section::Intro) m_lesson.intro = trimBlankLines(text);
      else if (section == Section::Step) {
        m_lesson.steps.last().markdown = trimBlankLines(text);
        finishStep(m_lesson.steps.last());
      }
      text.clear();
    };

    for (int i = first; i < m_lines.size(); ++i) {
      const QString& raw = m_lines[i];
      const QString line = raw.trimmed();
      const int ln = i + 1;
      // Inside a fence: collect until it closes.
      if (!fence.isEmpty()) {
        if (line == fence) {
          fence.clear();
          if (!block.isEmpty()) takeBlock(block, blockLine, blockLines, section);
          else text << raw;
          block.clear();
        } else if (!block.isEmpty()) {
          blockLines << raw;
        } else {
          text << raw;
        }
        continue;
      }
      if (line.startsWith("```") || line.startsWith("~~~")) {
        fence = line.left(3);
        const QString info = line.mid(3).trimmed();
        static const QStringList kinds = {"experiment", "sweep", "prediction", "compare", "bench"};
        if (kinds.contains(info)) {
          block = info;
          blockLine = ln;
          blockLines.clear();
          if (section != Section::Step) error(ln, QString("a ```%1 block belongs inside a '## Step:'").arg(info));
        } else {
          text << raw;
        }
        wantNeeds = false;
        continue;
      }
      if (raw.startsWith("# ")) {
        error(ln, "no '# ' headings: the title comes from the front matter; steps are '## Step: title'");
        continue;
      }
      if (raw.startsWith("## ")) {
        finishText();
        const QString heading = raw.mid(3).trimmed();
        card = nullptr;
        if (heading.startsWith("Step:")) {
          if (section == Section::Retrieval || section == Section::Cards)
            error(ln, "steps come before '## Retrieval practice' and '## Flashcards'");
          section = Section::Step;
          Step s;
          s.title = heading.mid(5).trimmed();
          s.line = ln;
          if (s.title.isEmpty()) error(ln, "a step needs a title: '## Step: title'");
          // The title is the key of the learner's progress on the step (progress.h).
          for (const Step& other : m_lesson.steps)
            if (!s.title.isEmpty() && other.title == s.title)
              error(ln, QString("step title '%1' is also the title of the step on line %2 (a "
                                "step's title is unique in its lesson)")
                            .arg(s.title)
                            .arg(other.line));
          m_lesson.steps << s;
          wantNeeds = true;
        } else if (heading == "Retrieval practice") {
          section = Section::Retrieval;
        } else if (heading == "Flashcards") {
          section = Section::Cards;
        } else {
          error(ln, QString("'## %1': a '## ' heading is 'Step: title', 'Retrieval practice' or 'Flashcards' "
                            "(use '### ' inside a step)").arg(heading));
        }
        continue;
      }
      if (section == Section::Retrieval || section == Section::Cards) {
        QList<Card>& list = section == Section::Retrieval ? m_lesson.retrieval : m_lesson.cards;
        if (line.startsWith("Q:")) {
          list << Card{line.mid(2).trimmed(), QString(), ln};
          card = &list.last();
          inAnswer = false;
        } else if (line.startsWith("A:")) {
          if (!card || inAnswer) error(ln, "'A:' must follow a 'Q:'");
          else {
            card->a = line.mid(2).trimmed();
            inAnswer = true;
          }
        } else if (!line.isEmpty()) {
          if (!card) error(ln, "text in this section belongs to a 'Q:' or an 'A:'");
          else {
            QString& field = inAnswer ? card->a : card->q;
            field += (field.isEmpty() || field.endsWith('\n') ? "" : "\n") + line;
          }
        } else if (card) {
          QString& field = inAnswer ? card->a : card->q;
          if (!field.isEmpty() && !field.endsWith("\n\n")) field += "\n\n";
        }
        continue;
      }
      if (wantNeeds && !line.isEmpty()) {
        wantNeeds = false;
        if (line.startsWith("needs:")) {
          m_lesson.steps.last().needs = parseList(line.mid(6));
          checkNeeds(ln, m_lesson.steps.last().needs);
          continue;
        }
      }
      text << raw;
    }
    if (!fence.isEmpty()) error(blockLine ? blockLine : int(m_lines.size()), "a fenced block is not closed");
    finishText();
    for (QList<Card>* list : {&m_lesson.retrieval, &m_lesson.cards})
      for (Card& c : *list) {
        c.q = c.q.trimmed();
        c.a = c.a.trimmed();
        if (c.a.isEmpty()) error(c.line, "this 'Q:' has no 'A:'");
      }
    if (m_lesson.steps.isEmpty()) error(int(m_lines.size()), "a lesson has at least one '## Step: title'");
    if (m_lesson.retrieval.isEmpty()) error(int(m_lines.size()), "'## Retrieval practice' with Q:/A: pairs is missing");
    if (m_lesson.cards.isEmpty()) error(int(m_lines.size()), "'## Flashcards' with Q:/A: pairs is missing");
  }

  // [SECTION] The blocks of a step: experiment, sweep, prediction, compare, bench.
  void takeBlock(const QString& kind, int line, const QStringList& lines, Section section) {
    if (section != Section::Step) return;  // reported when the fence opened
    Step& step = m_lesson.steps.last();
    QJsonParseError pe;
    const QByteArray bytes = lines.join('\n').toUtf8();
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
      const int at = pe.error != QJsonParseError::NoError ? int(bytes.left(pe.offset).count('\n')) + 1 : 1;
      error(line + at, QString("%1: not a JSON object (%2)")
                           .arg(kind, pe.error != QJsonParseError::NoError ? pe.errorString() : "expected { ... }"));
      return;
    }
    const QJsonObject o = doc.object();
    auto dup = [&](bool present) {
      if (present) error(line, QString("a step has at most one ```%1 block").arg(kind));
      return present;
    };
    auto bad = [&](const QString& what) { error(line, kind + ": " + what); };
    if (kind == "experiment") {
      if (dup(step.experiment.has_value())) return;
      step.experiment = o;
    } else if (kind == "sweep") {
      if (dup(step.sweep.has_value())) return;
      if (const QString u = unknownKeys(o, {"ranks", "steps", "warmup"}); !u.isEmpty()) bad(u);
      Sweep s;
      s.line = line;
      const QJsonValue ranks = o.value("ranks");
      if (ranks.isString()) {  // sized to the machine
        const auto sized = coresSizedRanks(ranks.toString().toStdString(), m_cores);
        if (!sized)
          bad(QString("'ranks' is '%1', not a sizing: allowed \"cores\" (1, 2, 4, ... up to the "
                      "machine's cores) or \"2*cores\" .. \"8*cores\" (on past them)")
                  .arg(ranks.toString()));
        for (int n : sized.value_or(std::vector<int>{})) s.ranks << n;
        s.sizedTo = ranks.toString();
        s.cores = m_cores;
      }
      for (const QJsonValue& v : ranks.toArray()) {
        if (!isInt(v) || v.toInt() < 1) bad("'ranks' holds whole numbers of ranks, 1 or more");
        s.ranks << v.toInt();
      }
      if (s.ranks.isEmpty() && !ranks.isString())
        bad("'ranks' is missing: a list such as [1, 2, 4, 8], or \"cores\"");
      if (!std::is_sorted(s.ranks.begin(), s.ranks.end())) bad("'ranks' must be in increasing order");
      s.steps = o.value("steps").toInt(s.steps);
      s.warmup = o.value("warmup").toInt(s.warmup);
      if (s.steps < 1 || s.warmup < 0) bad("'steps' must be 1 or more and 'warmup' 0 or more");
      step.sweep = s;
    } else if (kind == "prediction") {
      if (dup(step.prediction.has_value())) return;
      if (o.contains("choices")) {
        step.prediction = choicePrediction(o, bad);
        step.prediction->line = line;
        return;
      }
      if (const QString u = unknownKeys(o, {"ask", "formula", "inputs", "unit", "reasoning", "expect"}); !u.isEmpty())
        bad(u);
      Prediction p;
      p.line = line;
      p.ask = o.value("ask").toString();
      p.formula = o.value("formula").toString();
      p.inputs = o.value("inputs").toObject();
      p.unit = o.value("unit").toString();
      p.reasoning = o.value("reasoning").toString();
      if (o.contains("expect")) {
        if (!o.value("expect").isDouble()) bad("'expect' is the number the text states");
        p.expect = o.value("expect").toDouble();
      }
      if (p.ask.isEmpty()) bad("'ask' is missing: the question the learner answers with a number");
      if (!o.contains("unit") || !o.value("unit").isString()) bad("'unit' is missing (\"\" for a pure number)");
      const Formula f(p.formula);
      if (p.formula.isEmpty()) bad("'formula' is missing");
      else if (!f.isValid()) bad("formula '" + p.formula + "': " + f.error());
      for (const QString& v : f.variables())
        if (!p.inputs.contains(v)) bad(QString("formula uses '%1' but 'inputs' does not give it").arg(v));
      for (const QString& k : p.inputs.keys()) {
        const QJsonValue v = p.inputs.value(k);
        if (!v.isDouble() && !(v.isString() && v.toString().startsWith('$')))
          bad(QString("input '%1' is a number or \"$flag\" (a key of the step's experiment)").arg(k));
        if (f.isValid() && !f.variables().contains(k)) bad(QString("input '%1' is not used by the formula").arg(k));
      }
      step.prediction = p;
    } else if (kind == "compare") {
      if (dup(step.compare.has_value())) return;
      if (const QString u = unknownKeys(o, {"metric", "over", "warmup", "unit", "explain"}); !u.isEmpty()) bad(u);
      Compare c;
      c.line = line;
      c.metric = o.value("metric").toString();
      c.over = o.value("over").toString("last");
      c.warmup = o.value("warmup").toInt(c.warmup);
      c.unit = o.value("unit").toString();
      c.explain = o.value("explain").toString();
      const Formula f(c.metric);
      if (c.metric.isEmpty()) bad("'metric' is missing (a metric of lessons/reference/metrics.md)");
      else if (!f.isValid()) bad("metric '" + c.metric + "': " + f.error());
      if (c.over != "first" && c.over != "last" && c.over != "median" && c.over != "mean")
        bad("'over' is one of first, last, median, mean");
      if (c.explain.isEmpty()) bad("'explain' is missing: why prediction and measurement differ");
      step.compare = c;
    } else if (kind == "bench") {
      if (dup(step.bench.has_value())) return;
      Bench b;
      b.line = line;
      if (o.contains("program")) {  // a table named, not run here
        if (const QString u = unknownKeys(o, {"program", "args"}); !u.isEmpty()) bad(u);
        b.program = o.value("program").toString();
        for (const QJsonValue& v : o.value("args").toArray()) b.args << v.toVariant().toString();
        step.bench = b;
        return;
      }
      b.kind = o.value("kind").toString();
      if (!benchKinds().contains(b.kind))
        return bad(QString("'kind' is %1 (allowed: %2)")
                       .arg(b.kind.isEmpty() ? "missing" : "'" + b.kind + "', not a benchmark",
                            benchKinds().join(", ")));
      QStringList keys{"kind"};
      for (const BenchOption& opt : benchOptions(b.kind)) {
        keys << opt.key;
        if (!o.contains(opt.key)) continue;
        const QJsonValue v = o.value(opt.key);
        if (!opt.words.isEmpty()) {
          if (!opt.words.contains(v.toString()))
            bad(QString("'%1' of %2 is one of %3").arg(opt.key, b.kind, opt.words.join(", ")));
        } else if (!isInt(v) || v.toDouble() < opt.min || v.toDouble() > opt.max) {
          bad(QString("'%1' of %2 is a whole number %3..%4")
                  .arg(opt.key, b.kind, QString::number(opt.min, 'f', 0),
                       QString::number(opt.max, 'f', 0)));
        }
        b.options.insert(opt.key, v);
      }
      if (const QString u = unknownKeys(o, keys); !u.isEmpty()) bad(u);
      if (b.kind == "latency") {
        // The GPT's context and heads mean nothing to the MLP; the heads split the GPT's width.
        const bool gpt = benchWord(b, "model") == "gpt";
        for (const QString k : {"seq", "heads"})
          if (!gpt && o.contains(k))
            bad(QString("'%1' of latency needs \"model\": \"gpt\"").arg(k));
        const int heads = int(benchOption(b, "heads")), hidden = int(benchOption(b, "hidden"));
        if (gpt && heads > 0 && hidden % heads != 0)
          bad(QString("'heads' (%1) of the GPT must divide 'hidden' (%2)").arg(heads).arg(hidden));
      }
      step.bench = b;
    }
  }

  // [SECTION] Predictions with choices, and the checks that need the whole step.
  // A ```prediction block with "choices": the learner picks one label; the run measures each.
  template <typename Bad>
  Prediction choicePrediction(const QJsonObject& o, const Bad& bad) {
    if (const QString u = unknownKeys(o, {"ask", "choices", "pick", "over", "warmup", "unit",
                                          "reasoning", "expect"});
        !u.isEmpty())
      bad(u);
    Prediction p;
    p.ask = o.value("ask").toString();
    p.pick = o.value("pick").toString();
    p.over = o.value("over").toString(p.over);
    p.warmup = o.value("warmup").toInt(p.warmup);
    p.unit = o.value("unit").toString();
    p.reasoning = o.value("reasoning").toString();
    p.expectChoice = o.value("expect").toString();
    if (p.ask.isEmpty()) bad("'ask' is missing: the question the learner answers by choosing");
    const QJsonArray choices = o.value("choices").toArray();
    if (choices.size() < 2)
      bad("'choices' is a list of at least two {\"label\": ..., \"metric\": ...} objects");
    QStringList labels;
    for (int i = 0; i < choices.size(); ++i) {
      const QJsonObject c = choices[i].toObject();
      const QString which = QString("choice %1: ").arg(i + 1);
      if (const QString u = unknownKeys(c, {"label", "metric"}); !u.isEmpty()) bad(which + u);
      const Choice choice{c.value("label").toString(), c.value("metric").toString()};
      const Formula f(choice.metric);
      if (choice.label.isEmpty()) bad(which + "'label' is missing: what the learner picks");
      else if (labels.contains(choice.label)) bad(which + "'" + choice.label + "' is given twice");
      if (choice.metric.isEmpty())
        bad(which + "'metric' is missing (a metric of lessons/reference/metrics.md)");
      else if (!f.isValid())
        bad(which + "metric '" + choice.metric + "': " + f.error());
      labels << choice.label;
      p.choices << choice;
    }
    if (p.pick != "max" && p.pick != "min")
      bad("'pick' is max or min: the measured answer is the choice whose metric is largest or "
          "smallest");
    if (p.over != "first" && p.over != "last" && p.over != "median" && p.over != "mean")
      bad("'over' is one of first, last, median, mean");
    if (p.reasoning.isEmpty()) bad("'reasoning' is missing: why the reference answer is right");
    if (!o.value("expect").isString() || !labels.contains(p.expectChoice))
      bad(QString("'expect' is the label the reasoning gives, one of: %1").arg(labels.join(", ")));
    return p;
  }

  // Checks that need the whole step: references into its experiment. The machine's inputs are
  // fixed here, for the machine the lesson is loaded on: "$cores" its cores, "$sweep_max" the
  // largest rank count of the step's sweep.
  void finishStep(Step& s) {
    if (s.prediction && s.prediction->isChoice()) {
      if (!s.experiment)
        error(s.prediction->line, "prediction: choices are measured by the step's ```experiment");
      if (s.compare)
        error(s.compare->line, "compare: a prediction with choices is compared by its choices' "
                               "metrics; leave out the ```compare");
    }
    if (s.prediction) {
      for (const QString& k : s.prediction->inputs.keys()) {
        const QJsonValue v = s.prediction->inputs.value(k);
        if (!v.isString()) continue;
        const QString flag = v.toString().mid(1);
        if (flag == "cores") {
          s.prediction->inputs.insert(k, m_cores);
        } else if (flag == "sweep_max") {
          if (s.sweep && !s.sweep->ranks.isEmpty())
            s.prediction->inputs.insert(k, s.sweep->ranks.last());
          else
            error(s.prediction->line,
                  QString("prediction: input '%1' reads '$sweep_max' but the step has no ```sweep")
                      .arg(k));
        } else if (!s.experiment || !s.experiment->value(flag).isDouble()) {
          error(s.prediction->line, QString("prediction: input '%1' reads '%2' but the step's experiment gives no "
                                            "number for it").arg(k, flag));
        }
      }
    }
    const bool runsBench = s.bench && !s.bench->kind.isEmpty();
    if (s.compare && !s.experiment && !runsBench)
      error(s.compare->line, "compare: a comparison needs the step's ```experiment or ```bench");
    if (s.compare && !s.prediction) error(s.compare->line, "compare: a comparison needs the step's ```prediction");
    if (s.sweep && !s.experiment) error(s.sweep->line, "sweep: a sweep needs the step's ```experiment as its base");
  }

  QStringList m_lines;
  QString m_where;
  int m_cores;  // what sweeps sized to the machine and "$cores" are resolved for
  Lesson m_lesson;
  QStringList m_errors;
};

}  // namespace

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
  const QStringList dirs = root.entryList({"[0-9][0-9]-*"}, QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
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
    return "needs a CUDA GPU: this machine has none the engine can use (no GPU, no driver, or a build without CUDA)";
  if (kind == "strategy")
    return QString("needs the engine's '%1' strategy, which this build does not have yet (coming)").arg(name);
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
