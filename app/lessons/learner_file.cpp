// Reading and writing the learner's JSON files (see learner_file.h).
#include "learner_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>

namespace paralab::lessons {

QJsonObject readLearnerFile(const QString& path, const QString& section, QString* error) {
  error->clear();
  QFile f(path);
  if (!f.exists()) return {};
  if (!f.open(QIODevice::ReadOnly)) {
    *error = path + ": " + f.errorString();
    return {};
  }
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parse);
  f.close();
  if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
    const QString aside = path + ".unreadable";
    QFile::remove(aside);
    const bool kept = QFile::rename(path, aside);
    *error = path + ": not JSON (" +
             (parse.error != QJsonParseError::NoError ? parse.errorString() : "not an object") +
             (kept ? "); kept as " + aside + ", starting afresh" : "); starting afresh");
    return {};
  }
  return doc.object().value(section).toObject();
}

bool writeLearnerFile(const QString& path, const QString& section, const QJsonObject& value,
                      QString* error) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    *error = path + ": " + f.errorString();
    return false;
  }
  f.write(QJsonDocument(QJsonObject{{"version", 1}, {section, value}}).toJson());
  if (!f.commit()) {
    *error = path + ": " + f.errorString();
    return false;
  }
  error->clear();
  return true;
}

}  // namespace paralab::lessons
