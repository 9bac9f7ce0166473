// Bad input of any kind, generated: thousands of command lines and --config objects built from
// the settings table (right values, edge values, wrong types, empty, garbage, invalid UTF-8,
// unknown keys, deep nesting), each parsed, checked for settings given where they do not apply
// and validated as paralab-run does. The contract: a run that validates, or one line that names
// the setting at fault; never another exception.
// Deterministic (fixed seed), well under a minute. Run: ctest -R tst_fuzz --output-on-failure
#include <QtTest>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/run_options.h"
#include "config.h"
#include "schema.h"

using namespace paralab;

namespace {

constexpr int kCases = 10000;

std::set<std::string> settingKeys() {
  std::set<std::string> keys = {"config"};
  for (const Setting& s : runSettings()) keys.insert(s.key);
  return keys;
}

// The one-line contract: "key: what is wrong (allowed: ...)", the key a setting's.
QString badLine(const std::string& message, const std::set<std::string>& keys) {
  if (message.empty()) return "an empty message";
  if (message.find('\n') != std::string::npos) return "more than one line";
  const size_t colon = message.find(": ");
  std::string key = colon == std::string::npos ? "" : message.substr(0, colon);
  if (key.rfind("--", 0) == 0) key = key.substr(2);
  if (key.rfind("no-", 0) == 0 && !keys.count(key)) key = key.substr(3);
  if (!keys.count(key)) return "does not start with a setting's name";
  return {};
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : m_rng(seed) {}

  int below(int n) { return int(m_rng() % uint32_t(n)); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(below(int(v.size())))];
  }

  // A value as typed after --key: right, at the edges, or wrong.
  std::string text(const Setting& s) {
    static const std::vector<std::string> garbage = {
        "", " ", "abc", "\xff\xfe", "é", "1e400", "-", "--", "0x10", "1,5", "NaN", "true", "null"};
    if (below(4) == 0) return pick(garbage);
    switch (s.type) {
      case SettingType::Switch:
        return pick(std::vector<std::string>{"true", "false", "1", "0", "yes", "maybe"});
      case SettingType::Integer: {
        const double lo = s.min, hi = s.max > s.min ? s.max : 1024;
        const std::vector<std::string> edges = {
            std::to_string(int64_t(lo)), std::to_string(int64_t(lo) - 1),
            std::to_string(int64_t(hi)), std::to_string(int64_t(hi) + 1), "0", "-1", "2", "4",
            "99999999999999999999", "1.5", "1e3", " 4"};
        if (below(2) == 0) return pick(edges);
        return std::to_string(int64_t(lo) + below(int(std::min(hi - lo, 100.0)) + 1));
      }
      case SettingType::Real: {
        const std::vector<std::string> edges = {"0", "-0.1", "1e-9", "1e9", "inf", "-inf",
                                                "nan", "0.5", "10", "11", "1e308", "5e-324"};
        if (below(2) == 0) return pick(edges);
        return std::to_string(s.min + (s.max - s.min) * below(1000) / 1000.0);
      }
      case SettingType::Text:
        if (s.choices && below(3) != 0) {
          const auto choices = s.choices(RunConfig{});
          if (!choices.empty()) return pick(choices).value;
        }
        return pick(std::vector<std::string>{"bogus", "a b", "/nonexistent", "/", "."});
    }
    return {};
  }

  // A value of the setting's own type, mostly in range.
  nlohmann::json typed(const Setting& s) {
    const double hi = s.max > s.min ? s.max : 64;
    switch (s.type) {
      case SettingType::Switch: return below(2) == 0;
      case SettingType::Integer: return int64_t(s.min) + below(int(std::min(hi - s.min, 64.0)) + 1);
      case SettingType::Real: return s.min + (hi - s.min) * (1 + below(999)) / 1000.0;
      case SettingType::Text: return text(s);
    }
    return nullptr;
  }

  // A JSON value of any type, for a --config key.
  nlohmann::json json(const Setting* s, int depth = 0) {
    if (s && depth == 0 && below(2) == 0) return typed(*s);
    switch (below(depth > 3 ? 6 : 9)) {
      case 0: return nullptr;
      case 1: return below(2) == 0;
      case 2: return int64_t(below(20000)) - 10;
      case 3: return below(1000) / 7.0;
      case 4: return s ? text(*s) : std::string("x");
      case 5: return std::pow(10.0, below(400) - 200);
      case 6: return nlohmann::json::array({json(s, depth + 1)});
      case 7: return nlohmann::json{{"value", json(s, depth + 1)}};
      default: return s ? text(*s) : std::string("");
    }
  }

