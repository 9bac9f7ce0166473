// Formula: the expression language of lesson predictions and comparisons — numbers, names (`p`,
// or metric paths like `ranks[0].mem.params`), + - * / ^, parentheses, sqrt log log2 exp min max
// ceil floor abs. Recursive descent; errors name their 1-based position.
// See tests/lessons/tst_lessons_formula.cpp.
#pragma once
#include <QHash>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <optional>

namespace paralab::lessons {

struct FormulaNode;

// A parsed expression. Parse once, evaluate as often as needed (e.g. once per measured step).
class Formula {
 public:
  // Looks a variable up; nullopt means "not defined" (an error naming it).
  using Resolver = std::function<std::optional<double>(const QString& name)>;

  // Parses `text`; on failure isValid() is false and error() says what and where.
  explicit Formula(const QString& text);
  ~Formula();
  Formula(Formula&&) noexcept;
  Formula& operator=(Formula&&) noexcept;

  bool isValid() const { return m_root != nullptr; }
  QString text() const { return m_text; }
  // "position 7: expected ')' to close the '(' at position 3", or "" when valid.
  QString error() const { return m_error; }
  // The variable names the expression reads, in order of first use.
  QStringList variables() const { return m_variables; }

  // The value, or nullopt with `error` set (an undefined variable, a function's domain).
  std::optional<double> evaluate(const Resolver& resolve, QString* error = nullptr) const;
  std::optional<double> evaluate(const QHash<QString, double>& vars, QString* error = nullptr) const;

 private:
  QString m_text;
  QString m_error;
  QStringList m_variables;
  std::unique_ptr<FormulaNode> m_root;
};

// One-shot convenience: parse and evaluate; the error of either step goes to `error`.
std::optional<double> evaluateFormula(const QString& text, const QHash<QString, double>& vars,
                                      QString* error = nullptr);

}  // namespace paralab::lessons
