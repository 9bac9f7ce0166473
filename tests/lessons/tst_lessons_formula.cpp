// The lessons' formula language: precedence, functions, variables and metric paths, and errors
// that name the position. Run: ctest -R tst_lessons_formula.
#include <QtTest>
#include <cmath>

#include "formula.h"

using namespace paralab::lessons;

class TestFormula : public QObject {
  Q_OBJECT
 private slots:
  void values_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("expected");
    QTest::newRow("number") << "42" << 42.0;
    QTest::newRow("decimal and exponent") << "1.5e3 + .5" << 1500.5;
    QTest::newRow("precedence") << "1 + 2 * 3 - 4 / 2" << 5.0;
    QTest::newRow("parentheses") << "(1 + 2) * 3" << 9.0;
    QTest::newRow("power right-assoc") << "2 ^ 3 ^ 2" << 512.0;
    QTest::newRow("unary minus below power") << "-2 ^ 2" << -4.0;
    QTest::newRow("negative exponent") << "2 ^ -1" << 0.5;
    QTest::newRow("unary plus") << "+3 - -2" << 5.0;
    QTest::newRow("sqrt") << "sqrt(16)" << 4.0;
    QTest::newRow("log") << "log(exp(2))" << 2.0;
    QTest::newRow("log2") << "log2(1024)" << 10.0;
    QTest::newRow("min max variadic") << "min(3, 1, 2) + max(1, 5, 2)" << 6.0;
    QTest::newRow("ceil floor abs") << "ceil(1.2) + floor(1.8) + abs(-3)" << 6.0;
    QTest::newRow("amdahl 8") << "1 / ((1 - p) + p / N)" << 1 / (0.05 + 0.95 / 8);
    QTest::newRow("ring factor") << "2 * (N - 1) / N" << 1.75;
    QTest::newRow("metric path") << "ranks[0].mem.params + x" << 12.0;
    QTest::newRow("selector path") << "points[ranks=8].speedup * 2" << 11.0;
  }
  void values() {
    QFETCH(QString, text);
    QFETCH(double, expected);
    const QHash<QString, double> vars{{"p", 0.95}, {"N", 8}, {"x", 2},
                                      {"ranks[0].mem.params", 10}, {"points[ranks=8].speedup", 5.5}};
    const Formula f(text);
    QVERIFY2(f.isValid(), qPrintable(f.error()));
    QString error;
    const auto v = f.evaluate(vars, &error);
    QVERIFY2(v.has_value(), qPrintable(error));
    QVERIFY2(std::abs(*v - expected) < 1e-12, qPrintable(QString("%1 = %2").arg(text).arg(*v)));
  }

  void amdahlNumbersOfTheLesson() {
    // The lesson's numbers: p = 0.95 gives 5.9x at 8, 15.4x at 64 and a 20x cap.
    QHash<QString, double> vars{{"p", 0.95}, {"N", 8}};
    QCOMPARE(QString::number(*evaluateFormula("1 / ((1 - p) + p / N)", vars), 'f', 1), QString("5.9"));
    vars["N"] = 64;
    QCOMPARE(QString::number(*evaluateFormula("1 / ((1 - p) + p / N)", vars), 'f', 1), QString("15.4"));
    QCOMPARE(QString::number(*evaluateFormula("1 / (1 - p)", vars), 'f', 1), QString("20.0"));
  }

  void variablesInOrder() {
    const Formula f("a * b + a / c(1) ");
    QVERIFY(!f.isValid());  // c is not a function
    const Formula g("x + ranks[1].bytes_sent - x * y");
    QCOMPARE(g.variables(), QStringList({"x", "ranks[1].bytes_sent", "y"}));
  }

  void errors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("empty") << "  " << "position 3: the formula is empty";
    QTest::newRow("unclosed") << "(1 + 2" << "position 7: expected ')' to close the '(' at position 1";
    QTest::newRow("dangling operator") << "1 +" << "position 4: expected a number, a name or '(' but the formula ends";
    QTest::newRow("bad char") << "2 $ 3" << "position 3: unexpected '$' after a complete expression";
    QTest::newRow("unknown function") << "foo(1)" << "position 1: unknown function 'foo'";
    QTest::newRow("arity") << "sqrt(1, 2)" << "position 1: sqrt() takes 1 argument(s), got 2";
    QTest::newRow("min arity") << "min(1)" << "position 1: min() takes at least 2 argument(s), got 1";
    QTest::newRow("function as name") << "1 + sqrt" << "position 5: 'sqrt' is a function";
    QTest::newRow("args") << "max(1 2)" << "position 7: expected ',' or ')'";
    QTest::newRow("bracket") << "a[0" << "position 2: expected ']'";
    QTest::newRow("bad number") << "1.2.3" << "position 1: '1.2.3' is not a number";
  }
  void errors() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const Formula f(text);
    QVERIFY(!f.isValid());
    QVERIFY2(f.error().startsWith(expected), qPrintable(f.error()));
    QString error;
    QVERIFY(!f.evaluate(QHash<QString, double>{}, &error));
    QCOMPARE(error, f.error());
  }

  void evaluationErrors() {
    QString error;
    QVERIFY(!evaluateFormula("1 + missing * 2", {}, &error));
    QCOMPARE(error, QString("position 5: 'missing' is not defined"));
    QVERIFY(!evaluateFormula("sqrt(0 - 4)", {}, &error));
    QVERIFY2(error.startsWith("position 1: sqrt of a negative number"), qPrintable(error));
    QVERIFY(!evaluateFormula("log(0)", {}, &error));
    QVERIFY2(error.startsWith("position 1: log of a number that is not positive"), qPrintable(error));
    // Division by zero is infinity, not an error: Amdahl's cap at p = 1.
    QVERIFY(std::isinf(*evaluateFormula("1 / (1 - 1)", {})));
  }

  void resolverSeesEachName() {
    const Formula f("a + b + a");
    QStringList asked;
    const auto v = f.evaluate([&](const QString& n) -> std::optional<double> {
      asked << n;
      return n == "a" ? 1.0 : 2.0;
    });
    QCOMPARE(*v, 4.0);
    QCOMPARE(asked, QStringList({"a", "b", "a"}));
  }
};

QTEST_GUILESS_MAIN(TestFormula)
#include "tst_lessons_formula.moc"
