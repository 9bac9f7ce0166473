// The learner's own files (lesson progress, flashcard state): one JSON object
// {"version": 1, "<section>": {...}} under the per-user app data folder, read once at start and
// written whole after every change. Shared by Progress and FlashcardDeck.
// See tests/lessons/tst_lessons_progress.cpp (unreadableFileIsKept).
#pragma once
#include <QJsonObject>
#include <QString>

namespace paralab::lessons {

// The object under `section` in the file at `path`; empty when there is no file yet. A file
// that cannot be read or is not such JSON sets `error` (path and reason, one line) and returns
// empty; one that is not JSON is first renamed to `path`.unreadable, so the next write cannot
// destroy what the learner had.
QJsonObject readLearnerFile(const QString& path, const QString& section, QString* error);

// Writes {"version": 1, section: value} to `path` (its folder made if needed), whole or not at
// all (QSaveFile: a crash never leaves half a file). False with `error` set when it cannot.
bool writeLearnerFile(const QString& path, const QString& section, const QJsonObject& value,
                      QString* error);

}  // namespace paralab::lessons
