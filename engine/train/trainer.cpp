// The training loop across ranks: a command channel to the rank threads (or this process's
// one rank under MPI), and the assembly of each step's metrics from every rank's spans,
// traffic and memory. See tests/engine/tst_training.cpp.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "comm/communicator.h"
#include "comm/flight_recorder.h"
#include "cpu/gemm.h"
#include "device/compute.h"
#include "emulated_parts.h"
#include "model/gpt.h"
#include "model/moe.h"
#include "parallel/pipeline/pipeline.h"
#include "parallel/context/ring_attention.h"
#include "train/faults.h"

namespace paralab {

// [SECTION] State

struct Trainer::Rank {
  int rank = 0;
  MemoryTracker memory;
  SpanRecorder spans;
  FlightRecorder flight;
  // Before the strategy: its tensors go back to the compute's allocator, so it outlives them.
  std::unique_ptr<Compute> compute;
  std::unique_ptr<Strategy> strategy;
  Communicator* comm = nullptr;
  RankStep result;
  CommTraffic traffic;
  int64_t startNs = 0, endNs = 0;
};

// Thread ranks wait for commands here. A failing rank sets `error`, which wakes everyone.
struct Trainer::Driver {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t generation = 0;  // bumped for every command
  Command command = Command::Step;
  int done = 0;             // ranks finished with the current command
  int ready = 0;            // ranks that built their strategy
  std::string error;        // first failure, one line
  bool timedOut = false;    // a rank's watchdog raised the abort (CommTimeout)
  int failedRank = -1;      // the rank whose RankFailure (--fail) ended the ranks
  std::thread thread;       // runs ThreadWorld::run
};

static const RunConfig& checked(const RunConfig& config) {
  if (auto err = config.validate()) throw ConfigError(*err);
  return config;
}

// "2 s", "0.5 s": the watchdog's timeout in the hang's line.
static std::string timeoutWords(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
}

// " (emulated: --hang 2@5)" when the hang was injected, so the line says it was emulated.
static std::string hangLabel(const RunConfig& c) {
  return c.hang == "none" ? "" : " (emulated: --hang " + c.hang + ")";
}

static CommOptions commOptions(const RunConfig& c) {
  CommOptions o;
  o.algorithm = parseAllReduceAlgo(c.allreduce);
  o.timeoutSeconds = c.timeoutS;
  o.link = c.link;
  o.gpusPerNode = c.gpusPerNode;
  o.nodeLink = c.nodeLink;
  return o;
}

// [SECTION] Construction

Trainer::Trainer(const RunConfig& config, const ProgressFn& progress)
    : m_config(checked(config)),
      m_data(loadRunData(config, progress)),
      m_sampler(m_data->numTrain(), config.globalBatch(), config.seed) {
  if (config.backend == Backend::Mpi)
    throw ConfigError("backend: 'mpi' runs under mpirun (paralab-run --backend mpi)");
  // --backend nccl: rank r drives GPU r (ncclCommInitAll over devices 0..ranks-1, the GPUs
  // Compute::forRank gives ranks r < G; validate() saw ranks <= G). NCCL works on the
  // communicator's stream, not the rank's: the strategies call Compute::sync() before each
  // collective (the kernels that wrote its buffers are done) and NcclComm returns once its
  // stream is done, so the rank's later kernels read the result. Both hand-overs are host waits.
  m_world = config.backend == Backend::Nccl
                ? ThreadWorld::nccl(config.ranks, commOptions(config))
                : std::make_unique<ThreadWorld>(config.ranks, commOptions(config));
  for (int r = 0; r < config.ranks; ++r) {
    m_ranks.push_back(std::make_unique<Rank>());
    m_ranks.back()->rank = r;
  }
  build(config, progress);
}

Trainer::Trainer(const RunConfig& config, std::unique_ptr<Communicator> world)
    : m_config(checked(config)),
      m_data(loadRunData(config)),
      m_mpiWorld(std::move(world)),
      m_sampler(m_data->numTrain(), config.globalBatch(), config.seed) {
  if (m_mpiWorld->size() != config.ranks)
    throw ConfigError("ranks: --ranks " + std::to_string(config.ranks) + " but the job has " +
                      std::to_string(m_mpiWorld->size()) + " processes");
  m_ranks.push_back(std::make_unique<Rank>());
  m_ranks.back()->rank = m_mpiWorld->rank();
  build(config);
}

void Trainer::build(const RunConfig& config, const ProgressFn& progress) {
  const std::optional<FailSpec> hang = parseHang(config.hang, config.ranks);
  for (auto& r : m_ranks) {
    r->flight.setRank(r->rank);
    if (hang && hang->rank == r->rank) r->flight.armHang(hang->step);
  }
  const auto built = [&](int ranks) {
    if (progress) progress("building the ranks (model, optimizer, buffers)", ranks, config.ranks);
  };
  built(0);
  // One BLAS thread per rank: a rank is one worker, and parallelism is what strategies add.
  kernels::vendor_blas_set_threads(1);
  strategyFor(config);  // a clear error before any thread starts
  if (m_mpiWorld || config.ranks == 1) {
    // One local rank: it runs on the caller's thread, no hand-over per step.
    Rank& r = *m_ranks[0];
    r.comm = m_mpiWorld ? m_mpiWorld.get() : &m_world->communicator(0);
    SpanRecorder* spans = config.instrument ? &r.spans : nullptr;
    r.comm->setSpanRecorder(spans);
    r.comm->setMemoryTracker(&r.memory);
    r.comm->setFlightRecorder(&r.flight);
    r.compute = Compute::forRank(config, r.rank);
    RankContext ctx{r.rank, config.ranks, r.comm,       &r.memory,
                    spans,  &m_config,    m_data.get(), r.compute.get()};
    r.strategy = strategyFor(config).make(ctx);
    built(1);
    return;
  }
  m_driver = std::make_unique<Driver>();
  m_driver->thread = std::thread([this] {
    try {
      m_world->run([this](Communicator& comm) { rankMain(comm, *m_ranks[size_t(comm.rank())]); });
    } catch (const std::exception& e) {
      std::lock_guard lock(m_driver->mutex);
      if (m_driver->error.empty()) m_driver->error = e.what();
    }
    std::lock_guard lock(m_driver->mutex);
    if (m_driver->error.empty()) m_driver->error = "the ranks have stopped";
    m_driver->cv.notify_all();
  });
  std::unique_lock lock(m_driver->mutex);
  for (int seen = 0; seen < config.ranks && m_driver->error.empty();) {
    m_driver->cv.wait(lock, [&] { return m_driver->ready != seen || !m_driver->error.empty(); });
    seen = m_driver->ready;
    lock.unlock();  // the caller's progress may take locks of its own
    built(seen);
    lock.lock();
  }
  if (!m_driver->error.empty()) {
    const std::string why = m_driver->error;
    lock.unlock();
    m_driver->thread.join();
    throw std::runtime_error(why);
  }
}

void Trainer::rebuild(const RunConfig& config) {
  endRanks();  // a failed world's have ended already; a --rejoin's leave between steps
  m_driver.reset();
  m_ranks.clear();
  m_world.reset();
  m_config = checked(config);
  // Weak scaling's global batch follows the ranks.
  m_sampler = BatchSampler(m_data->numTrain(), config.globalBatch(), config.seed);
  m_world = std::make_unique<ThreadWorld>(config.ranks, commOptions(config));
  for (int r = 0; r < config.ranks; ++r) {
    m_ranks.push_back(std::make_unique<Rank>());
    m_ranks.back()->rank = r;
  }
  build(m_config);
}

int Trainer::failedRank() const { return m_driver ? m_driver->failedRank : -1; }

Trainer::~Trainer() { endRanks(); }

void Trainer::endRanks() {
  if (!m_driver) return;
  {
    std::lock_guard lock(m_driver->mutex);
    m_driver->command = Command::Quit;
    ++m_driver->generation;
  }
  m_driver->cv.notify_all();
  if (m_driver->thread.joinable()) m_driver->thread.join();
}

// [SECTION] Rank threads

void Trainer::rankMain(Communicator& comm, Rank& r) {
  Driver& d = *m_driver;
  try {
    r.comm = &comm;
    SpanRecorder* spans = m_config.instrument ? &r.spans : nullptr;
    comm.setSpanRecorder(spans);
    comm.setMemoryTracker(&r.memory);
    comm.setFlightRecorder(&r.flight);
    r.compute = Compute::forRank(m_config, r.rank);  // on this thread: its GPU becomes current
    RankContext ctx{r.rank, m_config.ranks, &comm,        &r.memory,
                    spans,  &m_config,      m_data.get(), r.compute.get()};
    r.strategy = strategyFor(m_config).make(ctx);  // collective for some strategies
    uint64_t seen;
    {
      std::lock_guard lock(d.mutex);
      seen = d.generation;
      ++d.ready;
    }
    d.cv.notify_all();
    while (true) {
      Command c;
      {
        std::unique_lock lock(d.mutex);
        d.cv.wait(lock, [&] { return d.generation != seen || !d.error.empty(); });
        if (!d.error.empty()) break;
        seen = d.generation;
        c = d.command;
      }
      if (c == Command::Quit) break;
      execute(r, c);
      {
        std::lock_guard lock(d.mutex);
        ++d.done;
      }
      d.cv.notify_all();
    }
  } catch (const std::exception& e) {
    {
      std::lock_guard lock(d.mutex);
      if (dynamic_cast<const CommTimeout*>(&e)) d.timedOut = true;
      if (dynamic_cast<const RankFailure*>(&e) && d.failedRank < 0) d.failedRank = r.rank;
      if (d.error.empty())  // a RankFailure names its rank already
        d.error = dynamic_cast<const RankFailure*>(&e)
                      ? e.what()
                      : "rank " + std::to_string(r.rank) + ": " + e.what();
    }
    d.cv.notify_all();
    comm.abort(e.what());  // the others' collectives end instead of waiting for this rank
  }
  r.strategy.reset();  // strategies with threads of their own stop them here, on every rank
  r.compute.reset();   // on the rank's thread, its GPU current
}

void Trainer::execute(Rank& r, Command c) {
  r.compute->makeCurrent();  // one local rank runs on whichever thread calls the trainer
  // Collectives outside a step (evaluation with experts spread, saving, loading, sampling)
  // belong to no step: their spans stay out of every step's timeline and figures.
  if (c != Command::Step) r.comm->setStep(-1);
  if (c == Command::Step) {
    r.comm->setStep(m_step + 1);
    r.memory.resetPeaks();
    r.comm->accounting().take();  // traffic since the last step belongs to no step
    r.compute->beginStep();
    r.startNs = nowNs();
    r.result = r.strategy->step(m_step, m_batch);
    r.compute->endStep();  // the step is over when its GPU work is; its spans are recorded
    r.endNs = nowNs();
    r.traffic = r.comm->accounting().take();
  } else if (c == Command::Eval) {
    const int64_t n = m_evalSamples > 0 ? std::min<int64_t>(m_evalSamples, m_data->numTest())
                                        : m_data->numTest();
    // One rank's (micro-)batch at a time: no new activation memory.
    const int chunk =
        std::max(1, m_config.globalBatch() / m_config.ranks / std::max(1, m_config.accumulate));
    const auto record = [&](const Evaluation& e) {  // rank 0's figures of the held-out set
      m_evalAccuracy = e.predictions > 0 ? double(e.correct) / double(e.predictions) : 0.0;
      m_evalLoss = n > 0 ? e.lossSum / double(n) : 0.0;
    };
    if (const std::optional<Evaluation> all = r.strategy->evaluateAll(n, chunk)) {  // every rank
      if (r.rank == 0) record(*all);
      return;
    }
    Model& model = r.strategy->beginEval();
    if (r.rank == 0) {
      Evaluation sum;
      for (int64_t i = 0; i < n; i += chunk) {
        const int b = int(std::min<int64_t>(chunk, n - i));
        const Evaluation e = model.evaluate(&m_data->testX[size_t(i) * m_data->inputDim],
                                            &m_data->testY[size_t(i)], b);
        sum.correct += e.correct, sum.predictions += e.predictions, sum.lossSum += e.lossSum;
      }
      record(sum);
    }
    r.strategy->endEval();
  } else if (c == Command::Sample) {
    Model& model = r.strategy->beginEval();
    if (auto* gpt = dynamic_cast<Gpt*>(&model); gpt && r.rank == 0 && m_data->text()) {
      std::vector<int> ids = {int(m_data->testX.at(0))};
      gpt->generate(ids, m_sampleCount, m_config.seed);
      for (int id : ids) m_sampleText += m_data->vocab[size_t(id)];
    }
    r.strategy->endEval();
  } else if (c == Command::Save) {
    r.strategy->saveState(m_state);  // rank 0 writes it; the others take part in gathers
  } else if (c == Command::Load) {
    r.strategy->loadState(m_state);  // read only, by every rank
  } else if (c == Command::Heal) {
    heal(r.rank, *r.comm, *r.strategy);  // --rejoin (elastic.cpp)
  }
}

TrainingState Trainer::saveState() {
  m_state = TrainingState{};
  runCommand(Command::Save);
  m_state.step = m_step;
  return std::move(m_state);
}

void Trainer::loadState(const TrainingState& state) {
  m_state = state;
  runCommand(Command::Load);
  m_step = state.step;  // the sampler picks up the global batch of the next step
  m_state = TrainingState{};
}

void Trainer::runCommand(Command c) {
  if (!m_driver) {
    try {
      execute(*m_ranks[0], c);
    } catch (const RankFailure& e) {
      // Under mpirun the other processes wait in a collective MPI cannot interrupt: the job
      // ends now, with this message, rather than at their timeout.
      // With --elastic the caller ends it instead, for a relaunch (train/elastic.h).
      if (m_mpiWorld && !m_config.elastic) m_mpiWorld->abort(e.what());
      throw;
    }
    return;
  }
  Driver& d = *m_driver;
  std::unique_lock lock(d.mutex);
  if (!d.error.empty()) throw std::runtime_error(d.error);
  d.command = c;
  d.done = 0;
  ++d.generation;
  d.cv.notify_all();
  d.cv.wait(lock, [&] { return d.done == int(m_ranks.size()) || !d.error.empty(); });
  if (d.error.empty()) return;
  // A failed run: every rank leaves (the abort releases their collectives) before the cause is
  // read, so the rank whose watchdog fired has said so and no rank still writes its recorder.
  lock.unlock();
  if (d.thread.joinable()) d.thread.join();
  if (d.timedOut) {
    // The watchdog fired: one line from every rank's flight recorder, the first error otherwise.
    std::vector<RankFlight> flights = flightRecord();
    HangDiagnosis hang = diagnoseHang(flights);
    if (hang.found) {
      const std::string line = "watchdog: " + hang.line + " (no progress in " +
                               timeoutWords(m_config.timeoutS) + ")" + hangLabel(m_config);
      throw HangDetected(line, std::move(hang), std::move(flights));
    }
  }
  throw std::runtime_error(d.error);
}

std::vector<RankFlight> Trainer::flightRecord() const {
  std::vector<RankFlight> out;
  for (const auto& r : m_ranks) out.push_back(r->flight.snapshot());
  return out;
}

// [SECTION] Steps and their metrics

int64_t Trainer::parameterCount() const { return parameterCountOf(m_config, *m_data); }

int Trainer::rankOfLocal(int i) const { return m_ranks.at(size_t(i))->rank; }
const SpanRecorder& Trainer::spans(int local) const { return m_ranks.at(size_t(local))->spans; }
const MemoryTracker& Trainer::memory(int local) const { return m_ranks.at(size_t(local))->memory; }
const Compute& Trainer::compute(int local) const { return *m_ranks.at(size_t(local))->compute; }
Strategy& Trainer::strategy(int local) { return *m_ranks.at(size_t(local))->strategy; }
const CommTraffic& Trainer::lastTraffic(int local) const { return m_ranks.at(size_t(local))->traffic; }

std::vector<RankHoldings> Trainer::holdings() {
  std::vector<RankHoldings> out;
  for (const auto& r : m_ranks) {
    out.push_back(r->strategy->holdings());
    out.back().rank = r->rank;
    out.back().lastStep = r->traffic;
  }
  return out;
}

StepMetrics Trainer::step() { return m_config.elastic ? elasticStep() : stepOnce(); }

StepMetrics Trainer::stepOnce() {
  m_sampler.globalBatch(m_step, m_batch);
  const int64_t t0 = nowNs();
  runCommand(Command::Step);
  const int64_t t1 = nowNs();
  StepMetrics m = assemble(t0, t1);
  ++m_step;
  if (!std::isfinite(m.loss) && isRoot())
    throw std::runtime_error("training diverged: the loss is not finite at step " +
                             std::to_string(m_step) + "; lower the learning rate (now " +
                             std::to_string(m_config.lr) + ")");
  const bool lastStep = m_config.steps > 0 && m_step == m_config.steps;
  if (m_config.evalEvery > 0 && (m_step % m_config.evalEvery == 0 || lastStep)) {
    const double acc = evaluate(m_config.evalSamples);
    if (isRoot()) m.testAccuracy = acc, m.testLoss = m_evalLoss;
  }
  return m;
}

std::string Trainer::generateText(int count) {
  // Rank 0 generates alone: not with experts spread over ranks (paralab-run refuses that).
  if (m_config.model != ModelKind::Gpt || count <= 0 || (m_config.hasExperts() && m_config.ep > 1))
    return "";
  m_sampleCount = count;
  m_sampleText.clear();
  runCommand(Command::Sample);
  return m_sampleText;
}

double Trainer::evaluate(int maxSamples) {
  m_evalSamples = maxSamples;
  m_evalLoss.reset();  // here, before the ranks run: rank 0 alone sets it
  runCommand(Command::Eval);
  return m_evalAccuracy;
}

namespace {

// Divided, not multiplied by 1e-6: the nearest double to the exact value, which prints short.
double ms(int64_t ns) { return double(ns) / 1e6; }

// Time covered by the union of the spans, clipped to [t0, t1]: what was not idle.
int64_t coveredNs(std::vector<Span> spans, int64_t t0, int64_t t1) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.startNs < b.startNs; });
  int64_t covered = 0, reach = t0;
  for (const Span& s : spans) {
    const int64_t a = std::max(s.startNs, reach), b = std::min(s.endNs, t1);
    if (b > a) covered += b - a;
    reach = std::max(reach, std::min(s.endNs, t1));
  }
  return covered;
}

