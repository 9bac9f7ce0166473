// Trainer: one training run across its ranks — the data, a Strategy per rank, and the step
// that drives them, with the per-rank times, traffic and memory of every step.
// Ranks are threads of this process (--backend thread, the GUI's way; --backend nccl, one
// thread per GPU) or, under mpirun, this process is one rank (--backend mpi, or nccl with a
// GPU per process) and rank 0 gathers every rank's figures.
// See tests/engine/tst_training.cpp, tst_parallel_equals_serial.cpp, `paralab-run --ranks 4`.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/flight_record.h"
#include "config.h"
#include "data/dataset.h"
#include "metrics/metrics.h"
#include "metrics/span_recorder.h"
#include "parallel/strategy.h"

namespace paralab {

class Communicator;
class Compute;
class ThreadWorld;

class Trainer {
 public:
  // Thread ranks (config.ranks of them), talking through ThreadComm or (--backend nccl) NCCL.
  // Loads (or reuses) the data set and builds a strategy per rank, saying how far it is through
  // `progress` (the data set's files, then the ranks built); throws ConfigError / DataError /
  // CommError with a one-line reason.
  explicit Trainer(const RunConfig& config, const ProgressFn& progress = {});
  // This process as one rank of `world` (an MPI job of config.ranks processes: makeMpiWorld,
  // or makeNcclMpiWorld for --backend nccl).
  Trainer(const RunConfig& config, std::unique_ptr<Communicator> world);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One step on the next global batch, on every rank. Evaluates test accuracy when the step
  // is a multiple of eval-every (and on the last step of a bounded run). Under MPI, every
  // process calls it; rank 0's result holds every rank's figures.
  StepMetrics step();
  // --elastic: each time a replica failed, the step it failed in and the ranks before and after
  // (train/elastic.cpp). The run goes on with config().ranks survivors. A --rejoin is an event
  // too: the step it rejoined at, the rank it took back (failedRank -1), the group grown by one.
  struct ElasticEvent {
    int64_t step = 0;
    int failedRank = -1;
    int ranksBefore = 0, ranksAfter = 0;
    int rejoinedRank = -1;
  };
  const std::vector<ElasticEvent>& elasticEvents() const { return m_elasticEvents; }
  // Test-split accuracy of rank 0's model over the first `maxSamples` test samples (0 = all).
  // Collective: every rank takes part (sharded models gather).
  double evaluate(int maxSamples);
  // --model gpt, collective as evaluate(): `count` characters the trained model writes after the
  // first character of the held-out text, drawn with the run's seed; decoded. Other models: "".
  std::string generateText(int count);
  const Dataset& data() const { return *m_data; }
  // Live reconfiguration (collective on every local rank, between steps): the full state in
  // the serial layout (complete on rank 0), and taking one over (steps done included).
  TrainingState saveState();
  void loadState(const TrainingState& state);

  int64_t stepsDone() const { return m_step; }
  const RunConfig& config() const { return m_config; }
  int64_t parameterCount() const;
  int worldSize() const { return m_config.ranks; }
  int localRankCount() const { return int(m_ranks.size()); }
  int rankOfLocal(int i) const;  // world rank of local rank i (thread: i; MPI: this process)
  bool isRoot() const { return rankOfLocal(0) == 0; }
  // Per local rank.
  const SpanRecorder& spans(int local = 0) const;
  const MemoryTracker& memory(int local = 0) const;
  // Where local rank `local` computes: its device (GPU rank mod G) and --kernel's GEMM.
  const Compute& compute(int local = 0) const;
  Strategy& strategy(int local = 0);
  // The traffic of local rank `local` in the last step: per peer, per op and group.
  const CommTraffic& lastTraffic(int local = 0) const;
  // Every local rank's flight recorder (its last collectives); thread-safe at any time.
  std::vector<RankFlight> flightRecord() const;
  // What every local rank holds (the window's "what every GPU holds" map) and what it sent in
  // the last step; thread backend: every rank. Call between steps.
  std::vector<RankHoldings> holdings();

 private:
  struct Rank;
  enum class Command { Step, Eval, Sample, Save, Load, Heal, Quit };
  void build(const RunConfig& config, const ProgressFn& progress = {});
  void rankMain(Communicator& comm, Rank& r);  // a thread rank's life
  void execute(Rank& r, Command c);            // what one rank does for one command
  void runCommand(Command c);                  // on every local rank, until all are done
  StepMetrics stepOnce();                      // one step on the ranks there are
  StepMetrics elasticStep();                   // elastic.cpp: a failed replica's group re-formed
  void reform();                               // elastic.cpp: the survivors, a new world
  void rejoin();                               // elastic.cpp: the group grown back by one
  // elastic.cpp: a live peer's state to the returning replica (every rank of the new group)
  void heal(int rank, Communicator& comm, Strategy& strategy);
  void rebuild(const RunConfig& config);       // thread ranks anew, the old ones ended
  void endRanks();                             // thread ranks: Quit, and joined
  int failedRank() const;                      // the rank a RankFailure ended, or -1
  RankMetrics measure(const Rank& r, int64_t t0, int64_t t1) const;  // its record of the step

  StepMetrics assemble(int64_t t0, int64_t t1);

  RunConfig m_config;
  std::shared_ptr<const Dataset> m_data;
  std::vector<std::unique_ptr<Rank>> m_ranks;
  std::unique_ptr<ThreadWorld> m_world;        // thread ranks (thread or nccl backend)
  std::unique_ptr<Communicator> m_mpiWorld;    // a process per rank (mpi, or nccl under mpirun)
  struct Driver;                               // rank threads and their command channel
  std::unique_ptr<Driver> m_driver;
  BatchSampler m_sampler;
  std::vector<int> m_batch;                    // the global batch of the step in flight
  int64_t m_step = 0;
  double m_evalAccuracy = 0;
  std::optional<double> m_evalLoss;  // mean held-out loss per sample
  int m_evalSamples = 0;
  int m_sampleCount = 0;
  std::string m_sampleText;
  TrainingState m_state;  // what Save fills and Load reads
  std::optional<TrainingState> m_lastGood;  // --elastic: after the last completed step
  std::vector<ElasticEvent> m_elasticEvents;
  struct Rejoin {
    int rank = -1;  // --rejoin's rank, until it has rejoined
    int64_t step = 0;
  } m_rejoin;
  int m_joiner = -1;  // the returning replica's rank while it heals
};

}  // namespace paralab
