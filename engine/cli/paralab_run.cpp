// paralab-run: the headless engine. Trains as configured by flags and/or a JSON --config
// (flags win), prints one JSON object per step with --json, then a summary.
// --save FILE / --resume FILE: checkpoints (train/checkpoint.h).
// Try: paralab-run --steps 100 --json    See tests/engine/tst_cli.cpp, tst_checkpoint.cpp.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/control_channel.h"
#include "cli/elastic_job.h"
#include "cli/line_views.h"
#include "cli/run_options.h"
#include "comm/communicator.h"
#include "comm/flight_record.h"
#include "config.h"
#include "describe.h"
#include "metrics/chrome_trace.h"
#include "metrics/run_record.h"
#include "platform.h"
#include "projection/projection.h"
#include "projection/projection_settings.h"
#include "schema.h"
#include "train/checkpoint.h"
#include "train/goodput.h"
#include "train/goodput_sweep.h"
#include "train/latency_sweep.h"
#include "train/sweep.h"
#include "train/trainer.h"

using namespace paralab;

namespace {

int fail(const std::string& message) { return badInput("paralab-run", message); }

// A run the watchdog ended (a collective past --timeout), as MPI's watchdog exits (comm_mpi.cpp).
constexpr int kHangExit = 3;
// Runs per checkpoint interval in a goodput sweep, each with its own failure times.
constexpr int kGoodputSweepRepeats = 3;

// --sweep checkpoint-every=...: goodput against K under the run's emulated failures, beside
// Young/Daly's optimum from the checkpoint cost the sweep measured (train/goodput_sweep.h).
int runGoodputSweepCommand(const RunConfig& config, const std::string& spec, bool json) {
  std::vector<int> ks;
  try {
    ks = parseCheckpointSweep(spec);
    if (config.mtbfS <= 0)
      throw ConfigError("sweep: checkpoint-every= needs failures to recover from (--mtbf SECONDS)");
    for (int k : ks) {
      RunConfig c = config;
      c.checkpointEvery = k;
      if (auto err = c.validate()) throw ConfigError(*err + " (at K = " + std::to_string(k) + ")");
    }
  } catch (const ConfigError& e) {
    return fail(e.what());
  }
  try {
    // The checkpoints go where a run's scratch files go, in a folder of this process's own.
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("paralab-goodput-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const GoodputSweepResult r = runGoodputSweep(config, ks, kGoodputSweepRepeats, dir.string());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (json) {
      std::cout << toJson(r).dump() << '\n';
      return 0;
    }
    std::printf(
        "Goodput sweep (MTBF %g s, emulated; %lld steps, %d runs per K with the same "
        "failure times)\n",
        r.mtbfS, (long long)r.steps, r.repeats);
    std::printf("%8s %12s %9s %12s %10s %14s %9s\n", "K", "goodput", "failures", "checkpoints",
                "lost s", "checkpoint s", "step ms");
    for (const GoodputPoint& p : r.points)
      std::printf("%8d %10.1f/s %9d %12d %10.3f %14.3f %9.3f\n", p.checkpointEvery, p.goodput,
                  p.failures, p.checkpoints, p.lostS, p.checkpointS, 1e3 * p.stepS);
    std::printf(
        "Measured: C = %.5f s a checkpoint in the run (its write alone %.5f s), a "
        "restart %.5f s, a step %.5f s\n",
        r.checkpointCostS, r.checkpointWriteS, r.restartS, r.stepS);
    std::printf(
        "Young/Daly (reference): sqrt(2 C MTBF) = %.4f s = %.1f steps; best K "
        "measured: %d\n",
        r.youngDalyS, r.youngDalySteps, r.bestK);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

int runSweepCommand(const RunConfig& config, const std::string& spec, bool json) {
  std::vector<int> ranks;
  try {
    ranks = parseSweep(spec);  // the form the table checked (program_settings.cpp)
    for (int n : ranks) {
      RunConfig c = config;
      c.ranks = n;
      if (auto err = c.validate())
        throw ConfigError(*err + " (at " + std::to_string(n) + " ranks)");
    }
  } catch (const ConfigError& e) {
    return fail(e.what());
  }
  const int warmup = 3;
  try {
    const bool tty = isTerminal(stderr);
    const SweepResult r = runSweep(config, ranks, config.steps, warmup, [tty](int done, int total) {
      if (tty) {  // progress for long sweeps, on a terminal only
        std::fprintf(stderr, "\rsweep: %d/%d steps", done, total);
        if (done == total) std::fprintf(stderr, "\r%*s\r", 30, "");
      }
      return true;
    });
    if (json) {
      std::cout << toJson(r, config).dump() << '\n';
      return 0;
    }
    std::string emulated;
    for (const EmulatedPart& p : emulatedParts(config)) emulated += ", " + p.brief + " (emulated)";
    std::printf("Scaling sweep (%s scaling, %s, median of %d steps after %d warm-up)%s\n",
                nameOf(r.scaling).c_str(), config.strategy.c_str(), config.steps, warmup,
                emulated.c_str());
    std::printf("%6s %10s %12s %9s %11s %14s\n", "ranks", "step ms", "samples/s", "speedup",
                "efficiency", r.scaling == Scaling::Weak ? "Gustafson ref" : "Amdahl ref");
    for (const SweepPoint& p : r.points)
      std::printf("%6d %10.2f %12.0f %8.2fx %10.0f%% %13.2fx\n", p.ranks, p.stepMs, p.samplesPerS,
                  p.speedup, 100 * p.efficiency,
                  r.scaling == Scaling::Weak ? r.gustafson.speedup(p.ranks) : r.amdahl.speedup(p.ranks));
    // Every fit says the ranks it was fitted on: a fraction is only as good as that range.
    const std::string over =
        "fitted on " + fitBasis(r.points.front().ranks, r.points.back().ranks, r.cores);
    if (const std::string why = r.amdahl.caveat(); !why.empty())
      std::printf("Amdahl fit (reference, %s): p = %.3f (R^2 = %s), %s\n", over.c_str(),
                  r.amdahl.p, r2Text(r.amdahl.r2).c_str(), why.c_str());
    else
      std::printf(
          "Amdahl fit (reference, %s): p = %.3f (R^2 = %s); predicts %.1fx at 64 ranks, at "
          "most %.1fx\n",
          over.c_str(), r.amdahl.p, r2Text(r.amdahl.r2).c_str(), r.amdahl.speedup(64),
          r.amdahl.p < 1 ? 1 / (1 - r.amdahl.p) : INFINITY);
    const std::string why = r.gustafson.caveat();
    std::printf("Gustafson fit (reference, %s): serial fraction s = %.3f (R^2 = %s)%s\n",
                over.c_str(), r.gustafson.s, r2Text(r.gustafson.r2).c_str(),
                why.empty() ? "" : (", " + why).c_str());
    if (const std::string cores = coresCaveat(r); !cores.empty())
      std::printf("Note: %s.\n", cores.c_str());
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

// The run in brackets on the header line: the backend, then the run's description
// (describe.h): the strategy, the model's parts (an MoE run's experts and routing) and how the
// work is split.
std::string layoutText(const RunConfig& c) {
  const RunDescription d = describeRun(c);
  std::string s = nameOf(c.backend);
  if (!d.strategy.empty()) s += ", " + d.strategy;
  for (const std::string& part : d.modelParts) s += ", " + part;
  for (const std::string& part : d.layout) s += ", " + part;
  return s;
}

// Where the math runs: the device and the --kernel GEMM, naming the BLAS when it is the vendor's.
std::string gemmText(const RunConfig& c) { return nameOf(c.device) + ", " + describeRun(c).gemm; }

int runLatencySweepCommand(const RunConfig& config, const std::string& spec, bool json) {
  std::vector<int> batches;
  try {
    batches = parseLatencySweep(spec);
    if (const std::string problem = latencySweepProblem(config, batches); !problem.empty())
      throw ConfigError(problem);
  } catch (const ConfigError& e) {
    return fail(e.what());
  }
  try {
    const LatencySweepOptions options;
    const LatencySweepResult r = runLatencySweep(config, batches, options);
    if (json) {
      std::cout << toJson(r, config).dump() << '\n';
      return 0;
    }
    const std::string where =
        r.device == Device::Cpu
            ? gemmText(config) + ", " + std::to_string(r.threads) + " thread" +
                  (r.threads == 1 ? "" : "s")
            : gemmText(config) + " on " + r.gpu + ", batch copied from host memory each forward";
    std::printf("Latency vs throughput: %s, H=%d, L=%d (%lld parameters), forward only, %s\n",
                nameOf(config.model).c_str(), config.hidden, config.layers,
                (long long)r.parameterCount, where.c_str());
    const int T = r.tokensPerSample;
    if (T == 0) {
      std::printf("median of %d timed repeats after %d warm-up forwards, on %s test samples\n",
                  options.repeats, options.warmup, config.dataset.c_str());
      // "µs" is two bytes but one column, so that header is padded by hand to 12 columns.
      std::printf("%6s %12s %12s    µs/sample\n", "batch", "ms/forward", "samples/s");
      for (const LatencyPoint& p : r.points)
        std::printf("%6d %12.4f %12.0f %12.2f\n", p.batch, p.msPerForward, p.samplesPerS,
                    p.usPerSample);
    } else {
      // The GPT: a batch is windows, each T next-character predictions, so throughput is tokens.
      std::printf("median of %d timed repeats after %d warm-up forwards, on %s held-out windows "
                  "of %d characters: batch = windows, %d tokens each\n",
                  options.repeats, options.warmup, config.dataset.c_str(), T, T);
      std::printf("%6s %9s %12s %12s     µs/token\n", "batch", "tokens", "ms/forward", "tokens/s");
      for (const LatencyPoint& p : r.points)
        std::printf("%6d %9lld %12.4f %12.0f %12.3f\n", p.batch, (long long)p.batch * T,
                    p.msPerForward, p.tokensPerS, p.usPerSample / T);
    }
    if (!r.notTimed.empty()) {
      std::string sizes;
      for (int b : r.notTimed) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b);
      std::printf("not timed: batch %s (%s)\n", sizes.c_str(), r.notTimedWhy.c_str());
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

// --project GPU:COUNT: the configuration projected onto real GPUs instead of trained
// (projection/projection.h); every figure printed says "projected".
int runProjectCommand(const RunConfig& config, const projection::RunProjection& request,
                      bool json) {
  try {
    const projection::Projection p = projection::projectRun(config, request);
    if (json)
      std::cout << projection::toJson(p).dump() << '\n';
    else
      std::fputs(projection::toText(p).c_str(), stdout);
  } catch (const ConfigError& e) {
    return fail(e.what());
  } catch (const std::exception& e) {
    return fail(std::string("project: ") + e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  useFastBlasKernels(argc, argv);
  RunConfig config;
  std::string configPath = findConfigPath(argc, argv);
  std::set<std::string> configKeys;  // what the --config file gave
  if (!configPath.empty()) {
    try {
      configKeys = applyJsonFile(config, configPath);
    } catch (const ConfigError& e) {
      return fail(e.what());
    }
  }

  CLI::App app{"ParaLab headless engine: trains the MLP and prints per-step metrics."};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.add_option("--config", configPath, "JSON file whose keys are these flag names; flags win");
  addRunConfigOptions(app, config);
  addProgramOptions(app, config);

  // The projection's cluster: what --project GPU:COUNT projects onto.
  projection::RunProjection project;
  // The cluster's flags: their help, ranges and choices are the projection's settings table.
  // --gpus-per-node and --node-link are the run's rows (a training run's nodes), read below as
  // the cluster's under --project.
  const auto clusterHelp = [](const char* key) {
    return projection::findProjectionSetting(key)->help;
  };
  const CLI::Option* projectOnly[] = {
      app.add_option("--vocab", project.vocab, clusterHelp("vocab")),
      app.add_option("--attention-kernel", project.attentionKernel,
                     clusterHelp("attention-kernel"))};

  // Flags that name something: "" would read as not given.
  for (const auto& [flag, allowed] : {std::pair{"--config", "a JSON file"},
                                      {"--sweep", "ranks=1,2,4,8"},
                                      {"--trace", "a file name"},
                                      {"--save", "a file name"},
                                      {"--resume", "a --save checkpoint"},
                                      {"--control", "stdin or a file"}})
    refuseEmpty(app.get_option(flag), allowed);

  if (const auto code = parseCommandLine(app, argc, argv, "paralab-run")) return *code;
  datasetFollowsModel(config, app, configKeys);
  // The program flags' values and how they go together are the table's (program_settings.cpp).
  if (auto err = programRefusal(config)) return fail(*err);
  const ProgramFlags program = takeProgramFlags(config);
  const bool json = program.json;
  const std::string &sweep = program.sweep, &tracePath = program.trace,
                    &savePath = program.save, &resumePath = program.resume;
  const int sample = program.sample;
  if (!program.project.empty()) {
    // The projection reads the layout with ranges of its own (80 blocks of width 12288), so
    // the run's ranges and what applies to a trained run are its own to check.
    project.target = program.project;
    // HSDP (--zero-shard node) is trained, not projected: the projection's ZeRO shards over
    // every data-parallel rank.
    if (config.zeroShard != ZeroShard::All)
      return fail("zero-shard: --project projects ZeRO over every data-parallel rank (allowed: "
                  "--zero-shard all)");
    // One flag each for the nodes: under --project they are the cluster's (its table checks
    // them, checkCluster), not a training run's.
    // A flag is taken as given; a --config key when not the run's default (a saved
    // configuration carries every key, a training run's one node among them).
    const auto given = [&](const char* key, bool atDefault) {
      return app.get_option(std::string("--") + key)->count() > 0 ||
             (configKeys.contains(key) && !atDefault);
    };
    if (given("gpus-per-node", config.gpusPerNode == RunConfig{}.gpusPerNode))
      project.gpusPerNode = config.gpusPerNode;
    if (given("node-link", config.nodeLink == RunConfig{}.nodeLink))
      project.nodeLink = config.nodeLink;
    config.gpusPerNode = RunConfig{}.gpusPerNode;
    config.nodeLink = RunConfig{}.nodeLink;
    // --precision is the run's row (train/precision.h); a projection assumes bf16 unless given.
    if (app.get_option("--precision")->count() > 0 || configKeys.contains("precision"))
      project.precision = formatValue(findSetting("precision")->get(config));
    project.microBatchesGiven =
        app.get_option("--microbatches")->count() > 0 || configKeys.contains("microbatches");
    project.givenFlags = givenFlags(app);
    project.configKeys = configKeys;
    return runProjectCommand(config, project, json);
  }
  for (const CLI::Option* o : projectOnly)
    if (o->count() > 0)
      return fail(o->get_name().substr(2) + ": goes with --project GPU:COUNT" +
                  (o->get_name() == "--vocab"
                       ? " (a training run's vocabulary is its data set's characters)"
                       : ""));
  if (config.steps == 0) return fail("steps: paralab-run needs a bounded run (allowed: 1 or more)");
  // A Slurm job is queued by paralab (the window, or paralab --config); its batch script runs
  // paralab-run --backend mpi on the nodes.
  if (config.backend == Backend::Slurm)
    return fail(
        "backend: a slurm job is submitted by paralab, whose batch script runs "
        "paralab-run --backend mpi (allowed here: thread, mpi, nccl)");
  // A process per rank: --backend mpi, or nccl launched by mpirun (one GPU each); --backend nccl
  // alone runs thread ranks, one per GPU, in this process.
  const bool mpiJob =
      config.backend == Backend::Mpi || (config.backend == Backend::Nccl && mpiLaunchSize() > 0);
  // Under mpirun the job's size is the world (before --dp/--tp/--pp imply one).
  if (mpiJob && config.ranks == 1 && mpiLaunchSize() > 0) config.ranks = mpiLaunchSize();
  config.deriveRanks();
  // A parameter of a choice not made, typed or written by hand, is refused: it would not act.
  if (auto err = refusedAsGiven(config, givenFlags(app), configKeys)) return fail(*err);
  if (auto err = config.validate()) return fail(*err);

  const bool latency = !program.latencySweep.empty();
  if (!tracePath.empty()) {
    // A pipe would wait for a reader before the run starts; a device swallows the trace.
    std::error_code ec;
    if (std::filesystem::exists(tracePath, ec) && !std::filesystem::is_regular_file(tracePath, ec))
      return fail("trace: '" + tracePath + "' is not a regular file (allowed: a file name)");
    if (!std::ofstream(tracePath)) return fail("trace: cannot write '" + tracePath + "'");
  }
  if (!savePath.empty())
    if (auto problem = checkpointPathProblem(savePath)) return fail(*problem);
  if (auto problem = ElasticJob::problem(config, mpiJob, savePath)) return fail(*problem);
  // Read (and verified) before the data set loads; whether it fits this run is known once the
  // Trainer has the parameter count.
  std::optional<Checkpoint> resumed;
  if (!resumePath.empty()) {
    try {
      resumed = readCheckpoint(resumePath);
    } catch (const ConfigError& e) {
      return fail(e.what());
    }
    if (resumed->state.step >= config.steps)
      return fail("resume: the checkpoint is at step " + std::to_string(resumed->state.step) +
                  " and --steps counts the total steps (allowed: --steps above " +
                  std::to_string(resumed->state.step) + ")");
  }
  if (isCheckpointSweep(sweep)) return runGoodputSweepCommand(config, sweep, json);
  if (!sweep.empty()) return runSweepCommand(config, sweep, json);
  if (latency) return runLatencySweepCommand(config, program.latencySweep, json);

  try {
    std::unique_ptr<Trainer> owned;
    if (mpiJob) {
      if (!mpiAvailable())
        return fail("backend: this build has no MPI (install libopenmpi-dev and rebuild)");
      CommOptions options;
      options.algorithm = parseAllReduceAlgo(config.allreduce);
      options.timeoutSeconds = config.timeoutS;
      options.gpusPerNode = config.gpusPerNode;  // bytes by tier; the links are real
      // nccl: rank 0's NCCL id travels by MPI_Bcast; each process drives GPU (local rank).
      auto world =
          config.backend == Backend::Nccl ? makeNcclMpiWorld(options) : makeMpiWorld(options);
      // The bucketed all-reduce checks each bucket's arguments over MPI from a thread of its own
      // (grad_sync.cpp keeps it inline only for --backend mpi).
      if (config.backend == Backend::Nccl && !mpiCallsFromAnyThread())
        return fail(
            "backend: nccl under mpirun needs an MPI that takes calls from any thread "
            "(MPI_THREAD_SERIALIZED); this one does not");
      if (config.ranks == 1) config.ranks = world->size();  // --ranks defaults to the job's size
      owned = std::make_unique<Trainer>(config, std::move(world));
    } else {
      owned = std::make_unique<Trainer>(config);
    }
    Trainer& trainer = *owned;
    const bool root = trainer.isRoot();  // under MPI only rank 0 prints
    if (resumed) {
      if (auto why = checkpointMismatch(*resumed, trainer.config(), trainer.parameterCount()))
        return fail(*why);
      try {
        trainer.loadState(resumed->state);
      } catch (const std::exception& e) {
        return fail(std::string("resume: ") + e.what());
      }
      resumed->state = TrainingState{};  // the strategies hold it now
    }
    // A strategy that cannot hand over its state says so now, not after the run.
    if (!savePath.empty()) try {
        (void)trainer.saveState();
      } catch (const std::exception& e) {
        return fail(std::string("save: ") + e.what());
      }
    if (!json && root && config.model == ModelKind::Gpt) {
      const std::string ffn = config.hasExperts() ? "a mixture of " + std::to_string(config.experts) +
                                                        " expert FFNs (top-" +
                                                        std::to_string(config.topk) + ")"
                                                  : std::string("the FFN");
      std::printf(
          "GPT: %d blocks of causal self-attention (%d heads) and %s, width %d, context %d "
          "characters, untied output head; %s text, vocabulary %d characters; a context-free "
          "(unigram) model scores %.3f nats/char on the held-out text\n",
          config.layers, config.heads, ffn.c_str(), config.hidden, config.seq,
          trainer.data().name.c_str(), trainer.data().classes, trainer.data().unigramLoss);
    }
    // --accumulate K: the global batch of each optimizer step, run as K micro-batches.
    const std::string accumulated =
        config.accumulate > 1 ? " (" + std::to_string(config.accumulate) + " micro-batches of " +
                                    std::to_string(config.globalBatch() / config.accumulate) + ")"
                              : "";
    if (!json && root)
      std::printf(
          "ParaLab: %s, H=%d, L=%d (%lld parameters), global batch %d%s, %s, lr %g, %d rank(s) "
          "[%s], %s\n",
          config.dataset.c_str(), config.hidden, config.layers, (long long)trainer.parameterCount(),
          config.globalBatch(), accumulated.c_str(), config.optimizer.c_str(), config.lr,
          config.ranks, layoutText(config).c_str(), gemmText(config).c_str());
    if (!json && root)
      for (const EmulatedPart& p : emulatedParts(config))
        std::printf("Emulated: %s\n", p.detail.c_str());
    const int64_t first = trainer.stepsDone();  // 0, or the checkpoint's step
    if (!json && root && resumed)
      std::printf("Resumed from %s at step %lld; steps %lld to %d follow\n", resumePath.c_str(),
                  (long long)first, (long long)first + 1, config.steps);
    RunSummary summary;
    std::unique_ptr<ControlChannel> channel;
    if (!program.control.empty())
      channel = std::make_unique<ControlChannel>(root, mpiJob, json, program.control);
    // --json: each line also carries every rank's spans and, when they change, holdings (the
    // window's timeline and holdings map); gathered from every process under mpirun.
    std::optional<LineViews> views;
    if (json) views.emplace(mpiJob);
    ElasticJob elastic(config, mpiJob, savePath, first);  // under mpirun: relaunched on a failure
    // --mtbf: the run goes through emulated failures and restarts (train/goodput.h).
    std::optional<GoodputReport> goodput;
    if (config.mtbfS > 0) {
      if (channel || resumed) return fail("mtbf: runs from step 1 (not with --control or --resume)");
      const std::string file = (std::filesystem::temp_directory_path() /
                                ("paralab-goodput-" + std::to_string(::getpid()) + ".ckpt"))
                                   .string();
      goodput = trainWithFailures(trainer, file, [&](const StepMetrics& m) {
        summary.add(m);
        if (json) std::cout << toJson(m).dump() << '\n' << std::flush;
      });
    }
    for (int64_t s = trainer.stepsDone(); s < config.steps; ++s) {
      if (channel && !channel->beforeStep(trainer)) break;  // stopped: the summary follows
      if (views) views->stepBegins();
      const StepMetrics m = elastic.step(trainer);
      summary.add(m);
      if (json) {
        nlohmann::json line = root ? toJson(m) : nlohmann::json();
        views->addTo(trainer, root ? &line : nullptr);  // collective under mpirun
        if (root) std::cout << line.dump() << '\n' << std::flush;
      } else if (!root) {
        continue;
      } else if (m.step % 10 == 0 || m.step == first + 1 || m.testAccuracy) {
        std::string test;
        if (m.testAccuracy) test += " test acc " + std::to_string(*m.testAccuracy);
        if (m.testLoss) test += " test loss " + std::to_string(*m.testLoss);
        std::printf("step %5lld  loss %.4f  %8.2f ms  %9.0f samples/s%s\n", (long long)m.step,
                    m.loss, m.stepMs, m.samplesPerS, test.c_str());
      }
    }
    const std::string text = trainer.generateText(sample);  // collective: every rank calls it
    if (!savePath.empty()) {
      TrainingState state;
      try {
        state = trainer.saveState();  // collective: every rank gathers, rank 0 holds it all
      } catch (const std::exception& e) {
        return fail(std::string("save: ") + e.what());
      }
      if (root) {
        try {
          writeCheckpoint(savePath, state, trainer.config(), trainer.parameterCount());
        } catch (const ConfigError& e) {
          return fail(e.what());
        }
        if (!json)
          std::printf("checkpoint: %s (step %lld)\n", savePath.c_str(), (long long)state.step);
      }
    }
    if (!root) return 0;
    if (!tracePath.empty()) {
      std::vector<std::vector<Span>> spans;
      size_t count = 0;
      for (int i = 0; i < trainer.localRankCount(); ++i) {
        spans.push_back(trainer.spans(i).recent(SIZE_MAX));
        count += spans.back().size();
      }
      std::ofstream out(tracePath);
      out << chromeTrace(spans, emulatedBriefs(config)).dump() << '\n';
      if (!out) return fail("trace: cannot write '" + tracePath + "'");
      if (!json)
        std::printf("trace: %s (%zu spans of %d ranks)\n", tracePath.c_str(), count,
                    trainer.localRankCount());
    }
    if (json) {
      nlohmann::json j = toJson(summary, config);
      if (sample > 0) j["sample"] = text;
      if (goodput) j["goodput"] = toJson(*goodput);
      for (const Trainer::ElasticEvent& e : trainer.elasticEvents())
        j["elastic"].push_back({{"step", e.step},
                                {e.rejoinedRank >= 0 ? "rejoined_rank" : "failed_rank",
                                 e.rejoinedRank >= 0 ? e.rejoinedRank : e.failedRank},
                                {"ranks_before", e.ranksBefore},
                                {"ranks_after", e.ranksAfter}});
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else {
      const std::string after =
          first > 0 ? " (" + std::to_string(trainer.stepsDone() - first) + " after resuming)" : "";
      std::printf("done: %lld steps%s, final loss %.4f, %.2f ms/step, %.0f samples/s, model "
                  "arithmetic %.2f GFLOP/s%s\n",
                  (long long)trainer.stepsDone(), after.c_str(), summary.finalLoss, summary.meanStepMs(), summary.samplesPerS(),
                  summary.modelGflops(),
                  summary.testAccuracy
                      ? (", test accuracy " + std::to_string(*summary.testAccuracy)).c_str()
                      : "");
      // The overlap meter over the run, per rank (metrics/overlap.h, metrics.md).
      for (size_t r = 0; r < summary.overlap.size(); ++r) {
        const OverlapMeter& o = summary.overlap[r];
        std::printf("overlap rank %zu: compute %.2f ms, communication %.2f ms (hidden %.2f, "
                    "exposed %.2f: %.0f %% hidden), idle %.2f ms\n",
                    r, o.computeMs, o.commMs, o.hiddenMs, o.exposedMs, 100 * o.hiddenShare(),
                    o.idleMs);
      }
      if (sample > 0) std::printf("sample (%d characters):\n%s\n", sample, text.c_str());
      for (const Trainer::ElasticEvent& e : trainer.elasticEvents())
        if (e.rejoinedRank >= 0)
          std::printf("elastic: rank %d rejoined at step %lld, healed from a live peer; %d ranks "
                      "went on\n",
                      e.rejoinedRank, (long long)e.step, e.ranksAfter);
        else
          std::printf("elastic: rank %d failed in step %lld; %d ranks went on from step %lld\n",
                      e.failedRank, (long long)e.step, e.ranksAfter, (long long)e.step - 1);
      if (goodput)
        std::printf("goodput: %.2f steps/s over %.2f s; %d failure(s) (emulated, MTBF %g s), "
                    "%.2f s lost to redone steps, %d checkpoint(s) of %.4f s each (%.2f s); "
                    "Young/Daly interval sqrt(2 C MTBF) = %.3f s = %.1f steps\n",
                    goodput->goodput, goodput->wallS, goodput->failures, goodput->mtbfS,
                    goodput->lostS, goodput->checkpoints, goodput->checkpointCostS,
                    goodput->checkpointS, goodput->youngDalyS, goodput->youngDalySteps);
    }
  } catch (const HangDetected& h) {
    // The watchdog ended a hung run: the one line on stderr, and with --json a last line that
    // carries every rank's flight recorder (lessons/reference/metrics.md, "failure").
    if (json) {
      nlohmann::json line = {{"schema", kMetricsSchema},
                             {"failure", h.what()},
                             {"flight_recorder", flightToJson(h.ranks, h.diagnosis)}};
      std::cout << line.dump() << '\n' << std::flush;
    }
    std::fprintf(stderr, "paralab-run: %s\n", h.what());
    return kHangExit;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
