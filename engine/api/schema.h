// The run settings, each described once: its flag (= JSON key), type, range or allowed values
// (or a provider such as the strategy table), help, the window's label and group, and when it
// applies. The default is RunConfig's. The command line (cli/run_options.cpp), --config JSON
// and validation (config.cpp), live reconfiguration (session.cpp) and the window's controls
// (app/panels/config_panel.cpp) are all made from this table. See tests/engine/tst_schema.cpp.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config.h"

namespace paralab {

enum class SettingType { Switch, Integer, Real, Text };

struct SettingChoice {
  std::string value;    // as typed on the command line
  std::string label;    // as the window lists it ("" = the value)
  std::string summary;  // what it means: the entry's tooltip
};

struct Setting {
  using Why = std::optional<std::string>;

  std::string key;  // the flag without "--" and the JSON key: "hidden", "data-dir"
  // Whose table: "run" (runSettings(): a run's configuration), "program" (programSettings():
  // what paralab-run does with the run), "projection" (projectionSettings(): the cluster
  // --project projects onto) or "bench" (jobs::benchSettings(): a lesson's benchmark block).
  std::string owner = "run";
  SettingType type = SettingType::Text;
  std::string group;  // the window's group: "Model", "Parallelism", ...
  std::string label;  // the window's label: "Hidden width H"
  std::string help;   // one line: --help, and the first line of the window's tooltip
  std::string more;   // the tooltip's explanation after that line ("" for none)
  // Integer and Real: the allowed range, inclusive (minOpen: the minimum itself is not
  // allowed); maxOf, when set, is a maximum that follows another setting, named maxName.
  double min = 0, max = 0;
  bool minOpen = false;
  std::function<double(const RunConfig&)> maxOf;
  std::string maxName;
  std::string zeroMeans;  // Integer: what 0 stands for ("auto", "never", "until stopped")
  std::string unit;       // after the value in the window: "steps", "MiB", "s"
  int step = 1;           // the window's spin step
  // Text: the allowed values (nullptr: any non-empty text). A provider, so tables the engine
  // already has (strategies, link profiles, a device's GEMM ladder) are not copied here.
  std::function<std::vector<SettingChoice>(const RunConfig&)> choices;
  std::string choicesFollow;  // the setting the choices depend on ("device" for kernel)
  std::string choiceNoun;     // "a ZeRO stage": "zero: 4 is not a ZeRO stage (allowed: ...)"
  // Text with a form of its own ("RANK=FACTOR"): the form in words, and the check that reads
  // it ("straggler: rank 5 does not exist (allowed: 0..3)").
  std::string form;
  std::function<Why(const RunConfig&)> formCheck;
  // Why the setting does not apply to a configuration (nullopt: it applies). It reads only
  // settings earlier in the table, so one walk in table order settles every setting.
  std::function<Why(const RunConfig&)> notApplicable;
  bool parallelOnly = false;       // matters only with several ranks (the window's Serial mode)
  bool live = true;                // may change under a running training (Session::reconfigure)
  bool inWindow = true;            // the window's settings panel has a control for it
  bool hideUnlessApplies = false;  // the window shows it only where it applies (servers)
  // A parameter of a choice (--servers of a parameter server, --microbatches of a pipeline):
  // where the choice is not made validate() keeps the value at no effect, as a saved
  // configuration carries it for other strategies; given by hand there it is refused
  // (refusedAsGiven). Other settings are refused where they do not apply whatever their source
  // (ZeRO under gossip asks for something that cannot be).
  bool ignoredWhereNotApplicable = false;
  std::function<SettingValue(const RunConfig&)> get;
  std::function<void(RunConfig&, const SettingValue&)> set;
  double holdsMin = 0, holdsMax = 0;  // Integer: what the field's C++ type can hold

  // [SECTION] Building a row of the table: field("hidden", &RunConfig::hidden).in(...)...
  Setting& in(std::string groupName, std::string labelText);
  Setting& describe(std::string line, std::string explanation = "");
  Setting& range(double lo, double hi);
  Setting& above(double lo, double hi);  // lo < value <= hi
  Setting& upTo(std::string other, std::function<double(const RunConfig&)> maxOfOther);
  Setting& zeroIs(std::string meaning);
  Setting& units(std::string u, int spinStep = 1);
  Setting& oneOf(std::vector<SettingChoice> fixed);
  Setting& oneOf(std::function<std::vector<SettingChoice>(const RunConfig&)> provider,
                 std::string follows = "");
  Setting& withChoiceNoun(std::string noun);
  Setting& shaped(std::string formWords, std::function<Why(const RunConfig&)> check);
  Setting& appliesWhen(std::function<Why(const RunConfig&)> why);
  Setting& onlyParallel();
  Setting& fixedPerRun();  // changing it needs a new run
  Setting& notInWindow();
  // A parameter of a choice (ignoredWhereNotApplicable), by default shown only where it applies.
  Setting& partOfAChoice(bool hiddenElsewhere = true);

