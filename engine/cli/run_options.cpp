// The run flags shared by paralab-run and the window (see run_options.h).
#include "cli/run_options.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "config.h"
#include "platform.h"  // version
#include "schema.h"

namespace paralab {

int badInput(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  return kBadInputExit;
}

std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv, const char* program) {
  app.set_version_flag("--version", std::string(program) + " " + version(),
                       "Print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return badInput(program, std::string(e.what()) + " (see --help)");
  }
  return std::nullopt;
}

CLI::Option* refuseEmpty(CLI::Option* option, const std::string& allowed) {
  return option->check(CLI::Validator(
      [allowed](const std::string& value) {
        return value.empty() ? "empty (allowed: " + allowed + ")" : std::string();
      },
      ""));
}

namespace {

// "(1..8192)", "(mlp, moe)"; choices that follow another setting are listed per its value:
// "(cpu: naive, simd, ...; cuda: naive, coalesced, ...)".
std::string allowedHelp(const Setting& s) {
  if (s.type == SettingType::Switch ||
      (s.type == SettingType::Text && !s.choices && s.form.empty()))
    return "";
  if (s.choicesFollow.empty()) return " (" + s.allowedText(RunConfig{}) + ")";
  const Setting* follows = findSetting(s.choicesFollow);
  std::string text;
  for (const SettingChoice& ch : follows->choices(RunConfig{})) {
    RunConfig probe;
    follows->set(probe, parseValue(*follows, ch.value));
    text += (text.empty() ? "" : "; ") + ch.value + ": " + s.allowedText(probe);
  }
  return " (" + text + ")";
}

const char* typeName(SettingType t) {
  switch (t) {
    case SettingType::Integer:
      return "INT";
    case SettingType::Real:
      return "NUMBER";
    default:
      return "TEXT";
  }
}

}  // namespace

// One flag per setting of a table. Values are read by the schema, not by CLI11, so a flag
// and the same key in a --config file accept exactly the same text and fail the same way.
static void addSettingOptions(CLI::App& app, const std::vector<Setting>& table,
                              RunConfig& config) {
  for (const Setting& s : table) {
    const std::string help = s.help + allowedHelp(s);
    if (s.type == SettingType::Switch) {
      // --sp turns it on, --no-sp off (the last one given wins); a program's switch is a word.
      app.add_flag_function(
          "--" + s.key + (s.owner == "run" ? ",!--no-" + s.key : ""),
          [&config, &s](int64_t count) { s.set(config, count > 0); }, help);
      continue;
    }
    app.add_option_function<std::string>(
           "--" + s.key,
           [&config, &s](const std::string& text) {
             try {
               s.set(config, parseValue(s, text));
             } catch (const ConfigError& e) {  // "--lr: expected a number, got 'abc'"
               throw CLI::ValidationError("--" + std::string(e.what()));
             }
           },
           help)
        ->type_name(typeName(s.type))
        ->default_str(formatValue(s.get(config)));
  }
}

void addRunConfigOptions(CLI::App& app, RunConfig& config) {
  addSettingOptions(app, runSettings(), config);
}
void addProgramOptions(CLI::App& app, RunConfig& config) {
  addSettingOptions(app, programSettings(), config);
}

std::set<std::string> givenFlags(const CLI::App& app) {
  std::set<std::string> keys;
  for (const Setting& s : runSettings())
    if (app.get_option("--" + s.key)->count() > 0) keys.insert(s.key);
  return keys;
}

void datasetFollowsModel(RunConfig& config, const CLI::App& app,
                         const std::set<std::string>& configKeys) {
  if (app.get_option("--dataset")->count() > 0 || configKeys.contains("dataset")) return;
  paralab::datasetFollowsModel(config);
}

std::string findConfigPath(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
  }
  return "";
}

}  // namespace paralab
