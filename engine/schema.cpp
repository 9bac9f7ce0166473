// How a setting of the schema reads, writes and checks its value (schema.h). The table itself
// is in run_settings.cpp. See tests/engine/tst_schema.cpp.
#include "schema.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace paralab {

// [SECTION] Building a row

Setting& Setting::in(std::string groupName, std::string labelText) {
  group = std::move(groupName);
  label = std::move(labelText);
  return *this;
}
Setting& Setting::describe(std::string line, std::string explanation) {
  help = std::move(line);
  more = std::move(explanation);
  return *this;
}
Setting& Setting::range(double lo, double hi) {
  min = lo;
  max = hi;
  return *this;
}
Setting& Setting::above(double lo, double hi) {
  range(lo, hi);
  minOpen = true;
  return *this;
}
Setting& Setting::upTo(std::string other, std::function<double(const RunConfig&)> maxOfOther) {
  maxName = std::move(other);
  maxOf = std::move(maxOfOther);
  return *this;
}
Setting& Setting::zeroIs(std::string meaning) {
  zeroMeans = std::move(meaning);
  return *this;
}
Setting& Setting::units(std::string u, int spinStep) {
  unit = std::move(u);
  step = spinStep;
  return *this;
}
Setting& Setting::oneOf(std::vector<SettingChoice> fixed) {
  choices = [fixed = std::move(fixed)](const RunConfig&) { return fixed; };
  return *this;
}
Setting& Setting::oneOf(std::function<std::vector<SettingChoice>(const RunConfig&)> provider,
                        std::string follows) {
  choices = std::move(provider);
  choicesFollow = std::move(follows);
  return *this;
}
Setting& Setting::withChoiceNoun(std::string noun) {
  choiceNoun = std::move(noun);
  return *this;
}
Setting& Setting::shaped(std::string formWords, std::function<Why(const RunConfig&)> check) {
  form = std::move(formWords);
  formCheck = std::move(check);
  return *this;
}
Setting& Setting::appliesWhen(std::function<Why(const RunConfig&)> why) {
  notApplicable = std::move(why);
  return *this;
}
Setting& Setting::onlyParallel() {
  parallelOnly = true;
  return *this;
}
Setting& Setting::fixedPerRun() {
  live = false;
  return *this;
}
Setting& Setting::notInWindow() {
  inWindow = false;
  return *this;
}
Setting& Setting::partOfAChoice(bool hiddenElsewhere) {
  ignoredWhereNotApplicable = true;
  hideUnlessApplies = hiddenElsewhere;
  return *this;
}

// [SECTION] Values

namespace {

// A RunConfig member's type as the schema stores it.
template <class T>
SettingValue stored(const T& v) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>)
    return v;
  else if constexpr (std::is_floating_point_v<T>)
    return double(v);
  else
    return int64_t(v);
}
template <class T>
T loaded(const SettingValue& v) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>)
    return std::get<T>(v);
  else if constexpr (std::is_floating_point_v<T>)
    return T(std::get<double>(v));
  else
    return T(std::get<int64_t>(v));
}
template <class T>
constexpr SettingType typeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return SettingType::Switch;
  else if constexpr (std::is_same_v<T, std::string>)
    return SettingType::Text;
  else if constexpr (std::is_floating_point_v<T>)
    return SettingType::Real;
  else
    return SettingType::Integer;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// An integer the field cannot hold is refused as it is read (it would wrap around); any other
// value outside the setting's range is refused by RunConfig::validate(), the same for a flag,
// a --config file and the window.
void checkReadRange(const Setting& s, double v, const std::string& shown) {
  if (s.type == SettingType::Integer && !(v >= s.holdsMin && v <= s.holdsMax))
    throw ConfigError(s.key + ": " + shown +
                      " is out of range (allowed: " + s.allowedText(RunConfig{}) + ")");
}

}  // namespace

template <class T>
Setting field(std::string key, T RunConfig::*member) {
  Setting s;
  s.key = std::move(key);
  s.type = typeOf<T>();
  s.get = [member](const RunConfig& c) { return stored(c.*member); };
  s.set = [member](RunConfig& c, const SettingValue& v) { c.*member = loaded<T>(v); };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    s.holdsMin = double(std::numeric_limits<T>::min());
    s.holdsMax = double(std::numeric_limits<T>::max());
  }
  return s;
}
template Setting field(std::string, int RunConfig::*);
template Setting field(std::string, uint64_t RunConfig::*);
template Setting field(std::string, double RunConfig::*);
template Setting field(std::string, bool RunConfig::*);
template Setting field(std::string, std::string RunConfig::*);

