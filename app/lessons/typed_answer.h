// A prediction as the learner typed it ("5.9", "43%", "12 ms"), read as a number in the unit of
// the prediction's reference, or refused with a line saying what to type instead. QtCore only.
// See tests/lessons/tst_lessons_typed_answer.cpp.
#pragma once
#include <QString>
#include <optional>

namespace paralab::lessons {

// The rule (one place, shown to the learner in predictionHint()):
//   - A number reads as written: "5.9", "5,9" in a locale with a decimal comma, "1e6", "1,024".
//   - "%" means hundredths of the unit's whole. Where the reference is a pure number (unit ""),
//     a fraction or a share, "43%" is 0.43, as it says; where the unit is "%", "43%" and "43"
//     are both 43. After any other unit (ms, bytes, ×) a "%" is refused: 43 % of a millisecond
//     answers nothing, and a silent guess would compare the wrong numbers.
//   - The unit itself may follow the number ("6 ×", "6x", "12 ms"); another unit is refused.
std::optional<double> readTypedAnswer(const QString& typed, const QString& unit,
                                      QString* error = nullptr);

// What the prediction's input asks for, by its unit: "a fraction: 0.43 or 43%", "in ms", ...
QString predictionHint(const QString& unit);

}  // namespace paralab::lessons
