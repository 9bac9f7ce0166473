// The run flags every ParaLab program accepts (paralab-run, the window), and paralab-run's
// program flags: each a row of the schema (runSettings(), programSettings()) made a flag here.
// See `paralab-run --help`, `paralab --help`, tests/engine/tst_cli.cpp.
#pragma once
#include <optional>
#include <set>
#include <string>

namespace CLI {
class App;
class Option;
}

namespace paralab {

struct RunConfig;

// Bad input's exit code in every ParaLab program (docs/architecture.md §10).
constexpr int kBadInputExit = 2;

// "<program>: <message>" as one line on stderr; returns kBadInputExit.
int badInput(const char* program, const std::string& message);

// Parses the command line with the programs' contract: --help prints the help and gives 0; a
// bad flag gives badInput(program, "<what CLI11 says> (see --help)"). nullopt: parsed, go on.
std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv, const char* program);

// A flag that names something (a file, a channel, a list) refuses "": "--save: empty (allowed:
// <allowed>)", instead of reading as if the flag were not given. Returns `option`.
CLI::Option* refuseEmpty(CLI::Option* option, const std::string& allowed);

// Adds a flag for every setting of the schema (schema.h), writing into `config`; --config (read
// before the other flags, see findConfigPath) is each program's own.
void addRunConfigOptions(CLI::App& app, RunConfig& config);
// The settings of the schema given on the command line (by key: "heads" for --heads), for
// refusedAsGiven (schema.h).
std::set<std::string> givenFlags(const CLI::App& app);
// Adds a flag for every row of the program's table (programSettings(): --sweep, --trace, ...),
// writing into `config` as addRunConfigOptions does.
void addProgramOptions(CLI::App& app, RunConfig& config);
// The first program flag given whose value the table refuses, or that does not go with the run
// or the other program flags ("trace: records a training run (not a sweep)"), in table order.
std::optional<std::string> programRefusal(const RunConfig& config);
// The program flags' values, taken out of `config` (which is a run's configuration after).
struct ProgramFlags {
  bool json = false;
  std::string sweep, latencySweep, trace, save, resume, control, project;
  int sample = 0;
};
ProgramFlags takeProgramFlags(RunConfig& config);
// A dataset the command line did not give (nor the --config file, whose keys applyJsonFile
// returned) follows the model: its first choice, fashion-mnist for mlp and moe, fortunes for
// gpt. Call after the parse, before validate().
void datasetFollowsModel(RunConfig& config, const CLI::App& app,
                         const std::set<std::string>& configKeys);
// The value of --config, looked up before the full parse so the file can supply defaults that
// flags then override ("" when absent).
std::string findConfigPath(int argc, char** argv);

}  // namespace paralab
