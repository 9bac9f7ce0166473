// Flashcard scheduling and its JSON file (see flashcards.h). See tests/lessons/tst_lessons_flashcards.cpp.
#include "flashcards.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QJsonObject>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>

#include "learner_file.h"

namespace paralab::lessons {

namespace {
constexpr double kMinEase = 1.3;
constexpr double kAgainEase = 0.20, kHardEase = 0.15;
constexpr int kRelearnMinutes = 10;
constexpr qint64 kDaySeconds = 24 * 60 * 60;
}  // namespace

CardState schedule(const CardState& before, Grade grade, const QDateTime& now) {
  CardState s = before;
  switch (grade) {
    case Grade::Again:
      if (s.reviews > 0) ++s.lapses;
      s.reviews = 0;
      s.intervalDays = 0;
      s.ease = std::max(kMinEase, s.ease - kAgainEase);
      s.due = now.addSecs(kRelearnMinutes * 60);
      return s;
    case Grade::Hard:
      s.intervalDays = std::max(1.0, std::round(s.intervalDays / 2));
      s.ease = std::max(kMinEase, s.ease - kHardEase);
      ++s.reviews;
      break;
    case Grade::Good:
      ++s.reviews;
      s.intervalDays = s.reviews == 1   ? 1
                       : s.reviews == 2 ? 6
                                        : std::round(std::max(1.0, s.intervalDays) * s.ease);
      break;
  }
  s.due = now.addSecs(qint64(s.intervalDays * double(kDaySeconds)));
  return s;
}

FlashcardDeck::FlashcardDeck(const QString& path) : m_path(path) { load(); }

QString FlashcardDeck::defaultPath() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath("flashcards.json");
}

QString FlashcardDeck::cardId(const QString& lessonSlug, const QString& question) {
  const QByteArray h = QCryptographicHash::hash(question.simplified().toUtf8(), QCryptographicHash::Sha1);
  return lessonSlug + "#" + QString::fromLatin1(h.toHex().left(12));
}

CardState FlashcardDeck::state(const QString& id) const { return m_states.value(id); }

bool FlashcardDeck::review(const QString& id, Grade grade, const QDateTime& now) {
  m_states.insert(id, schedule(state(id), grade, now));
  return save();
}

QStringList FlashcardDeck::due(const QStringList& ids, const QDateTime& now) const {
  QList<QPair<QDateTime, QString>> out;
  for (const QString& id : ids) {
    const CardState s = state(id);
    if (!s.due.isValid() || s.due <= now) out.append({s.due, id});
  }
  // New cards (invalid due) first in the given order, then the most overdue.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (!a.first.isValid() || !b.first.isValid()) return !a.first.isValid() && b.first.isValid();
    return a.first < b.first;
  });
  QStringList r;
  for (const auto& p : out) r << p.second;
  return r;
}

QDateTime FlashcardDeck::nextDue(const QStringList& ids, const QDateTime& now) const {
  QDateTime next;
  for (const QString& id : ids) {
    const QDateTime due = state(id).due;
    if (due.isValid() && due > now && (!next.isValid() || due < next)) next = due;
  }
  return next;
}

QStringList interleaveByLesson(const QStringList& dueIds) {
  QStringList lessons;             // slugs, in order of first appearance
  QHash<QString, QStringList> of;  // slug -> its due ids, in order
  for (const QString& id : dueIds) {
    const QString slug = id.section('#', 0, 0);
    if (!of.contains(slug)) lessons << slug;
    of[slug] << id;
  }
  QStringList out;
  for (int turn = 0; out.size() < dueIds.size(); ++turn)
    for (const QString& slug : lessons)
      if (turn < of[slug].size()) out << of[slug][turn];
  return out;
}

QString waitText(const QDateTime& now, const QDateTime& when) {
  const qint64 s = now.secsTo(when);
  auto tr = [](const char* text, int n) {
    return QCoreApplication::translate("paralab::lessons", text, nullptr, n);
  };
  if (s < 60 * 60) {
    const int minutes = int(std::max<qint64>(1, (s + 59) / 60));
    return minutes == 1 ? tr("in a minute", 1) : tr("in %n minutes", minutes);
  }
  if (s < kDaySeconds) {
    const int hours = int((s + 3599) / 3600);
    return hours == 1 ? tr("in an hour", 1) : tr("in %n hours", hours);
  }
  const int days = int((s + kDaySeconds - 1) / kDaySeconds);
  return days == 1 ? tr("tomorrow", 1) : tr("in %n days", days);
}

void FlashcardDeck::reset(const QString& id) {
  m_states.remove(id);
  save();
}

void FlashcardDeck::load() {
  const QJsonObject cards = readLearnerFile(m_path, "cards", &m_error);
  for (auto it = cards.begin(); it != cards.end(); ++it) {
    const QJsonObject o = it.value().toObject();
    CardState s;
    s.intervalDays = o.value("interval_days").toDouble();
    s.ease = o.value("ease").toDouble(2.5);
    s.reviews = o.value("reviews").toInt();
    s.lapses = o.value("lapses").toInt();
    s.due = QDateTime::fromString(o.value("due").toString(), Qt::ISODate);
    m_states.insert(it.key(), s);
  }
}

bool FlashcardDeck::save() {
  QJsonObject cards;
  for (auto it = m_states.begin(); it != m_states.end(); ++it) {
    const CardState& s = it.value();
    cards.insert(it.key(), QJsonObject{{"interval_days", s.intervalDays},
                                       {"ease", s.ease},
                                       {"reviews", s.reviews},
                                       {"lapses", s.lapses},
                                       {"due", s.due.toUTC().toString(Qt::ISODate)}});
  }
  return writeLearnerFile(m_path, "cards", cards, &m_error);
}

}  // namespace paralab::lessons
