// Elastic data parallelism (--elastic, thread ranks of --strategy sync): when a replica fails
// (--fail), the survivors form a new group of one rank fewer, re-split the global batch over
// themselves and redo the failed step from the state after the last completed one, without a
// restart; with --rejoin the lost replica comes back at a later step boundary, healed from a
// live peer. After torchft's quorum and heal (github.com/pytorch/torchft): membership is agreed
// at a step boundary, the live replicas' state is the group's, and a recovering replica receives
// that state from a live one before it takes part. Under mpirun the job cannot re-form in place:
// it ends for a relaunch on the survivors from its last checkpoint (train/elastic.h).
// See tests/engine/tst_elastic.cpp and `paralab-run --ranks 4 --fail 3@10 --elastic --rejoin 3@20`.
//
// What a real cluster adds that this does not: a lighthouse or store that the replicas ask for
// the quorum (here the failure is seen by the process that runs every rank), heartbeats and
// timeouts to tell a dead replica from a slow one, new communicators over the network (NCCL's
// abort and re-init), and a recovering replica that is a new process on another machine, which
// asks the lighthouse whom to heal from.
#include "train/elastic.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "train/faults.h"
#include "train/trainer.h"

namespace paralab {

RunConfig relaunchConfig(const RunConfig& failed) {
  RunConfig c = failed;
  c.ranks = failed.ranks - 1;
  if (c.dp > 0) c.dp = c.ranks;
  c.fail = "none";
  return c;
}

std::optional<std::string> rejoinProblem(const RunConfig& c) {
  std::optional<FailSpec> back, lost;
  try {
    back = parseRejoin(c.rejoin, c.ranks);
  } catch (const ConfigError& e) {
    return std::string(e.what());
  }
  if (!back) return std::nullopt;
  if (!c.elastic) return std::string("rejoin: a replica rejoins an elastic run (give --elastic)");
  try {
    lost = parseFail(c.fail, c.ranks);
  } catch (const ConfigError&) {
    return std::nullopt;  // --fail's own check names it
  }
  const std::string rank = std::to_string(back->rank);
  if (!lost)
    return "rejoin: rank " + rank + " never failed (allowed: the rank of --fail RANK@STEP)";
  if (back->rank != lost->rank)
    return "rejoin: rank " + rank + " never failed (allowed: " + std::to_string(lost->rank) +
           ", the --fail rank)";
  if (back->step <= lost->step || (c.steps > 0 && back->step > c.steps))
    return "rejoin: step " + std::to_string(back->step) +
           " is not after the failure's (allowed: " + std::to_string(lost->step + 1) +
           (c.steps > 0 ? ".." + std::to_string(c.steps) : std::string(" or more")) + ")";
  return std::nullopt;
}

StepMetrics Trainer::elasticStep() {
  // Under mpirun a failed replica ends its process (paralab-run relaunches the job): no state
  // kept here between steps.
  if (m_mpiWorld) return stepOnce();
  // The state the survivors go on from: every replica holds it after a completed step (data
  // parallelism keeps the replicas equal); the trainer keeps it, since the failed step's
  // ranks have all ended by the time the new group forms.
  if (!m_lastGood) {
    m_lastGood = saveState();
    if (auto back = parseRejoin(m_config.rejoin, m_config.ranks))
      m_rejoin = {back->rank, back->step};
  }
  if (m_rejoin.rank >= 0 && m_rejoin.step == m_step + 1) rejoin();
  try {
    StepMetrics m = stepOnce();
    m_lastGood = saveState();
    return m;
  } catch (const std::exception&) {
    const int failed = failedRank();
    if (failed < 0 || m_config.ranks < 2) throw;  // not a replica's failure: the run ends
    m_elasticEvents.push_back({m_step + 1, failed, m_config.ranks, m_config.ranks - 1});
    reform();
    StepMetrics m = stepOnce();
    m_lastGood = saveState();
    return m;
  }
}

void Trainer::reform() {
  // The quorum: the members left. Ranks are renumbered 0..n-2 (a data-parallel replica has no
  // place of its own), and the failure that happened does not happen again.
  RunConfig c = m_config;
  c.ranks -= 1;
  if (c.dp > 0) c.dp = c.ranks;
  c.fail = "none";
  c.rejoin = "none";  // m_rejoin holds it: the rank it names is not in the smaller world
  rebuild(c);
  loadState(*m_lastGood);  // the step the failure interrupted is redone by the survivors
}

void Trainer::rejoin() {
  const int back = m_rejoin.rank;
  m_rejoin = {};
  bool lost = false;
  for (const ElasticEvent& e : m_elasticEvents) lost = lost || e.failedRank == back;
  if (!lost) return;  // its failure never came (a run resumed past it): nothing to rejoin
  // The quorum grows by one at this step boundary. Thread ranks cannot join a ThreadWorld that
  // exists, so the group is built anew: the survivors take back the state they held (the
  // trainer kept it, the same on every replica), and the returning replica, fresh from its
  // seed, holds none of it until a live peer sends it (heal()).
  RunConfig c = m_config;
  c.ranks += 1;
  if (c.dp > 0) c.dp = c.ranks;
  const int before = m_config.ranks;
  rebuild(c);
  m_joiner = back < c.ranks ? back : c.ranks - 1;  // its old place, the others in their order
  runCommand(Command::Heal);
  m_joiner = -1;
  m_elasticEvents.push_back({m_step + 1, -1, before, c.ranks, back});
}

namespace {

// An int64 as two floats of 24 bits each: exact up to 2^48 (the communicator carries floats).
void putCount(std::vector<float>& to, int64_t v) {
  to.push_back(float(v >> 24));
  to.push_back(float(v & 0xFFFFFF));
}
int64_t getCount(const float* from) { return (int64_t(from[0]) << 24) | int64_t(from[1]); }

// A double as three floats of 22 bits of its representation each: exact.
void putDouble(std::vector<float>& to, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  for (int shift : {44, 22, 0}) to.push_back(float((bits >> shift) & 0x3FFFFF));
}
double getDouble(const float* from) {
  uint64_t bits = 0;
  for (int i = 0; i < 3; ++i) bits = (bits << 22) | uint64_t(from[i]);
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// What the sender's header says it sends: [step, optimizer steps, moment one held, moment two
// held, master held, loss scale, clean steps, skipped steps].
constexpr int64_t kHeadFloats = 2 + 2 + 3 + 3 + 2 + 2;

}  // namespace

void Trainer::heal(int rank, Communicator& comm, Strategy& strategy) {
  // torchft's heal: a live replica sends its state to the recovering one over the group's
  // communicator (accounted as its traffic, outside any step): the parameters, the optimizer's
  // moments and step count, in 16 bits the fp32 master copy and fp16's loss scale, and the step
  // done, which is also the data position (the sampler draws step s's global batch from the
  // seed and s). Rank 0 sends, or rank 1 when rank 0 is the one returning.
  const int from = m_joiner == 0 ? 1 : 0;
  const int64_t P = parameterCount();
  TrainingState s;
  if (rank != m_joiner) s = *m_lastGood;
  std::vector<float> head;
  if (rank == from) {
    putCount(head, s.step);
    putCount(head, s.optimizerSteps);
    for (const std::vector<float>* v : {&s.optM, &s.optV, &s.master})
      head.push_back(float(!v->empty()));
    putDouble(head, s.lossScale.scale);
    putCount(head, s.lossScale.clean);
    putCount(head, s.lossScale.skipped);
    comm.send(head.data(), int64_t(head.size()), m_joiner);
    comm.send(s.params.data(), P, m_joiner);
    for (const std::vector<float>* v : {&s.optM, &s.optV, &s.master})
      if (!v->empty()) comm.send(v->data(), P, m_joiner);
  } else if (rank == m_joiner) {
    head.resize(size_t(kHeadFloats));
    comm.recv(head.data(), kHeadFloats, from);
    s.step = getCount(&head[0]);
    s.optimizerSteps = getCount(&head[2]);
    s.lossScale = {getDouble(&head[7]), getCount(&head[10]), getCount(&head[12])};
    s.params.resize(size_t(P));
    comm.recv(s.params.data(), P, from);
    int held = 4;
    for (std::vector<float>* v : {&s.optM, &s.optV, &s.master})
      if (head[size_t(held++)] != 0) v->resize(size_t(P)), comm.recv(v->data(), P, from);
    if (s.step != m_step)
      throw std::runtime_error("rejoin: the state received is of step " + std::to_string(s.step) +
                               ", the group's of step " + std::to_string(m_step));
  }
  strategy.loadState(s);
}

}  // namespace paralab
