// What a lesson step's prediction and comparison show: the reference a formula gives, the
// value a run measured at a metric path, and the answer a run gives to a prediction with
// choices (lesson.h). See tests/lessons/tst_lessons.cpp and tst_lessons_progress.cpp.
#include <QJsonArray>
#include <algorithm>
#include <cmath>

#include "formula.h"
#include "lesson.h"
#include "train/sweep.h"

namespace paralab::lessons {
// [SECTION] Predictions and comparisons.

QHash<QString, double> resolvedInputs(const Prediction& p, const QJsonObject& experiment, QString* error) {
  QHash<QString, double> vars;
  for (const QString& k : p.inputs.keys()) {
    const QJsonValue v = p.inputs.value(k);
    if (v.isDouble()) {
      vars.insert(k, v.toDouble());
    } else {
      const QString flag = v.toString().mid(1);
      const QJsonValue e = experiment.value(flag);
      if (e.isDouble()) vars.insert(k, e.toDouble());
      else if (error) *error = QString("input '%1': the experiment gives no number for '%2'").arg(k, flag);
    }
  }
  return vars;
}

std::optional<double> referenceValue(const Prediction& p, const QJsonObject& experiment, QString* error) {
  QString inputError;
  const auto vars = resolvedInputs(p, experiment, &inputError);
  if (!inputError.isEmpty()) {
    if (error) *error = inputError;
    return std::nullopt;
  }
  return Formula(p.formula).evaluate(vars, error);
}

// [SECTION] Metric paths, and what a run measured for a comparison.
std::optional<double> metricAt(const QJsonObject& root, const QString& path) {
  QJsonValue cur = root;
  int i = 0;
  const int n = int(path.size());
  while (i < n) {
    if (path[i] == '.') ++i;
    int j = i;
    while (j < n && path[j] != '.' && path[j] != '[') ++j;
    if (j > i) {
      if (!cur.isObject()) return std::nullopt;
      cur = cur.toObject().value(path.mid(i, j - i));
      if (cur.isUndefined()) return std::nullopt;
    }
    i = j;
    while (i < n && path[i] == '[') {
      const int close = int(path.indexOf(']', i));
      if (close < 0 || !cur.isArray()) return std::nullopt;
      const QString sel = path.mid(i + 1, close - i - 1);
      const QJsonArray a = cur.toArray();
      const int eq = int(sel.indexOf('='));
      if (sel == "first" || sel == "last") {  // a sweep's smallest or largest rank count
        if (a.isEmpty()) return std::nullopt;
        cur = sel == "first" ? a.first() : a.last();
      } else if (eq < 0) {
        bool ok = false;
        const int idx = sel.toInt(&ok);
        if (!ok || idx < 0 || idx >= a.size()) return std::nullopt;
        cur = a.at(idx);
      } else {
        const QString key = sel.left(eq);
        QString want = sel.mid(eq + 1);
        if (want.startsWith('$')) {  // a number of the object's top level, e.g. $cores
          const QJsonValue top = root.value(want.mid(1));
          if (!top.isDouble()) return std::nullopt;
          want = QString::number(top.toDouble(), 'g', 15);
        }
        bool found = false;
        for (const QJsonValue& e : a) {
          const QJsonValue k = e.toObject().value(key);
          const QString have = k.isDouble() ? QString::number(k.toDouble(), 'g', 15) : k.toString();
          if (!k.isUndefined() && have == want) {
            cur = e;
            found = true;
            break;
          }
        }
        if (!found) return std::nullopt;
      }
      i = close + 1;
    }
  }
  if (cur.isDouble()) return cur.toDouble();
  if (cur.isBool()) return cur.toBool() ? 1.0 : 0.0;
  return std::nullopt;
}

namespace {
std::optional<double> evalOn(const Formula& f, const QJsonObject& o, QString* error) {
  return f.evaluate([&o](const QString& name) { return metricAt(o, name); }, error);
}
}  // namespace

std::optional<double> measuredValue(const Compare& c, const QList<QJsonObject>& steps, QString* error) {
  // Some metrics appear only on some steps (staleness, spread on averaging steps, test_accuracy
  // on evaluation steps): each choice is made among the steps that report the metric.
  const Formula f(c.metric);
  const bool ordered = c.over == "first" || c.over == "last";
  const int from = ordered || steps.size() <= c.warmup ? 0 : c.warmup;
  std::vector<double> values;
  QString lastError = "the run has no steps yet";
  for (int i = from; i < steps.size(); ++i) {
    QString e;
    if (const auto v = evalOn(f, steps[i], &e)) values.push_back(*v);
    else lastError = e;
  }
  if (values.empty()) {
    if (error) *error = steps.isEmpty() ? lastError : "no step of the run reports it: " + lastError;
    return std::nullopt;
  }
  if (c.over == "first") return values.front();
  if (c.over == "last") return values.back();
  if (c.over == "mean") {
    double s = 0;
    for (double v : values) s += v;
    return s / double(values.size());
  }
  std::sort(values.begin(), values.end());
  const size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : (values[m - 1] + values[m]) / 2;
}

// [SECTION] What a run measured for a prediction with choices.

namespace {
// Each choice's metric read as a comparison with the prediction's `over` and `warmup` reads it.
template <typename Run>
ChoiceMeasurement measureEach(const Prediction& p, const Run& run) {
  QList<double> values;
  QString error;
  for (const Choice& choice : p.choices) {
    Compare c;
    c.metric = choice.metric;
    c.over = p.over;
    c.warmup = p.warmup;
    QString e;
    const auto v = measuredValue(c, run, &e);
    values << v.value_or(std::nan(""));
    if (!v && error.isEmpty()) error = choice.label + ": " + e;
  }
  ChoiceMeasurement m = choiceAnswer(p, values);
  if (!error.isEmpty()) m.error = error;
  return m;
}
}  // namespace

ChoiceMeasurement measuredChoice(const Prediction& p, const QList<QJsonObject>& steps) {
  return measureEach(p, steps);
}

ChoiceMeasurement measuredChoice(const Prediction& p, const QJsonObject& sweep) {
  return measureEach(p, sweep);
}

ChoiceMeasurement choiceAnswer(const Prediction& p, const QList<double>& values) {
  ChoiceMeasurement m;
  m.values = values;
  if (values.size() != p.choices.size() || values.isEmpty()) {
    m.error = "no measurement for every choice";
    return m;
  }
  int best = 0;
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      m.error = p.choices[i].label + ": no value";
      return m;
    }
    if (p.pick == "max" ? values[i] > values[best] : values[i] < values[best]) best = i;
  }
  for (int i = 0; i < values.size(); ++i)
    if (i != best && values[i] == values[best]) {
      m.error = QString("%1 and %2 measured the same").arg(p.choices[best].label, p.choices[i].label);
      return m;
    }
  m.answer = best;
  return m;
}