 private:
  std::mt19937 m_rng;
};

}  // namespace

class TstFuzz : public QObject {
  Q_OBJECT

 private slots:
  void commandLines() {
    const auto keys = settingKeys();
    const auto& settings = runSettings();
    Generator g(20261125);
    int refused = 0, valid = 0;
    for (int n = 0; n < kCases; ++n) {
      std::vector<std::string> args = {"paralab-run"};
      for (int f = 1 + g.below(5); f > 0; --f) {
        if (g.below(20) == 0) {
          args.push_back(g.pick(std::vector<std::string>{"--bogus", "-x", "--", "--hidden="}));
          continue;
        }
        const Setting& s = g.pick(settings);
        if (s.type == SettingType::Switch) {
          args.push_back((g.below(2) ? "--" : "--no-") + s.key);
          if (g.below(5) == 0) args.push_back(g.text(s));  // a stray value
        } else if (g.below(10) == 0) {
          args.push_back("--" + s.key);  // the value missing
        } else {
          args.push_back("--" + s.key);
          args.push_back(g.text(s));
        }
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      QString failure;
      std::string message;
      try {
        CLI::App app;
        RunConfig c;
        addRunConfigOptions(app, c);
        app.parse(int(argv.size()), argv.data());
        if (auto err = refusedAsGiven(c, givenFlags(app), {}); err || (err = c.validate())) {
          message = *err;
          failure = badLine(message, keys);
        }
      } catch (const CLI::ParseError& e) {
        message = e.what();  // CLI11's own words name the flag or the stray argument
        if (message.empty() || message.find('\n') != std::string::npos)
          failure = "CLI11 error not one line";
      } catch (const ConfigError& e) {
        message = e.what();
        failure = badLine(message, keys);
      } catch (const std::exception& e) {
        failure = QString("uncaught %1: %2").arg(typeid(e).name(), e.what());
      }
      message.empty() ? ++valid : ++refused;
      if (!failure.isEmpty()) {
        QStringList line;
        for (const std::string& a : args) line << QString::fromStdString(a);
        QFAIL(qPrintable(QString("case %1: %2\n  %3\n  -> %4")
                             .arg(n)
                             .arg(failure, line.join(' '), QString::fromStdString(message))));
      }
    }
    qInfo("%d command lines: %d refused in one line naming the setting, %d valid", kCases, refused,
          valid);
    // Both sides of the contract exercised (every refusal a setting can draw makes valid lines rarer).
    QVERIFY(refused > kCases / 4 && valid > kCases / 25);
  }

  void configObjects() {
    const auto keys = settingKeys();
    const auto& settings = runSettings();
    Generator g(1125);
    int refused = 0, valid = 0;
    for (int n = 0; n < kCases; ++n) {
      nlohmann::json j = nlohmann::json::object();
      for (int f = 1 + g.below(5); f > 0; --f) {
        if (g.below(20) == 0) {
          j[g.pick(std::vector<std::string>{"bogus", "Hidden", "", "hidden ", "--hidden"})] = 1;
          continue;
        }
        const Setting& s = g.pick(settings);
        j[s.key] = g.json(&s);
      }
      QString failure;
      std::string message;
      try {
        RunConfig c;
        applyJson(c, j);
        std::set<std::string> given;
        for (const auto& [key, value] : j.items()) given.insert(key);
        if (auto err = refusedAsGiven(c, {}, given); err || (err = c.validate())) {
          message = *err;
          failure = badLine(message, keys);
        }
      } catch (const ConfigError& e) {
        message = e.what();
        failure = badLine(message, keys);
      } catch (const std::exception& e) {
        failure = QString("uncaught %1: %2").arg(typeid(e).name(), e.what());
      }
      message.empty() ? ++valid : ++refused;
      if (!failure.isEmpty())
        QFAIL(qPrintable(QString("case %1: %2\n  %3\n  -> %4")
                             .arg(n)
                             .arg(failure, QString::fromStdString(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
                                  QString::fromStdString(message))));
    }
    qInfo("%d --config objects: %d refused in one line naming the setting, %d valid", kCases,
          refused, valid);
    QVERIFY(refused > kCases / 4 && valid > kCases / 50);
  }
};

QTEST_GUILESS_MAIN(TstFuzz)
#include "tst_fuzz.moc"