// The step's traffic by (op, group), algorithms summed: the per-rank traffic bars' stacks.
std::vector<OpTraffic> opTraffic(const CommTraffic& traffic) {
  std::map<std::pair<std::string, std::string>, OpTraffic> rows;
  for (const CommOpTotals& o : traffic.ops) {
    OpTraffic& row = rows[{commOpName(o.op), o.group}];
    row.op = commOpName(o.op), row.group = o.group;
    row.calls += o.calls, row.bytesSent += o.sent, row.bytesRecv += o.recv, row.ms += ms(o.timeNs);
  }
  std::vector<OpTraffic> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

}  // namespace

// One rank's record of the step just taken, from its spans in [t0, t1], its traffic and its
// tracker: what it sends to rank 0 under MPI.
RankMetrics Trainer::measure(const Rank& r, int64_t t0, int64_t t1) const {
  const std::vector<Span> spans = r.spans.since(m_step + 1);
  const RankStep& res = r.result;
  RankMetrics k;
  k.rank = r.rank;
  k.lossSum = res.lossSum;
  k.samples = res.samples;
  double* part[] = {&k.dataMs, &k.forwardMs, &k.backwardMs, &k.optimizerMs};
  for (const Span& s : spans)
    if (s.kind != SpanKind::Comm && s.kind != SpanKind::Idle) {
      // What of the span lies in the step: a deferred straggler's emulated compute may have
      // begun in the gap before it (faults.h), and the step's figures are the step's.
      const double d = ms(std::min(s.endNs, t1) - std::max(s.startNs, t0));
      if (d <= 0) continue;
      k.computeMs += d;
      *part[int(s.kind)] += d;  // Data, Forward, Backward, Optimizer
      // --straggler: the emulated part of this rank's backwardMs
      if (s.op == kStragglerSpanOp) k.emulatedStragglerMs = k.emulatedStragglerMs.value_or(0) + d;
    }
  k.commMs = ms(r.traffic.timeNs);
  k.idleMs = ms(std::max<int64_t>(0, (t1 - t0) - coveredNs(spans, t0, t1)));
  if (m_config.instrument) k.overlap = overlapMeter(spans, t0, t1);  // metrics/overlap.h
  k.bytesSent = r.traffic.bytesSent;
  k.bytesRecv = r.traffic.bytesRecv;
  k.sentTo = r.traffic.sentTo;
  if (m_config.gpusPerNode > 0) k.tiers = r.traffic.tiers;  // bytes by tier (link_model.h)
  k.ops = opTraffic(r.traffic);
  k.bytesModelled = r.traffic.modelled;
  k.staleness = res.staleness;
  k.spread = res.spread;
  if (m_config.pp > 1 && m_config.instrument)  // the stage's pipeline work (pipeline.h)
    if (const StageTimes st = stageTimes(spans); st.any) k.stage = st;
  if (m_config.cp > 1 && m_config.instrument)  // the ring's transfers (ring_attention.h)
    if (const RingOverlap o = ringOverlap(spans); o.transfers > 0)
      k.cpTransferMs = o.transferMs, k.cpHiddenMs = o.hiddenMs, k.cpExposedMs = o.exposedMs;
  if (!res.expertTokens.empty()) {  // [L x E], flat in the strategy's report
    const size_t E = size_t(m_config.experts);
    for (size_t i = 0; i < res.expertTokens.size(); i += E)
      k.expertTokens.emplace_back(res.expertTokens.begin() + long(i),
                                  res.expertTokens.begin() + long(i + E));
  }
  k.droppedTokens = res.droppedTokens;
  k.tokens = res.tokens;
  k.auxLoss = res.auxLoss;
  k.lossScale = res.lossScale;
  k.skippedSteps = res.skippedSteps;
  k.flushedGrads = res.flushedGrads;
  k.mem = r.memory.snapshot();  // current, peak of the sum and each category's (metrics.md)
  return k;
}

