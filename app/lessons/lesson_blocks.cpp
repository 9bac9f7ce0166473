// LessonParser's checks of a step's blocks: an experiment, a sweep (listed or sized to the
// machine's cores), a prediction (a number by formula, or choices), a comparison and a benchmark,
// then the checks that need the whole step. The format is in lessons/README.md; errors name the
// file and line. See tests/lessons/tst_lessons_format.cpp.
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>

#include "capabilities.h"
#include "formula.h"
#include "lesson_parser.h"
#include "train/sweep.h"

namespace paralab::lessons {

namespace {

// The keys of `o` that are not in `allowed`, as one message ("" when none).
QString unknownKeys(const QJsonObject& o, const QStringList& allowed) {
  QStringList bad;
  for (const QString& k : o.keys())
    if (!allowed.contains(k)) bad << "'" + k + "'";
  if (bad.isEmpty()) return {};
  return QString("unknown key %1 (allowed: %2)").arg(bad.join(", "), allowed.join(", "));
}

bool isInt(const QJsonValue& v) { return v.isDouble() && v.toDouble() == double(v.toInteger()); }

}  // namespace

// [SECTION] Predictions with choices, and the checks that need the whole step.
template <typename Bad>
Prediction LessonParser::choicePrediction(const QJsonObject& o, const Bad& bad) {
  if (const QString u = unknownKeys(
          o, {"ask", "choices", "pick", "over", "warmup", "unit", "reasoning", "expect"});
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
    if (choice.label.isEmpty())
      bad(which + "'label' is missing: what the learner picks");
    else if (labels.contains(choice.label))
      bad(which + "'" + choice.label + "' is given twice");
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

// [SECTION] The blocks of a step: experiment, sweep, prediction, compare, bench.
void LessonParser::takeBlock(const QString& kind, int line, const QStringList& lines,
                             Section section) {
  if (section != Section::Step) return;  // reported when the fence opened
  Step& step = m_lesson.steps.last();
  QJsonParseError pe;
  const QByteArray bytes = lines.join('\n').toUtf8();
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
  if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
    const int at =
        pe.error != QJsonParseError::NoError ? int(bytes.left(pe.offset).count('\n')) + 1 : 1;
    error(line + at, QString("%1: not a JSON object (%2)")
                         .arg(kind, pe.error != QJsonParseError::NoError ? pe.errorString()
                                                                         : "expected { ... }"));
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
    if (const QString u =
            unknownKeys(o, {"ask", "formula", "inputs", "unit", "reasoning", "expect", "worked"});
        !u.isEmpty())
      bad(u);
    Prediction p;
    p.line = line;
    p.ask = o.value("ask").toString();
    p.formula = o.value("formula").toString();
    p.inputs = o.value("inputs").toObject();
    p.unit = o.value("unit").toString();
    p.reasoning = o.value("reasoning").toString();
    p.worked = o.value("worked").toBool();
    if (o.contains("worked") && !o.value("worked").isBool()) bad("'worked' is true or false");
    if (o.contains("expect")) {
      if (!o.value("expect").isDouble()) bad("'expect' is the number the text states");
      p.expect = o.value("expect").toDouble();
    }
    if (p.ask.isEmpty()) bad("'ask' is missing: the question the learner answers with a number");
    if (!o.contains("unit") || !o.value("unit").isString())
      bad("'unit' is missing (\"\" for a pure number)");
    const Formula f(p.formula);
    if (p.formula.isEmpty())
      bad("'formula' is missing");
    else if (!f.isValid())
      bad("formula '" + p.formula + "': " + f.error());
    for (const QString& v : f.variables())
      if (!p.inputs.contains(v))
        bad(QString("formula uses '%1' but 'inputs' does not give it").arg(v));
    for (const QString& k : p.inputs.keys()) {
      const QJsonValue v = p.inputs.value(k);
      if (!v.isDouble() && !(v.isString() && v.toString().startsWith('$')))
        bad(QString("input '%1' is a number or \"$flag\" (a key of the step's experiment)").arg(k));
      if (f.isValid() && !f.variables().contains(k))
        bad(QString("input '%1' is not used by the formula").arg(k));
    }
    step.prediction = p;
  } else if (kind == "compare") {
    if (dup(step.compare.has_value())) return;
    if (const QString u = unknownKeys(o, {"metric", "over", "warmup", "unit", "explain"});
        !u.isEmpty())
      bad(u);
    Compare c;
    c.line = line;
    c.metric = o.value("metric").toString();
    c.over = o.value("over").toString("last");
    c.warmup = o.value("warmup").toInt(c.warmup);
    c.unit = o.value("unit").toString();
    c.explain = o.value("explain").toString();
    const Formula f(c.metric);
    if (c.metric.isEmpty())
      bad("'metric' is missing (a metric of lessons/reference/metrics.md)");
    else if (!f.isValid())
      bad("metric '" + c.metric + "': " + f.error());
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
    // The checks are the engine's bench table's (jobs::benchSettings()): unknown keys, types,
    // ranges, and keys given where the kind or model does not use them.
    b.kind = o.value("kind").toString();
    b.options = o;
    b.options.remove("kind");
    const std::vector<std::string> problems =
        jobs::benchProblems(b.kind.toStdString(), benchValues(b));
    for (const std::string& p : problems) bad(QString::fromStdString(p));
    if (!benchKinds().contains(b.kind)) return;
    step.bench = b;
  }
}

// Checks that need the whole step: references into its experiment. The machine's inputs (and
// the vector level its text may name) are fixed here, for the machine the lesson is loaded on: "$cores" its cores, "$sweep_max" the
// largest rank count of the step's sweep.
void LessonParser::finishStep(Step& s) {
  // "$simd_level": the vector level this machine's kernels were dispatched to at start, in
  // words ("avx512, 16 floats per instruction"); "$simd_name" the level alone ("avx512"), for a
  // step whose prediction is a width. Wherever a step's text names them.
  static const QString name = QString::fromStdString(simdLevelName());
  static const QString level =
      QString("%1, %2 floats per instruction").arg(name).arg(simdLevelFloats());
  for (QString* text : {&s.markdown, s.prediction ? &s.prediction->reasoning : nullptr,
                        s.compare ? &s.compare->explain : nullptr})
    if (text) text->replace("$simd_level", level).replace("$simd_name", name);
  if (s.prediction && s.prediction->isChoice()) {
    if (!s.experiment)
      error(s.prediction->line, "prediction: choices are measured by the step's ```experiment");
    if (s.compare)
      error(s.compare->line,
            "compare: a prediction with choices is compared by its choices' "
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
        error(s.prediction->line,
              QString("prediction: input '%1' reads '%2' but the step's experiment gives no "
                      "number for it")
                  .arg(k, flag));
      }
    }
  }
  const bool runsBench = s.bench && !s.bench->kind.isEmpty();
  if (s.compare && !s.experiment && !runsBench)
    error(s.compare->line, "compare: a comparison needs the step's ```experiment or ```bench");
  if (s.compare && !s.prediction)
    error(s.compare->line, "compare: a comparison needs the step's ```prediction");
  if (s.sweep && !s.experiment)
    error(s.sweep->line, "sweep: a sweep needs the step's ```experiment as its base");
}

}  // namespace paralab::lessons
