// The run flags every ParaLab program accepts (paralab-run, the window): one definition of
// each flag's name, help and target field, over RunConfig (DESIGN.md §6).
// See `paralab-run --help`, `paralab --help`, tests/engine/tst_cli.cpp.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace paralab {

struct RunConfig;

// Adds every RunConfig flag except --steps and --config (whose help differs per program).
void addRunConfigOptions(CLI::App& app, RunConfig& config);
// The value of --config, looked up before the full parse so the file can supply defaults that
// flags then override ("" when absent).
std::string findConfigPath(int argc, char** argv);

}  // namespace paralab
