// Progress: how far the learner got in each lesson (step reached, completion, their locked
// predictions and choices, the measurements they were compared with, and written answers), kept
// per user in a JSON file (default: progress.json under QStandardPaths::AppDataLocation) that is
// rewritten whole on every change. What belongs to a step is keyed by the step's title, so a
// step added to a lesson later does not move a learner's guesses onto its neighbour.
// See tests/lessons/tst_lessons_progress.cpp.
#pragma once
#include <QDateTime>
#include <QHash>
#include <QList>
#include <QMap>
#include <QSet>
#include <QString>
#include <QStringList>

namespace paralab::lessons {

struct LessonProgress {
  int stepReached = 0;            // 0-based index of the furthest step opened
  bool completed = false;
  QDateTime completedAt;          // UTC, when first completed
  // Step title -> the predictions locked in there, in order: a locked one is never changed, a
  // "try again" adds another (the learner sees how their guesses moved).
  QMap<QString, QList<double>> predictions;
  QMap<int, QString> answers;     // retrieval question index -> what the learner wrote
  // Step title -> the last measurement its comparison showed (lesson_score.h scores against it).
  QMap<QString, double> measured;
  // Step title -> the labels picked there for a prediction with choices, in order (as
  // `predictions`: a locked pick is never changed, a "try again" adds another).
  QMap<QString, QStringList> choices;
  // Step title -> what the step's last run measured for its choices.
  struct MeasuredChoice {
    QString answer;       // the label of the measured answer
    QList<double> values; // each choice's value, in the order of the choices
  };
  QMap<QString, MeasuredChoice> measuredChoices;
};

class Progress {
 public:
  explicit Progress(const QString& path = defaultPath());  // reads the file when it exists
  static QString defaultPath();  // <AppDataLocation>/progress.json

  LessonProgress lesson(const QString& slug) const;  // empty progress when never opened

  // Each records and writes the file; false when it cannot be written (error() says why).
  bool reachStep(const QString& slug, int step);  // keeps the furthest step
  bool complete(const QString& slug, const QDateTime& when = QDateTime::currentDateTimeUtc());
  // `step`: the step's title.
  bool lockPrediction(const QString& slug, const QString& step, double value);  // one more attempt
  bool setAnswer(const QString& slug, int question, const QString& text);
  bool setMeasured(const QString& slug, const QString& step, double value);
  bool lockChoice(const QString& slug, const QString& step, const QString& label);  // one more
  bool setMeasuredChoice(const QString& slug, const QString& step,
                         const LessonProgress::MeasuredChoice& m);
  bool resetLesson(const QString& slug);
  // A file written before steps were keyed by title keys them by page (step index + 1). Given
  // the lesson's step titles, in order, this renames those keys to titles (the best reading
  // there is: the lesson as it is now) and writes the file; a page past the last step stays as
  // "page N", kept in the file but shown nowhere. Nothing to do for a lesson keyed by title.
  bool adoptPageKeys(const QString& slug, const QStringList& stepTitles);

  bool save();
  QString path() const { return m_path; }
  QString error() const { return m_error; }

 private:
  void load();

  QString m_path;
  QString m_error;
  QHash<QString, LessonProgress> m_lessons;
  QSet<QString> m_pageKeyed;  // lessons read from a file that keyed their steps by page
};

}  // namespace paralab::lessons
