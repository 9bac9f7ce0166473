// Formula: recursive-descent parser and evaluator for lesson formulas (see formula.h).
// See tests/lessons/tst_lessons_formula.cpp.
#include "formula.h"

// The grammar, lowest precedence first (^ binds tighter than unary minus, so -2^2 = -4):
//   expr  := term (('+' | '-') term)*
//   term  := unary (('*' | '/') unary)*
//   unary := ('-' | '+') unary | power
//   power := atom ('^' unary)?                    (right-associative: 2^3^2 = 2^9)
//   atom  := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//   name  := [A-Za-z_][A-Za-z0-9_]* ( '.' [A-Za-z_][A-Za-z0-9_]* | '[' [^\]]* ']' )*

#include <cmath>
#include <vector>

namespace paralab::lessons {

struct FormulaNode {
  enum Kind { Number, Variable, Negate, Add, Sub, Mul, Div, Pow, Call } kind = Number;
  double number = 0;
  QString name;  // variable or function
  int position = 0;  // 1-based, for evaluation errors
  std::vector<std::unique_ptr<FormulaNode>> args;
};

namespace {

struct FunctionInfo {
  const char* name;
  int minArgs, maxArgs;  // maxArgs -1: any number from minArgs
};
constexpr FunctionInfo kFunctions[] = {
    {"sqrt", 1, 1}, {"log", 1, 1},  {"log2", 1, 1},  {"exp", 1, 1}, {"abs", 1, 1},
    {"ceil", 1, 1}, {"floor", 1, 1}, {"min", 2, -1}, {"max", 2, -1},
};

const FunctionInfo* findFunction(const QString& name) {
  for (const FunctionInfo& f : kFunctions)
    if (name == QLatin1String(f.name)) return &f;
  return nullptr;
}

QString functionList() {
  QStringList names;
  for (const FunctionInfo& f : kFunctions) names << f.name;
  return names.join(", ");
}

bool isNameStart(QChar c) { return c.isLetter() || c == '_'; }
bool isNameChar(QChar c) { return c.isLetterOrNumber() || c == '_'; }

class Parser {
 public:
  explicit Parser(const QString& text) : m_s(text) {}

  std::unique_ptr<FormulaNode> parse() {
    skipSpace();
    if (atEnd()) return fail(m_pos, "the formula is empty");
    auto root = expr();
    if (!root) return nullptr;
    skipSpace();
    if (!atEnd()) return fail(m_pos, QString("unexpected '%1' after a complete expression").arg(m_s[m_pos]));
    return root;
  }
  QString error() const { return m_error; }
  QStringList variables() const { return m_variables; }

 private:
  using Node = std::unique_ptr<FormulaNode>;

  bool atEnd() const { return m_pos >= m_s.size(); }
  QChar peek() const { return atEnd() ? QChar() : m_s[m_pos]; }
  void skipSpace() {
    while (!atEnd() && m_s[m_pos].isSpace()) ++m_pos;
  }
  Node fail(int pos, const QString& what) {
    if (m_error.isEmpty()) m_error = QString("position %1: %2").arg(pos + 1).arg(what);
    return nullptr;
  }
  static Node make(FormulaNode::Kind k, int pos) {
    auto n = std::make_unique<FormulaNode>();
    n->kind = k;
    n->position = pos + 1;
    return n;
  }
  static Node binary(FormulaNode::Kind k, int pos, Node a, Node b) {
    Node n = make(k, pos);
    n->args.push_back(std::move(a));
    n->args.push_back(std::move(b));
    return n;
  }

  Node expr() {
    Node left = term();
    while (left) {
      skipSpace();
      const QChar c = peek();
      if (c != '+' && c != '-') break;
      const int at = m_pos++;
      Node right = term();
      if (!right) return nullptr;
      left = binary(c == '+' ? FormulaNode::Add : FormulaNode::Sub, at, std::move(left), std::move(right));
    }
    return left;
  }

