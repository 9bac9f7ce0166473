// Reading a typed prediction (see typed_answer.h): the number, a trailing "%" or unit, the
// locale's decimal comma. See tests/lessons/tst_lessons_typed_answer.cpp.
#include "typed_answer.h"

#include <QCoreApplication>
#include <QLocale>
#include <QStringList>
#include <cmath>

namespace paralab::lessons {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("paralab::lessons", text); }

// How the unit may be typed after the number: as written, and "x" for "×".
QStringList spellings(const QString& unit) {
  if (unit.isEmpty() || unit == "%") return {};
  QStringList out{unit};
  if (unit == "×") out << "x";
  return out;
}

}  // namespace

QString predictionHint(const QString& unit) {
  if (unit.isEmpty()) return tr("a number; 43% is read as 0.43");
  if (unit == "%") return tr("in %: 43 and 43% are both 43 %");
  return tr("a number of %1").arg(unit);
}

std::optional<double> readTypedAnswer(const QString& typed, const QString& unit, QString* error) {
  auto refuse = [error](const QString& why) -> std::optional<double> {
    if (error) *error = why;
    return std::nullopt;
  };
  QString text = typed.simplified();
  if (text.isEmpty())
    return refuse(tr("Type your prediction first (%1).").arg(predictionHint(unit)));
  const bool percent = text.endsWith('%');
  if (percent) text = text.chopped(1).trimmed();
  for (const QString& u : spellings(unit))
    if (!percent && text.size() > u.size() && text.endsWith(u, Qt::CaseInsensitive)) {
      text = text.chopped(u.size()).trimmed();
      break;
    }
  // The learner's locale first ("5,9" in German), then the C locale ("5.9" anywhere).
  bool ok = false;
  double value = QLocale().toDouble(text, &ok);
  if (!ok) value = QLocale::c().toDouble(text, &ok);
  if (!ok || !std::isfinite(value))
    return refuse(tr("“%1” is not a number: type %2.").arg(typed.trimmed(), predictionHint(unit)));
  if (percent && !unit.isEmpty() && unit != "%")
    return refuse(
        tr("“%1”: this answer is a number of %2, not a percentage.").arg(typed.trimmed(), unit));
  if (error) error->clear();
  return percent && unit.isEmpty() ? value / 100 : value;
}

}  // namespace paralab::lessons
