// Lesson progress and its JSON file (see progress.h). See tests/lessons/tst_lessons_progress.cpp.
#include "progress.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>

#include "learner_file.h"

namespace paralab::lessons {

Progress::Progress(const QString& path) : m_path(path) { load(); }

QString Progress::defaultPath() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath("progress.json");
}

LessonProgress Progress::lesson(const QString& slug) const { return m_lessons.value(slug); }

bool Progress::reachStep(const QString& slug, int step) {
  LessonProgress& p = m_lessons[slug];
  p.stepReached = std::max(p.stepReached, step);
  return save();
}

bool Progress::complete(const QString& slug, const QDateTime& when) {
  LessonProgress& p = m_lessons[slug];
  if (!p.completed) p.completedAt = when.toUTC();
  p.completed = true;
  return save();
}

bool Progress::lockPrediction(const QString& slug, const QString& step, double value) {
  m_lessons[slug].predictions[step].append(value);
  return save();
}

bool Progress::setAnswer(const QString& slug, int question, const QString& text) {
  m_lessons[slug].answers.insert(question, text);
  return save();
}

bool Progress::setMeasured(const QString& slug, const QString& step, double value) {
  m_lessons[slug].measured.insert(step, value);
  return save();
}

bool Progress::lockChoice(const QString& slug, const QString& step, const QString& label) {
  m_lessons[slug].choices[step].append(label);
  return save();
}

bool Progress::setMeasuredChoice(const QString& slug, const QString& step,
                                 const LessonProgress::MeasuredChoice& m) {
  m_lessons[slug].measuredChoices.insert(step, m);
  return save();
}

bool Progress::resetLesson(const QString& slug) {
  m_lessons.remove(slug);
  m_pageKeyed.remove(slug);
  return save();
}

namespace {
template <typename T>
void renamePageKeys(QMap<QString, T>& byStep, const QStringList& titles) {
  QMap<QString, T> renamed;
  for (auto it = byStep.begin(); it != byStep.end(); ++it) {
    const int page = it.key().toInt();
    renamed.insert(page >= 1 && page <= titles.size() ? titles[page - 1] : "page " + it.key(),
                   it.value());
  }
  byStep = renamed;
}
}  // namespace

bool Progress::adoptPageKeys(const QString& slug, const QStringList& stepTitles) {
  if (!m_pageKeyed.remove(slug)) return true;
  LessonProgress& p = m_lessons[slug];
  renamePageKeys(p.predictions, stepTitles);
  renamePageKeys(p.measured, stepTitles);
  renamePageKeys(p.choices, stepTitles);
  renamePageKeys(p.measuredChoices, stepTitles);
  return save();
}

void Progress::load() {
  const QJsonObject lessons = readLearnerFile(m_path, "lessons", &m_error);
  for (auto it = lessons.begin(); it != lessons.end(); ++it) {
    const QJsonObject o = it.value().toObject();
    LessonProgress p;
    if (o.value("step_keys").toString() != "title") m_pageKeyed.insert(it.key());
    p.stepReached = o.value("step_reached").toInt();
    p.completed = o.value("completed").toBool();
    p.completedAt = QDateTime::fromString(o.value("completed_at").toString(), Qt::ISODate);
    const QJsonObject preds = o.value("predictions").toObject();
    // A list of attempts; a single number is a file written before there could be more.
    for (auto pi = preds.begin(); pi != preds.end(); ++pi) {
      QList<double>& attempts = p.predictions[pi.key()];
      if (pi.value().isArray())
        for (const QJsonValue& v : pi.value().toArray()) attempts << v.toDouble();
      else
        attempts << pi.value().toDouble();
    }
    const QJsonObject answers = o.value("answers").toObject();
    for (auto ai = answers.begin(); ai != answers.end(); ++ai) p.answers.insert(ai.key().toInt(), ai.value().toString());
    const QJsonObject measured = o.value("measured").toObject();
    for (auto mi = measured.begin(); mi != measured.end(); ++mi)
      if (mi.value().isDouble()) p.measured.insert(mi.key(), mi.value().toDouble());
    const QJsonObject choices = o.value("choices").toObject();
    for (auto ci = choices.begin(); ci != choices.end(); ++ci)
      for (const QJsonValue& v : ci.value().toArray())
        p.choices[ci.key()] << v.toString();
    const QJsonObject picked = o.value("measured_choices").toObject();
    for (auto mi = picked.begin(); mi != picked.end(); ++mi) {
      LessonProgress::MeasuredChoice m;
      m.answer = mi.value().toObject().value("answer").toString();
      for (const QJsonValue& v : mi.value().toObject().value("values").toArray())
        m.values << (v.isDouble() ? v.toDouble() : std::nan(""));
      p.measuredChoices.insert(mi.key(), m);
    }
    m_lessons.insert(it.key(), p);
  }
}

bool Progress::save() {
  QJsonObject lessons;
  for (auto it = m_lessons.begin(); it != m_lessons.end(); ++it) {
    const LessonProgress& p = it.value();
    QJsonObject preds, answers;
    for (auto pi = p.predictions.begin(); pi != p.predictions.end(); ++pi) {
      QJsonArray attempts;
      for (double v : pi.value()) attempts.append(v);
      preds.insert(pi.key(), attempts);
    }
    for (auto ai = p.answers.begin(); ai != p.answers.end(); ++ai) answers.insert(QString::number(ai.key()), ai.value());
    QJsonObject measured;
    for (auto mi = p.measured.begin(); mi != p.measured.end(); ++mi)
      if (std::isfinite(mi.value())) measured.insert(mi.key(), mi.value());
    QJsonObject choices, picked;
    for (auto ci = p.choices.begin(); ci != p.choices.end(); ++ci)
      choices.insert(ci.key(), QJsonArray::fromStringList(ci.value()));
    for (auto mi = p.measuredChoices.begin(); mi != p.measuredChoices.end(); ++mi) {
      QJsonArray values;  // null where a choice had no value
      for (double v : mi.value().values) values.append(std::isfinite(v) ? QJsonValue(v) : QJsonValue());
      picked.insert(mi.key(),
                    QJsonObject{{"answer", mi.value().answer}, {"values", values}});
    }
    QJsonObject o{{"step_reached", p.stepReached}, {"completed", p.completed}, {"predictions", preds},
                  {"answers", answers}, {"measured", measured}, {"choices", choices},
                  {"measured_choices", picked},
                  {"step_keys", m_pageKeyed.contains(it.key()) ? "page" : "title"}};
    if (p.completedAt.isValid()) o.insert("completed_at", p.completedAt.toUTC().toString(Qt::ISODate));
    lessons.insert(it.key(), o);
  }
  return writeLearnerFile(m_path, "lessons", lessons, &m_error);
}

}  // namespace paralab::lessons