  Node term() {
    Node left = unary();
    while (left) {
      skipSpace();
      const QChar c = peek();
      if (c != '*' && c != '/') break;
      const int at = m_pos++;
      Node right = unary();
      if (!right) return nullptr;
      left = binary(c == '*' ? FormulaNode::Mul : FormulaNode::Div, at, std::move(left), std::move(right));
    }
    return left;
  }

  Node unary() {
    skipSpace();
    if (peek() == '-' || peek() == '+') {
      const int at = m_pos;
      const bool negate = m_s[m_pos++] == '-';
      Node operand = unary();
      if (!operand || !negate) return operand;
      Node n = make(FormulaNode::Negate, at);
      n->args.push_back(std::move(operand));
      return n;
    }
    return power();
  }

  Node power() {
    Node base = atom();
    if (!base) return nullptr;
    skipSpace();
    if (peek() != '^') return base;
    const int at = m_pos++;
    Node exponent = unary();
    if (!exponent) return nullptr;
    return binary(FormulaNode::Pow, at, std::move(base), std::move(exponent));
  }

  Node atom() {
    skipSpace();
    const int start = m_pos;
    if (atEnd()) return fail(m_pos, "expected a number, a name or '(' but the formula ends");
    const QChar c = peek();
    if (c.isDigit() || c == '.') return number();
    if (c == '(') {
      ++m_pos;
      Node inner = expr();
      if (!inner) return nullptr;
      skipSpace();
      if (peek() != ')') return fail(m_pos, QString("expected ')' to close the '(' at position %1").arg(start + 1));
      ++m_pos;
      return inner;
    }
    if (isNameStart(c)) return nameOrCall();
    return fail(m_pos, QString("expected a number, a name or '(' but found '%1'").arg(c));
  }

  Node number() {
    const int start = m_pos;
    while (!atEnd() && (peek().isDigit() || peek() == '.')) ++m_pos;
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      int p = m_pos + 1;
      if (p < m_s.size() && (m_s[p] == '+' || m_s[p] == '-')) ++p;
      if (p < m_s.size() && m_s[p].isDigit()) {
        m_pos = p;
        while (!atEnd() && peek().isDigit()) ++m_pos;
      }
    }
    bool ok = false;
    const double v = m_s.mid(start, m_pos - start).toDouble(&ok);
    if (!ok) return fail(start, QString("'%1' is not a number").arg(m_s.mid(start, m_pos - start)));
    Node n = make(FormulaNode::Number, start);
    n->number = v;
    return n;
  }

  Node nameOrCall() {
    const int start = m_pos;
    while (!atEnd() && isNameChar(peek())) ++m_pos;
    const QString head = m_s.mid(start, m_pos - start);
    skipSpace();
    if (peek() == '(') return call(head, start);
    m_pos = start + head.size();
    // A metric path continues with .field or [index] / [key=value].
    while (!atEnd()) {
      if (peek() == '.' && m_pos + 1 < m_s.size() && isNameStart(m_s[m_pos + 1])) {
        ++m_pos;
        while (!atEnd() && isNameChar(peek())) ++m_pos;
      } else if (peek() == '[') {
        const int open = m_pos;
        while (!atEnd() && peek() != ']') ++m_pos;
        if (atEnd()) return fail(open, "expected ']' to close this '['");
        ++m_pos;
      } else {
        break;
      }
    }
    const QString name = m_s.mid(start, m_pos - start);
    if (findFunction(name)) return fail(start, QString("'%1' is a function: write %1(...)").arg(name));
    Node n = make(FormulaNode::Variable, start);
    n->name = name;
    if (!m_variables.contains(name)) m_variables << name;
    return n;
  }

