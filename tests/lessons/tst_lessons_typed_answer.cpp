// A typed prediction is read as what it says: "43%" is 0.43 where the reference is a fraction
// (unit ""), 43 where it is in %, and refused after any other unit; the unit may follow the
// number; what is not a number is refused with what to type. Run: ctest -R tst_lessons_typed.
#include <QtTest>

#include "typed_answer.h"

using namespace paralab::lessons;

class TestTypedAnswer : public QObject {
  Q_OBJECT
 private slots:
  void read_data() {
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("unit");
    QTest::addColumn<double>("value");
    QTest::newRow("fraction as written") << "0.43"
                                         << "" << 0.43;
    QTest::newRow("43% of a fraction") << "43%"
                                       << "" << 0.43;  // the pipeline bubble, 3/7
    QTest::newRow("43 % with a space") << " 43 % "
                                       << "" << 0.43;
    QTest::newRow("plain 43 stays 43") << "43"
                                       << "" << 43.0;
    QTest::newRow("percent unit") << "43%"
                                  << "%" << 43.0;
    QTest::newRow("percent unit, bare") << "43"
                                        << "%" << 43.0;
    QTest::newRow("times") << "5.9"
                           << "×" << 5.9;
    QTest::newRow("times typed") << "5.9×"
                                 << "×" << 5.9;
    QTest::newRow("x for times") << "6 x"
                                 << "×" << 6.0;
    QTest::newRow("ms typed") << "12.5 ms"
                              << "ms" << 12.5;
    QTest::newRow("exponent") << "1e6"
                              << "bytes" << 1e6;
    QTest::newRow("group separator") << "1,048,576"
                                     << "bytes" << 1048576.0;
    QTest::newRow("negative") << "-0.5"
                              << "" << -0.5;
  }
  void read() {
    QFETCH(QString, typed);
    QFETCH(QString, unit);
    QFETCH(double, value);
    QString error = "stale";
    const auto v = readTypedAnswer(typed, unit, &error);
    QVERIFY2(v, qPrintable(error));
    QCOMPARE(*v, value);
    QVERIFY(error.isEmpty());
  }

  void refused_data() {
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QString>("unit");
    QTest::addColumn<QString>("says");
    QTest::newRow("empty") << "  "
                           << "×"
                           << "Type your prediction";
    QTest::newRow("words") << "about six"
                           << "×"
                           << "not a number";
    QTest::newRow("percent of ms") << "43%"
                                   << "ms"
                                   << "not a percentage";
    QTest::newRow("percent of times") << "50 %"
                                      << "×"
                                      << "not a percentage";
    QTest::newRow("another unit") << "12 ms"
                                  << "bytes"
                                  << "a number of bytes";
    QTest::newRow("infinity") << "inf"
                              << ""
                              << "not a number";
  }
  void refused() {
    QFETCH(QString, typed);
    QFETCH(QString, unit);
    QFETCH(QString, says);
    QString error;
    QVERIFY(!readTypedAnswer(typed, unit, &error));
    QVERIFY2(error.contains(says), qPrintable(error));
  }

  // The rule is told where the answer is typed.
  void hintSaysTheRule() {
    QVERIFY(predictionHint("").contains("43% is read as 0.43"));
    QVERIFY(predictionHint("ms").contains("ms"));
  }

  // In a locale with a decimal comma, "5,9" is 5.9 and "5.9" still reads.
  void decimalComma() {
    const QLocale before;
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
    QCOMPARE(readTypedAnswer("5,9", "×").value_or(-1), 5.9);
    QCOMPARE(readTypedAnswer("5.9", "×").value_or(-1), 5.9);
    QCOMPARE(readTypedAnswer("42,9 %", "").value_or(-1), 0.429);
    QLocale::setDefault(before);
  }
};

QTEST_GUILESS_MAIN(TestTypedAnswer)
#include "tst_lessons_typed_answer.moc"