// An enum member reads and writes its table's words (run_choices.h), and its choices are that
// table's rows. A word the table does not hold is kept in RunConfig::extra under the key, so
// check() names it as it names any setting's bad value, when validate() runs: "model: 'resnet'
// is not one of mlp, moe, gpt".
template <class E>
requires std::is_enum_v<E> Setting field(std::string key, E RunConfig::*member) {
  Setting s;
  s.key = key;
  s.type = SettingType::Text;
  s.get = [member, key](const RunConfig& c) -> SettingValue {
    if (const auto bad = c.extra.find(key); bad != c.extra.end()) return bad->second;
    return nameOf(c.*member);
  };
  s.set = [member, key](RunConfig& c, const SettingValue& v) {
    const std::string& word = std::get<std::string>(v);
    if (const std::optional<E> value = fromName<E>(word)) {
      c.*member = *value;
      c.extra.erase(key);
    } else {
      c.extra[key] = word;
    }
  };
  std::vector<SettingChoice> fixed;
  for (const ChoiceName<E>& row : choiceTable(E{}))
    fixed.push_back({.value = row.name, .label = row.label, .summary = row.summary});
  s.oneOf(std::move(fixed));
  return s;
}
template Setting field(std::string, ModelKind RunConfig::*);
template Setting field(std::string, Device RunConfig::*);
template Setting field(std::string, Backend RunConfig::*);
template Setting field(std::string, Recompute RunConfig::*);
template Setting field(std::string, Ffn RunConfig::*);
template Setting field(std::string, DpVersion RunConfig::*);
template Setting field(std::string, CpOrder RunConfig::*);
template Setting field(std::string, CpKind RunConfig::*);
template Setting field(std::string, Scaling RunConfig::*);
template Setting field(std::string, Dtype RunConfig::*);
template Setting field(std::string, ZeroShard RunConfig::*);

Setting extraSetting(std::string key, SettingType type, SettingValue byDefault) {
  Setting s;
  s.key = key;
  s.type = type;
  s.holdsMin = double(std::numeric_limits<int64_t>::min());
  s.holdsMax = double(std::numeric_limits<int64_t>::max());
  s.get = [key, byDefault](const RunConfig& c) {
    const auto it = c.extra.find(key);
    return it == c.extra.end() ? byDefault : it->second;
  };
  s.set = [key, byDefault](RunConfig& c, const SettingValue& v) {
    if (v == byDefault)
      c.extra.erase(key);  // equal configurations compare equal
    else
      c.extra[key] = v;
  };
  return s;
}

std::string formatValue(const SettingValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return number(*d);
  return std::get<std::string>(v);
}

SettingValue parseValue(const Setting& s, const std::string& text) {
  const auto bad = [&] {
    return ConfigError(s.key + ": expected " + typeWords(s.type) + ", got '" + text + "'");
  };
  switch (s.type) {
    case SettingType::Switch:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      throw bad();
    case SettingType::Integer: {
      int64_t v = 0;
      const char* end = text.data() + text.size();
      const auto [at, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec == std::errc::result_out_of_range) {
        if (ec == std::errc::result_out_of_range) checkReadRange(s, HUGE_VAL, text);
        throw bad();
      }
      if (ec != std::errc() || at != end) throw bad();
      checkReadRange(s, double(v), text);
      return v;
    }
    case SettingType::Real: {
      double v = 0;
      const char* end = text.data() + text.size();
      const auto [at, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || at != end || !std::isfinite(v)) throw bad();
      return v;
    }
    case SettingType::Text:
      if (text.empty())
        throw ConfigError(s.key + ": is empty (allowed: " + s.allowedText(RunConfig{}) + ")");
      return text;
  }
  throw bad();
}

// A JSON value as an error line shows it: invalid UTF-8 replaced, a long value cut short.
static std::string shown(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

SettingValue fromJson(const Setting& s, const nlohmann::json& j) {
  const auto bad = [&] {
    return ConfigError(s.key + ": expected " + typeWords(s.type) + ", got " + shown(j));
  };
  switch (s.type) {
    case SettingType::Switch:
      if (!j.is_boolean()) throw bad();
      return j.get<bool>();
    case SettingType::Integer: {
      if (!j.is_number_integer()) throw bad();  // not a boolean, not 2.5
      if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX))
        checkReadRange(s, HUGE_VAL, shown(j));
      const int64_t v = j.get<int64_t>();
      checkReadRange(s, double(v), shown(j));
      return v;
    }
    case SettingType::Real: {
      if (!j.is_number()) throw bad();
      return j.get<double>();
    }
    case SettingType::Text:
      if (!j.is_string()) throw bad();
      return parseValue(s, j.get<std::string>());
  }
  throw bad();
}