  Node call(const QString& name, int start) {
    const FunctionInfo* f = findFunction(name);
    if (!f) return fail(start, QString("unknown function '%1' (known: %2)").arg(name, functionList()));
    ++m_pos;  // '('
    Node n = make(FormulaNode::Call, start);
    n->name = name;
    while (true) {
      Node arg = expr();
      if (!arg) return nullptr;
      n->args.push_back(std::move(arg));
      skipSpace();
      if (peek() == ',') {
        ++m_pos;
        continue;
      }
      if (peek() == ')') {
        ++m_pos;
        break;
      }
      return fail(m_pos, QString("expected ',' or ')' in the arguments of %1(...) begun at position %2")
                             .arg(name)
                             .arg(start + 1));
    }
    const int count = int(n->args.size());
    if (count < f->minArgs || (f->maxArgs >= 0 && count > f->maxArgs)) {
      const QString wanted = f->maxArgs < 0   ? QString("at least %1").arg(f->minArgs)
                             : f->minArgs == f->maxArgs ? QString::number(f->minArgs)
                                                        : QString("%1 to %2").arg(f->minArgs).arg(f->maxArgs);
      return fail(start, QString("%1() takes %2 argument(s), got %3").arg(name, wanted).arg(count));
    }
    return n;
  }

  QString m_s;
  int m_pos = 0;
  QString m_error;
  QStringList m_variables;
};

std::optional<double> eval(const FormulaNode& n, const Formula::Resolver& resolve, QString* error) {
  auto failAt = [&](const QString& what) -> std::optional<double> {
    if (error) *error = QString("position %1: %2").arg(n.position).arg(what);
    return std::nullopt;
  };
  std::vector<double> a;
  for (const auto& arg : n.args) {
    const auto v = eval(*arg, resolve, error);
    if (!v) return std::nullopt;
    a.push_back(*v);
  }
  switch (n.kind) {
    case FormulaNode::Number: return n.number;
    case FormulaNode::Variable: {
      const auto v = resolve ? resolve(n.name) : std::nullopt;
      if (!v) return failAt(QString("'%1' is not defined").arg(n.name));
      return *v;
    }
    case FormulaNode::Negate: return -a[0];
    case FormulaNode::Add: return a[0] + a[1];
    case FormulaNode::Sub: return a[0] - a[1];
    case FormulaNode::Mul: return a[0] * a[1];
    case FormulaNode::Div: return a[0] / a[1];  // x/0 is ±inf: Amdahl's cap at p = 1 is infinite
    case FormulaNode::Pow: return std::pow(a[0], a[1]);
    case FormulaNode::Call: {
      const QString& f = n.name;
      if (f == "sqrt") {
        if (a[0] < 0) return failAt(QString("sqrt of a negative number (%1)").arg(a[0]));
        return std::sqrt(a[0]);
      }
      if (f == "log" || f == "log2") {
        if (a[0] <= 0) return failAt(QString("%1 of a number that is not positive (%2)").arg(f).arg(a[0]));
        return f == "log" ? std::log(a[0]) : std::log2(a[0]);
      }
      if (f == "exp") return std::exp(a[0]);
      if (f == "abs") return std::abs(a[0]);
      if (f == "ceil") return std::ceil(a[0]);
      if (f == "floor") return std::floor(a[0]);
      double r = a[0];
      for (double v : a) r = f == "min" ? std::min(r, v) : std::max(r, v);
      return r;
    }
  }
  return failAt("internal error: unknown node");
}

}  // namespace

Formula::Formula(const QString& text) : m_text(text) {
  Parser p(text);
  m_root = p.parse();
  if (!m_root) m_error = p.error();
  else m_variables = p.variables();
}
Formula::~Formula() = default;
Formula::Formula(Formula&&) noexcept = default;
Formula& Formula::operator=(Formula&&) noexcept = default;

std::optional<double> Formula::evaluate(const Resolver& resolve, QString* error) const {
  if (!m_root) {
    if (error) *error = m_error;
    return std::nullopt;
  }
  return eval(*m_root, resolve, error);
}

std::optional<double> Formula::evaluate(const QHash<QString, double>& vars, QString* error) const {
  return evaluate([&vars](const QString& name) -> std::optional<double> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return *it;
  }, error);
}

std::optional<double> evaluateFormula(const QString& text, const QHash<QString, double>& vars,
                                      QString* error) {
  return Formula(text).evaluate(vars, error);
}

}  // namespace paralab::lessons
