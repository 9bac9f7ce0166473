// The run settings table: every setting of a run, once (schema.h says what each column
// means). Order is precedence: whether a setting applies depends only on settings above it.
// The window shows them by group, in this order within a group. The rows are written in
// run_settings_model.cpp and run_settings_parallel.cpp; strategies add their own settings
// through their row of the strategy table (parallel/registry.cpp).
// See tests/engine/tst_schema.cpp and `paralab-run --help`.
#include "run_settings.h"

#include <algorithm>

#include "parallel/strategy.h"

namespace paralab {

namespace settings_rows {

// A setting only some strategies read applies under the rows that list it (`uses`).
Why usedByStrategy(const RunConfig& c, const std::string& key) {
  std::string users;
  for (const StrategyInfo& s : strategyTable()) {
    if (s.chosenBy != ChosenBy::StrategyFlag || std::find(s.uses.begin(), s.uses.end(), key) == s.uses.end()) continue;
    if (c.strategy == s.name) return std::nullopt;
    users += (users.empty() ? "" : ", ") + std::string(s.name);
  }
  return "applies to --strategy " + users + " (the strategy is " + c.strategy + ")";
}
std::function<Why(const RunConfig&)> usedBy(std::string key) {
  return [key](const RunConfig& c) { return usedByStrategy(c, key); };
}
Why gptOnly(const RunConfig& c) {
  if (c.model == ModelKind::Gpt) return std::nullopt;
  return std::string("belongs to the GPT (--model gpt)");
}
Why moeOnly(const RunConfig& c) {
  if (c.hasExperts()) return std::nullopt;
  return std::string("belongs to the mixture of experts (--model moe, or --model gpt --ffn moe)");
}
// What the mixture of experts' row (parallel/registry.cpp) refuses when `change` sets one
// setting away from its default in an MoE run: its reason, without the "model: " it starts
// with. The row is the one place the MoE's layout rules are written.
Why refusedUnderMoe(const RunConfig& c, void (*change)(RunConfig&)) {
  if (!c.hasExperts()) return std::nullopt;
  RunConfig probe;
  probe.model = c.model;
  probe.ffn = c.ffn;
  change(probe);
  Why why = strategyFor(probe).incompatible(probe);
  if (why) why = why->substr(why->find(": ") + 2);
  return why;
}

}  // namespace settings_rows

using namespace settings_rows;

const std::vector<Setting>& runSettings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t;
    addModelRows(t);
    addParallelRows(t);
    addJobRows(t);
    for (const StrategyInfo& row : strategyTable())
      for (Setting s : row.settings) {
        s.group = kParallelism;
        s.parallelOnly = true;
        s.partOfAChoice();
        s.appliesWhen([name = std::string(row.name)](const RunConfig& c) -> Why {
          if (c.strategy == name) return std::nullopt;
          return "applies to --strategy " + name + " (the strategy is " + c.strategy + ")";
        });
        t.push_back(std::move(s));
      }
    return t;
  }();
  return table;
}

const std::vector<std::string>& settingGroups() {
  static const std::vector<std::string> groups = {
      kExecution, kParallelism, kModelParallelism, kLinks, kModel, kData, kTraining};
  return groups;
}

}  // namespace paralab