  // [SECTION] Reading and checking values
  bool isDefault(const RunConfig& c) const { return get(c) == get(RunConfig{}); }
  void reset(RunConfig& c) const { set(c, get(RunConfig{})); }
  // The allowed values or range in words: "1..64", "mlp | moe", "0 < lr <= 10".
  std::string allowedText(const RunConfig& c) const;
  // Range or choices: "hidden: 0 is out of range (allowed: 1..8192)", or nothing.
  Why check(const RunConfig& c) const;
};

// A member of RunConfig as a setting's value.
template <class T>
Setting field(std::string key, T RunConfig::*member);
// An enum member (run_choices.h) as its table's words; its choices are the table's rows.
template <class E>
requires std::is_enum_v<E> Setting field(std::string key, E RunConfig::*member);
// A setting a strategy declares for itself, kept in RunConfig::extra under its key.
Setting extraSetting(std::string key, SettingType type, SettingValue byDefault);

// Every setting in table order (precedence): the run's own, then each strategy's.
const std::vector<Setting>& runSettings();
const Setting* findSetting(std::string_view key);
// The setting called `key` in any settings table (the program's, the projection's, ...).
const Setting* findSetting(const std::vector<Setting>& table, std::string_view key);
// paralab-run's program flags (--sweep, --trace, --save, --project, ...), owner "program": their
// values are kept in RunConfig::extra under their keys while a command line is read, and never
// in a run's configuration (RunConfig::toJson writes runSettings() only). The rows are in
// cli/program_settings.cpp; cli/run_options.h reads and checks them.
const std::vector<Setting>& programSettings();
const Setting* findProgramSetting(std::string_view key);
// A run whose dataset its model cannot read (the images' default under --model gpt) takes the
// model's first dataset: fashion-mnist for mlp and moe, fortunes for gpt. For a dataset nobody
// gave; one that was given is validate()'s to refuse.
void datasetFollowsModel(RunConfig& config);
// The window's group names, in the order the panel shows them.
const std::vector<std::string>& settingGroups();

// "an integer", "a number", "a string", "true or false".
const char* typeWords(SettingType t);
// "128", "0.05", "true", "mlp".
std::string formatValue(const SettingValue& v);
// A value typed on the command line; throws ConfigError naming the key and what is expected.
SettingValue parseValue(const Setting& s, const std::string& text);
// A value of a --config file; throws ConfigError naming the key when the JSON type is wrong.
SettingValue fromJson(const Setting& s, const nlohmann::json& j);
nlohmann::json toJson(const SettingValue& v);

// Why the setting cannot be given the value it has in `c`: a value other than its default
// where it does not apply ("zero: applies to --strategy sync (strategy is hogwild)"), unless
// it is a parameter of a choice not made (ignoredWhereNotApplicable).
Setting::Why inapplicable(const Setting& s, const RunConfig& c);

// The settings as they take effect when a front end shows every control: each one that does
// not apply (or, with `serial`, matters only with several ranks) is reset to its default,
// walking the table in order, and why is kept for its control.
struct SettingsInEffect {
  RunConfig config;
  std::vector<std::pair<std::string, std::string>> unavailable;  // key, why
  const std::string* why(std::string_view key) const;
};
SettingsInEffect settingsInEffect(const RunConfig& shown, bool serial);

// [SECTION] Settings given where they do not apply
// A --config file that carries the key of every setting is a saved configuration: the window's
// Save settings, run-config.json beside its exports and the "config" of paralab-run's --json
// summary all write RunConfig::toJson(), which holds every setting. Its keys state the whole
// configuration, not a choice, so a key that does not apply to its model or strategy stays
// quiet (kept at no effect, as its greyed control in the window). A file that names only some
// settings was written by hand: each key it names is a choice.
bool isSavedConfig(const std::set<std::string>& keys);
// Why the settings given to a program cannot be taken, in one line naming the setting: a value
// out of its range or choices (Setting::check), then a parameter of a choice (partOfAChoice)
// given where that choice is not made, with the reason the window shows beside its greyed
// control ("heads: belongs to the GPT (--model gpt)", settingsInEffect). Given means a
// command-line flag (`flags`: any value, as typing it says it should act) or a key of a
// hand-written --config file (`configKeys`) whose value is not the default: a default asks for
// nothing the run does not already do, and a file saved before a setting existed lacks its
// key, so is no longer complete, yet holds defaults where settings do not apply (the window
// resets them, and this refusal keeps them out of paralab-run's runs). Settings that are not
// parameters of a choice are refused by RunConfig::validate() (inapplicable) from any source.
Setting::Why refusedAsGiven(const RunConfig& c, const std::set<std::string>& flags,
                            const std::set<std::string>& configKeys);
// Its second half alone: a parameter of a choice given where that choice is not made. The
// projection (--project) asks only this, as its ranges are not a training run's on this machine.
Setting::Why notApplicableAsGiven(const RunConfig& c, const std::set<std::string>& flags,
                                  const std::set<std::string>& configKeys);

}  // namespace paralab
