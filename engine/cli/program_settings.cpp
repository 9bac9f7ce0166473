// paralab-run's program flags as a table of the schema (owner "program"): what the program does
// with the run the other flags describe (sweep it, trace it, save it, project it, ...). Their
// --help, their value checks and where they do not go together are these rows.
// See tests/engine/tst_cli.cpp and `paralab-run --help`.
#include "cli/control_channel.h"
#include "cli/run_options.h"
#include "comm/communicator.h"  // mpiLaunchSize
#include "projection/projection.h"
#include "schema.h"
#include "train/goodput_sweep.h"
#include "train/latency_sweep.h"
#include "train/sweep.h"

namespace paralab {

namespace {

using Why = Setting::Why;

std::string text(const RunConfig& c, const char* key) {
  return std::get<std::string>(findProgramSetting(key)->get(c));
}
bool sweeping(const RunConfig& c) {
  return !text(c, "sweep").empty() || !text(c, "latency-sweep").empty();
}

// A row of the program's table: a value kept in RunConfig::extra under its key.
Setting programSetting(std::string key, SettingType type, SettingValue byDefault) {
  Setting s = extraSetting(std::move(key), type, std::move(byDefault));
  s.owner = "program";
  s.notInWindow();
  return s;
}
Setting textFlag(std::string key, std::string form) {
  Setting s = programSetting(std::move(key), SettingType::Text, std::string());
  s.form = std::move(form);
  return s;
}
// A form read by the parser that runs it: its ConfigError is the line ("sweep: ...").
template <class Parse>
std::function<Why(const RunConfig&)> readBy(const char* key, Parse parse) {
  return [key, parse](const RunConfig& c) -> Why {
    try {
      (void)parse(text(c, key));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  };
}

std::vector<Setting> programRows() {
  std::vector<Setting> t;
  t.push_back(programSetting("json", SettingType::Switch, false)
                  .describe("Print one JSON object per step on stdout"));
  t.push_back(textFlag("sweep", "ranks=1,2,4,8")
                  .describe("Time --steps steps at each rank count (thread backend); prints "
                            "speedup, efficiency and the Amdahl/Gustafson fits. "
                            "checkpoint-every=1,2,4,...: goodput at each checkpoint interval "
                            "under --mtbf, beside Young/Daly's optimum")
                  .shaped("ranks=1,2,4,8 or checkpoint-every=1,2,4,8",
                          readBy("sweep",
                                 [](const std::string& spec) {
                                   return isCheckpointSweep(spec) ? parseCheckpointSweep(spec)
                                                                  : parseSweep(spec);
                                 }))
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.backend == Backend::Thread) return std::nullopt;
                    return std::string("runs thread ranks (--backend thread)");
                  }));
  t.push_back(textFlag("latency-sweep", "batch=1,2,4,...,4096")
                  .describe("Time the model's forward pass (inference) at each batch size on "
                            "one rank; prints ms per forward, samples/s and µs per sample "
                            "(--model gpt: batches of --seq-character windows, tokens/s and µs "
                            "per token)")
                  .shaped("batch=1,2,4,...,4096", readBy("latency-sweep", parseLatencySweep))
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (text(c, "sweep").empty()) return std::nullopt;
                    return std::string(
                        "runs alone (allowed: --sweep or --latency-sweep, not both)");
                  }));
  t.push_back(textFlag("trace", "a file name")
                  .describe("Write the spans of every rank (the last steps' timeline) as "
                            "Chrome trace JSON, for Perfetto or chrome://tracing (thread backend)")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (sweeping(c)) return std::string("records a training run (not a sweep)");
                    // A process per rank holds only its own rank's spans.
                    if (c.backend == Backend::Mpi ||
                        (c.backend == Backend::Nccl && mpiLaunchSize() > 0))
                      return std::string(
                          "needs thread ranks (--backend thread or nccl; under mpirun each "
                          "process holds only its own rank's spans)");
                    if (!c.instrument)
                      return std::string("needs the spans that --no-instrument turns off");
                    return std::nullopt;
                  }));
  const auto trainingRun = [](const RunConfig& c) -> Why {
    if (!sweeping(c)) return std::nullopt;
    return std::string("goes with a training run (not a sweep)");
  };
  t.push_back(textFlag("save", "a file name")
                  .describe("When the run ends, write a checkpoint (the parameters, the "
                            "optimizer state, the step and the config) for --resume; written "
                            "whole or not at all")
                  .appliesWhen(trainingRun));
  t.push_back(textFlag("resume", "a --save checkpoint")
                  .describe("Go on from a --save checkpoint, from its step: --steps counts "
                            "the total steps, so the run takes steps (checkpoint's step + 1) to "
                            "--steps, on the batches the uninterrupted run would have. The "
                            "model, data set, optimizer, seed and global batch must match; the "
                            "layout (--ranks, --strategy, --zero, --dp, --tp, --pp, --ep) may "
                            "differ: the state is kept in the serial layout")
                  .appliesWhen(trainingRun));
  t.push_back(programSetting("sample", SettingType::Integer, int64_t(0))
                  .describe("Characters the trained model writes when the run ends (--model gpt)")
                  .range(0, 100000)
                  .zeroIs("none")
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (c.model != ModelKind::Gpt)
                      return "generates text with --model gpt (allowed with --model " +
                             nameOf(c.model) + ": 0)";
                    if (sweeping(c)) return std::string("follows a training run");
                    if (c.hasExperts() && c.ep > 1)
                      return "generates on one rank, and --ep " + std::to_string(c.ep) +
                             " spreads the experts over ranks (allowed with --ep 1)";
                    return std::nullopt;
                  }));
  t.push_back(textFlag("control", "stdin|FILE")
                  .describe(std::string("Obey commands while training, one a line: ") +
                                ControlChannel::commandsText() +
                                ". From standard input (stdin), or appended to an existing "
                                "FILE (a batch job, which has no standard input)",
                            "Under mpirun rank 0 reads them and every rank obeys at the next "
                            "step boundary; stop (or the end of standard input) ends the run "
                            "after the step in flight, with its summary. A FILE is read every " +
                                std::to_string(ControlChannel::kFilePollMs) +
                                " ms by rank 0 alone: under a batch system it must be on a file "
                                "system rank 0's node shares with whoever appends to it")
                  .shaped("stdin, or a file's path",
                          [](const RunConfig& c) -> Why {
                            const std::string why =
                                ControlChannel::sourceProblem(text(c, "control"));
                            if (why.empty()) return std::nullopt;
                            return why;
                          })
                  .appliesWhen([](const RunConfig& c) -> Why {
                    if (!sweeping(c)) return std::nullopt;
                    return std::string("drives a training run (not a sweep)");
                  }));
  t.push_back(
      textFlag("project", "GPU:COUNT")
          .describe("Project the configuration the other flags describe onto COUNT GPUs (GPU: " +
                    projection::gpuNamesText() +
                    ") instead of training it: memory per GPU, step time split, "
                    "tokens/s, TFLOP/s per GPU and MFU, all projected (--json: one "
                    "object). Without --microbatches, micro-batches of one sample")
          .appliesWhen([](const RunConfig& c) -> Why {
            for (const char* key : {"sweep", "latency-sweep", "trace", "save", "resume"})
              if (!text(c, key).empty())
                return std::string(
                    "projects the configuration instead of running it (not with "
                    "--sweep, --latency-sweep, --trace, --save, --resume or --sample)");
            if (!findProgramSetting("sample")->isDefault(c))
              return std::string(
                  "projects the configuration instead of running it (not with "
                  "--sweep, --latency-sweep, --trace, --save, --resume or --sample)");
            return std::nullopt;
          }));
  return t;
}

}  // namespace

const std::vector<Setting>& programSettings() {
  static const std::vector<Setting> table = programRows();
  return table;
}

const Setting* findProgramSetting(std::string_view key) {
  return findSetting(programSettings(), key);
}

Setting::Why programRefusal(const RunConfig& c) {
  for (const Setting& s : programSettings()) {
    if (s.isDefault(c)) continue;  // not given (or given its default: --sample 0)
    if (auto err = s.check(c)) return err;
    if (s.notApplicable)
      if (auto why = s.notApplicable(c)) return s.key + ": " + *why;
  }
  return std::nullopt;
}

ProgramFlags takeProgramFlags(RunConfig& c) {
  ProgramFlags f;
  f.json = std::get<bool>(findProgramSetting("json")->get(c));
  f.sweep = text(c, "sweep");
  f.latencySweep = text(c, "latency-sweep");
  f.trace = text(c, "trace");
  f.save = text(c, "save");
  f.resume = text(c, "resume");
  f.sample = int(std::get<int64_t>(findProgramSetting("sample")->get(c)));
  f.control = text(c, "control");
  f.project = text(c, "project");
  for (const Setting& s : programSettings()) c.extra.erase(s.key);
  return f;
}

}  // namespace paralab
