// The window's command line (see command_line.h), parsed with CLI11 like paralab-run's.
// See tests/app/tst_app.cpp (scriptedExport, badConfigExits2) and `paralab --help`.
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <QDir>
#include <QFileInfo>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/run_options.h"
#include "schema.h"

namespace paralab {

namespace {

int fail(const std::string& message) { return badInput("paralab", message); }

bool hasArgument(int argc, char** argv, std::initializer_list<const char*> names) {
  for (int i = 1; i < argc; ++i)
    for (const char* n : names)
      if (std::strcmp(argv[i], n) == 0 ||
          (std::strncmp(argv[i], n, std::strlen(n)) == 0 && argv[i][std::strlen(n)] == '='))
        return true;
  return false;
}

}  // namespace

void preferOffscreenPlatform(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM")) return;
  if (hasArgument(argc, argv, {"--export", "--help", "-h"}) ||
      (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY") &&
       hasArgument(argc, argv, {"--bench-frames", "--measure-startup"})))
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
}

bool hasQtOptions(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] == '-' && std::isalpha((unsigned char)argv[i][1]) && argv[i][2] != '\0')
      return true;
  return false;
}

std::optional<int> parseCommandLine(int argc, char** argv, const RunConfig& base,
                                    CommandLine& out) {
  out.config = base;
  RunConfig& config = out.config;
  std::string configPath = findConfigPath(argc, argv);
  std::set<std::string> configKeys;  // what the --config file gave
  if (!configPath.empty()) {
    try {
      configKeys = applyJsonFile(config, configPath);
    } catch (const ConfigError& e) {
      return fail(e.what());
    }
  }

  std::string exportDir, settingsFile, openFile, reportLesson;
  CLI::App app{
      "ParaLab: a lab for learning how neural-network training is made parallel.\n"
      "Without --export it opens the window with these settings; with --export it runs\n"
      "the steps and writes what File > Export All writes into DIR (every chart as PNG,\n"
      "PDF, SVG and CSV, run-config.json, trace.json, summary.md and .html), then exits."};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.add_option("--config", configPath, "JSON file whose keys are these flag names; flags win")
      ->option_text("FILE");
  app.add_option(
         "--export", exportDir,
         "Run without a window, write every chart, the settings, trace and summary into DIR, exit")
      ->option_text("DIR");
  app.add_option("--open", openFile,
                 "Show a recorded run in the charts (an export's run.jsonl, or the lines "
                 "paralab-run --json prints); with --export, write its charts into DIR instead")
      ->option_text("FILE");
  app.add_option("--report", reportLesson,
                 "With --export DIR: write the lab report of a lesson (its id or number, or all "
                 "for every lesson completed) into DIR as PDF and Markdown, from the saved "
                 "progress, each step's experiment run for its chart and measurement")
      ->option_text("LESSON");
  app.add_option("--settings", settingsFile,
                 "Keep the window's layout and last settings in FILE (INI) instead of the "
                 "desktop's store")
      ->option_text("FILE");
  app.add_option("--bench-frames", out.benchFramesS,
                 "With every chart in view and a scaling sweep drawn, train (8 ranks unless "
                 "--ranks says otherwise) for S seconds; print the GUI thread's frame times "
                 "(poll + repaint of the visible charts) and the window's memory, then exit")
      ->option_text("S")
      ->check(CLI::Range(1, 86400));
  app.add_option("--reconfigure-every", out.reconfigureEveryS,
                 "With --bench-frames: change a setting of the running training (ZeRO 0 <-> 1) "
                 "every S seconds, as a learner would (scripts/soak.sh)")
      ->option_text("S")
      ->check(CLI::Range(1, 86400));
  app.add_flag("--measure-startup", out.measureStartup,
               "Print the time from process start to the window's first paint, then exit");
  addRunConfigOptions(app, config);
  // Flags that name something: "" would read as not given (and open the window).
  for (const auto& [flag, allowed] : {std::pair{"--config", "a JSON file"},
                                      {"--export", "a folder"},
                                      {"--open", "a recorded run's file"},
                                      {"--report", "a lesson's id or number, or all"},
                                      {"--settings", "a file name"}})
    refuseEmpty(app.get_option(flag), allowed);

  if (const auto code = parseCommandLine(app, argc, argv, "paralab")) return *code;
  datasetFollowsModel(config, app, configKeys);
  config.deriveRanks();
  // The benchmark's point is a busy machine: 8 thread ranks unless the ranks were given.
  if (out.benchFramesS > 0 && !hasArgument(argc, argv, {"--ranks"}) && config.ranks == 1 &&
      configPath.empty()) {
    config.ranks = 8;
    config.steps = 0;
  }
  out.exportDir = QString::fromStdString(exportDir);
  out.settingsFile = QString::fromStdString(settingsFile);
  out.openFile = QString::fromStdString(openFile);
  out.reportLesson = QString::fromStdString(reportLesson);
  // Anything on the command line is a request: check it now rather than in the window.
  out.configGiven = !configPath.empty();
  for (const CLI::Option* o : app.get_options())
    if (o->count() > 0 && o->get_name() != "--settings" && o->get_name() != "--bench-frames" &&
        o->get_name() != "--reconfigure-every" && o->get_name() != "--measure-startup" &&
        o->get_name() != "--export" && o->get_name() != "--open" && o->get_name() != "--report")
      out.configGiven = true;
  if (out.reconfigureEveryS > 0 && out.benchFramesS == 0)
    return fail("reconfigure-every: changes the run of --bench-frames S (allowed: with it)");
  // The settings are read at start and written at exit: a pipe would hold the window.
  if (const QFileInfo s(out.settingsFile); !settingsFile.empty() && s.exists() && !s.isFile())
    return fail("settings: '" + settingsFile + "' is not a regular file (allowed: a file name)");
  if (!openFile.empty() && !QFileInfo(out.openFile).isFile())
    return fail("open: cannot read '" + openFile + "' (allowed: a recorded run's file)");
  if (!openFile.empty() && out.configGiven)
    return fail("open: a recorded run has its own settings (allowed: --open without run flags)");
  if (!reportLesson.empty() && (!out.scripted() || !openFile.empty() || out.configGiven))
    return fail(
        "report: writes a lesson's report into --export DIR, with the lesson's own "
        "settings (allowed: --report LESSON --export DIR)");
  if (out.scripted() && out.openFile.isEmpty() && reportLesson.empty() && config.steps == 0)
    return fail("steps: --export needs a bounded run (allowed: 1 or more)");
  // A folder that cannot be made is bad input: say so now, not after minutes of training.
  if (out.scripted() && !QDir().mkpath(out.exportDir))
    return fail("export: cannot create folder '" + exportDir + "'");
  if (out.configGiven) {
    if (auto err = refusedAsGiven(config, givenFlags(app), configKeys)) return fail(*err);
    if (auto err = config.validate()) return fail(*err);
  }
  return std::nullopt;
}

}  // namespace paralab