StepMetrics Trainer::assemble(int64_t t0, int64_t t1) {
  std::vector<RankMetrics> records;
  for (const auto& r : m_ranks)
    records.push_back(m_mpiWorld ? measure(*r, r->startNs, r->endNs) : measure(*r, t0, t1));
  if (m_mpiWorld) {  // every rank's record to rank 0, as its JSON (outside the accounting)
    const std::vector<std::string> all = m_mpiWorld->gatherToRoot(toJson(records[0]).dump());
    if (m_mpiWorld->rank() == 0) {
      records.clear();
      for (const std::string& s : all)
        records.push_back(rankMetricsFromJson(nlohmann::json::parse(s)));
    }
  }
  StepMetrics m;
  m.step = m_step + 1;
  m.stepMs = ms(t1 - t0);
  // The samples the ranks processed: the global batch, except where a step is more than one
  // batch (a federated round: every taking part client's local steps).
  double samples = 0;
  for (const RankMetrics& r : records) samples += double(r.samples);
  if (samples <= 0) samples = m_config.globalBatch();
  m.samplesPerS = m.stepMs > 0 ? samples / (m.stepMs * 1e-3) : 0;
  m.modelGflops = modelFlopsPerSample(m_config, *m_data) * m.samplesPerS * 1e-9;
  m.emulated = emulatedBriefs(m_config);
  if (m_config.gpusPerNode > 0) m.gpusPerNode = m_config.gpusPerNode;
  if (m_config.accumulate > 1) m.accumulate = m_config.accumulate;
  if (m_config.elastic) m.world = m_config.ranks;
  // The step's figures from its ranks' (metrics.md): loss over the samples they processed,
  // staleness their mean, spread their maximum, MoE counts summed, the breakdown rank 0's.
  double lossSum = 0, staleness = 0;
  int stalenessRanks = 0;
  for (const RankMetrics& r : records) {
    lossSum += r.lossSum;
    if (r.staleness) staleness += *r.staleness, ++stalenessRanks;
    if (r.spread) m.spread = std::max(m.spread.value_or(0), *r.spread);
    if (r.tokens) {
      m.expertTokens.resize(r.expertTokens.size(), std::vector<int64_t>(size_t(m_config.experts)));
      for (size_t l = 0; l < r.expertTokens.size(); ++l)
        for (size_t e = 0; e < r.expertTokens[l].size(); ++e)
          m.expertTokens[l][e] += r.expertTokens[l][e];
      m.droppedTokens = m.droppedTokens.value_or(0) + r.droppedTokens.value_or(0);
      m.auxLoss = m.auxLoss.value_or(0) + r.auxLoss.value_or(0);
    }
    if (r.flushedGrads) m.flushedGrads = m.flushedGrads.value_or(0) + *r.flushedGrads;
    if (r.rank == 0) {
      m.lossScale = r.lossScale;  // the same on every rank (they agree on overflows)
      m.skippedSteps = r.skippedSteps;
      m.dataMs = r.dataMs;
      m.forwardMs = r.forwardMs;
      m.backwardMs = r.backwardMs;
      m.optimizerMs = r.optimizerMs;
    }
  }
  if (stalenessRanks > 0) m.staleness = staleness / stalenessRanks;
  // Pipeline bubble per rank over the pipeline's time, their mean, and the reference.
  if (m_config.pp > 1 && m_config.instrument) {
    // One clock: thread ranks share it, and so do processes on one host (CLOCK_MONOTONIC).
    std::vector<StageTimes> times;
    for (const RankMetrics& r : records) times.push_back(r.stage.value_or(StageTimes{}));
    const std::vector<double> bubble = measuredBubble(times);
    double sum = 0;
    for (size_t i = 0; i < bubble.size(); ++i) sum += *(records[i].bubble = bubble[i]);
    m.bubble = sum / double(bubble.size());
    m.bubbleReference =
        scheduleBubble(m_config.schedule, m_config.pp, m_config.microbatches,
                       pipelineChunks(m_config.schedule, m_config.pp, m_config.virtualStages));
  }
  m.loss = lossSum / samples;
  m.ranks = std::move(records);
  return m;
}

}  // namespace paralab