std::optional<double> measuredValue(const Compare& c, const QJsonObject& sweep, QString* error) {
  const auto v = evalOn(Formula(c.metric), sweep, error);
  // A fitted fraction outside 0..1 is no fraction of the work: said in the engine's words
  // (AmdahlFit::caveat), never shown as a number to compare with a prediction.
  const QString metric = c.metric.simplified();
  std::string caveat;
  if (v && metric == "amdahl_p") caveat = AmdahlFit{*v}.caveat();
  if (v && metric == "gustafson_serial_fraction") caveat = GustafsonFit{*v}.caveat();
  if (caveat.empty()) return v;
  if (error)
    *error = QString("no fit: the fitted value lies %1").arg(QString::fromStdString(caveat));
  return std::nullopt;
}

QString fitNote(const Step& s) {
  if (!s.sweep || s.sweep->ranks.isEmpty() || !s.compare) return {};
  const QString metric = s.compare->metric.simplified();
  if (metric != "amdahl_p" && metric != "gustafson_serial_fraction") return {};
  // runSweep measures 1 rank first, whatever the list starts with.
  const int cores = s.sweep->cores > 0 ? s.sweep->cores : machineCores();
  return "fitted on " + QString::fromStdString(fitBasis(1, s.sweep->ranks.last(), cores));
}

}  // namespace paralab::lessons