nlohmann::json toJson(const SettingValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

const char* typeWords(SettingType t) {
  switch (t) {
    case SettingType::Switch:
      return "true or false";
    case SettingType::Integer:
      return "an integer";
    case SettingType::Real:
      return "a number";
    case SettingType::Text:
      return "a string";
  }
  return "";
}

// [SECTION] Checks

std::string Setting::allowedText(const RunConfig& c) const {
  if (choices) {
    std::string out;
    for (const SettingChoice& ch : choices(c)) out += (out.empty() ? "" : ", ") + ch.value;
    return out;
  }
  if (type == SettingType::Switch) return "true, false";
  if (type == SettingType::Text) return form.empty() ? "a non-empty text" : form;
  const std::string hi = maxOf ? maxName : number(max);
  std::string text =
      minOpen ? "more than " + number(min) + ", up to " + hi : number(min) + ".." + hi;
  if (!zeroMeans.empty()) text += "; 0 = " + zeroMeans;
  return text;
}

Setting::Why Setting::check(const RunConfig& c) const {
  const SettingValue v = get(c);
  const std::string shown = formatValue(v);
  if (choices) {
    for (const SettingChoice& ch : choices(c))
      if (ch.value == shown) return std::nullopt;
    if (!choiceNoun.empty())
      return key + ": " + shown + " is not " + choiceNoun + " (allowed: " + allowedText(c) + ")";
    return key + ": '" + shown + "' is not one of " + allowedText(c);
  }
  if (type == SettingType::Text && shown.empty()) return key + ": is empty";
  if (formCheck) return formCheck(c);
  if (type != SettingType::Integer && type != SettingType::Real) return std::nullopt;
  const double x = type == SettingType::Real ? std::get<double>(v) : double(std::get<int64_t>(v));
  const double hi = maxOf ? std::min(max, maxOf(c)) : max;
  if (!std::isfinite(x) || x < min || x > hi || (minOpen && x == min))
    return key + ": " + shown + " is out of range (allowed: " + allowedText(c) +
           (maxOf ? " = " + number(hi) : "") + ")";
  return std::nullopt;
}

Setting::Why inapplicable(const Setting& s, const RunConfig& c) {
  if (!s.notApplicable || s.ignoredWhereNotApplicable || s.isDefault(c)) return std::nullopt;
  if (auto why = s.notApplicable(c)) return s.key + ": " + *why;
  return std::nullopt;
}

void datasetFollowsModel(RunConfig& config) {
  const std::vector<SettingChoice> choices = findSetting("dataset")->choices(config);
  for (const SettingChoice& c : choices)
    if (c.value == config.dataset) return;
  config.dataset = choices.front().value;
}

const Setting* findSetting(std::string_view key) { return findSetting(runSettings(), key); }

const Setting* findSetting(const std::vector<Setting>& table, std::string_view key) {
  for (const Setting& s : table)
    if (s.key == key) return &s;
  return nullptr;
}

const std::string* SettingsInEffect::why(std::string_view key) const {
  for (const auto& [k, reason] : unavailable)
    if (k == key) return &reason;
  return nullptr;
}

SettingsInEffect settingsInEffect(const RunConfig& shown, bool serial) {
  SettingsInEffect out{shown, {}};
  for (const Setting& s : runSettings()) {
    Setting::Why why;
    if (serial && s.parallelOnly)
      why = "serial execution trains on one rank (choose Parallel)";
    else if (s.notApplicable)
      why = s.notApplicable(out.config);
    if (!why) continue;
    s.reset(out.config);
    out.unavailable.emplace_back(s.key, *why);
  }
  return out;
}

bool isSavedConfig(const std::set<std::string>& keys) {
  for (const Setting& s : runSettings())
    if (!keys.contains(s.key)) return false;
  return true;
}

Setting::Why refusedAsGiven(const RunConfig& c, const std::set<std::string>& flags,
                            const std::set<std::string>& configKeys) {
  for (const Setting& s : runSettings())
    if (auto err = s.check(c)) return err;
  return notApplicableAsGiven(c, flags, configKeys);
}

Setting::Why notApplicableAsGiven(const RunConfig& c, const std::set<std::string>& flags,
                                  const std::set<std::string>& configKeys) {
  const bool saved = isSavedConfig(configKeys);
  const auto given = [&](const Setting& s) {
    return flags.contains(s.key) ||
           (!saved && configKeys.contains(s.key) && !s.isDefault(c));
  };
  for (const auto& [key, why] : settingsInEffect(c, false).unavailable)
    if (const Setting* s = findSetting(key); s->ignoredWhereNotApplicable && given(*s))
      return key + ": " + why;
  return std::nullopt;
}

}  // namespace paralab
