// The settings table's rows of a Slurm job (--backend slurm): the partition, nodes, tasks per
// node and time limit its batch script asks for (app/batch_script.h writes them as #SBATCH
// lines). See tests/engine/tst_schema.cpp and tests/app/tst_window_slurm.cpp.
#include <regex>

#include "run_settings.h"

namespace paralab::settings_rows {

namespace {

Why slurmOnly(const RunConfig& c) {
  if (c.backend == Backend::Slurm) return std::nullopt;
  return std::string("belongs to a Slurm job (--backend slurm)");
}

std::string textOf(const RunConfig& c, const char* key) {
  return std::get<std::string>(findSetting(key)->get(c));
}

}  // namespace

// Slurm's time formats (sbatch(1), --time): minutes, minutes:seconds, hours:minutes:seconds,
// days-hours, days-hours:minutes, days-hours:minutes:seconds, or UNLIMITED.
bool isSlurmTime(const std::string& t) {
  static const std::regex form(
      R"(^(UNLIMITED|unlimited|infinite|\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2})$)");
  return std::regex_match(t, form);
}

void addJobRows(std::vector<Setting>& t) {
  t.push_back(extraSetting("partition", SettingType::Text, std::string("default"))
                  .in(kExecution, "Partition")
                  .describe("The Slurm partition the job is queued in (default: the cluster's "
                            "default partition)",
                            "sinfo lists a cluster's partitions; the batch script asks for it "
                            "with #SBATCH --partition.")
                  .shaped("a partition's name, or default",
                          [](const RunConfig& c) -> Why {
                            static const std::regex name(R"(^[A-Za-z0-9_.-]+$)");
                            const std::string p = textOf(c, "partition");
                            if (std::regex_match(p, name)) return std::nullopt;
                            return "partition: '" + p +
                                   "' is not a partition's name (allowed: letters, digits, "
                                   "'_', '.', '-'; default for the cluster's default)";
                          })
                  .appliesWhen(slurmOnly)
                  .partOfAChoice());
  t.push_back(extraSetting("nodes", SettingType::Integer, int64_t(1))
                  .in(kExecution, "Nodes")
                  .describe("Nodes the Slurm job asks for (#SBATCH --nodes); the ranks spread "
                            "over them",
                            "Every node needs paralab-run and Open MPI at the same path, and the "
                            "job's folder on a file system they share.")
                  .range(1, 1024)
                  .upTo("ranks", [](const RunConfig& c) { return double(c.ranks); })
                  .appliesWhen(slurmOnly)
                  .partOfAChoice());
  t.push_back(
      extraSetting("tasks-per-node", SettingType::Integer, int64_t(0))
          .in(kExecution, "Tasks per node")
          .describe("Ranks on each node of the Slurm job (#SBATCH --ntasks-per-node)",
                    "0 leaves the spread to Slurm: --ntasks is the ranks, over --nodes. "
                    "Otherwise nodes × tasks per node must hold the ranks (the batch script "
                    "checks it).")
          .range(0, 1024)
          .zeroIs("as Slurm spreads them")
          .appliesWhen(slurmOnly)
          .partOfAChoice());
  t.push_back(extraSetting("time-limit", SettingType::Text, std::string("30:00"))
                  .in(kExecution, "Time limit")
                  .describe("The Slurm job's wall-time limit (#SBATCH --time): after it Slurm "
                            "ends the job",
                            "Slurm's forms: minutes, minutes:seconds, hours:minutes:seconds, "
                            "days-hours, days-hours:minutes, days-hours:minutes:seconds.")
                  .shaped("minutes, h:mm:ss or d-hh:mm:ss",
                          [](const RunConfig& c) -> Why {
                            const std::string v = textOf(c, "time-limit");
                            if (isSlurmTime(v)) return std::nullopt;
                            return "time-limit: '" + v +
                                   "' is not a Slurm time (allowed: minutes, minutes:seconds, "
                                   "hours:minutes:seconds, days-hours, days-hours:minutes, "
                                   "days-hours:minutes:seconds)";
                          })
                  .appliesWhen(slurmOnly)
                  .partOfAChoice());
}

}  // namespace paralab::settings_rows
