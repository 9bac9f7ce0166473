// Parameter server (`--strategy ps-sync|ps-async --servers S`; Li et al. 2014, "Scaling
// distributed machine learning with the parameter server"): workers push gradients and pull
// parameters. The flat parameter buffer is cut into S balanced contiguous shards; shard k and
// its optimizer state live on rank k (servers colocated with the first S workers, as BytePS
// does). With --device cuda shards, gradients and messages are device memory and every push and
// pull passes Device::Cuda; the version number that rides with an async reply is the one float
// copied between host and device. ps-sync trains in bf16/fp16 (mixed precision, precision.h):
// the servers keep the fp32 master of their shards. See tests/engine/tst_parallel_equals_serial.cpp
// (ps-sync), tst_precision_ps.cpp, tst_async_strategies.cpp and tst_cuda_training.cpp.
#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/data/grad_sync.h"  // HeldGradients
#include "parallel/data/replica.h"

namespace paralab {

namespace {

// [SECTION] What both kinds share: S servers on the first S ranks, each with the optimizer
// state of its shard, and live reconfiguration. Server k holds the authoritative shard k of
// the parameters and its optimizer state (with mixed precision also the shard's fp32 master);
// saving broadcasts each from its server (counted) into the serial layout on every rank, and
// loading hands each server its shard back.
class ParamServerBase : public ReplicaStrategy {
 public:
  explicit ParamServerBase(RankContext& ctx)
      : ReplicaStrategy(ctx), m_servers(ctx.config->servers) {
    const int64_t P = m_model->params().numel();
    if (m_ctx.rank < m_servers) m_opt = makeOptimizer(shardLen(m_ctx.rank, m_servers, P));
  }

  // Every shard and its optimizer state is broadcast from its server (device buffers on the
  // GPU: the moments through a staging tensor), so every rank ends with the whole parameters.
  void saveState(TrainingState& state) override {
    Communicator& comm = *m_ctx.comm;
    float* params = m_model->params().params().data();
    const int64_t P = m_model->params().numel();
    const bool hasM = m_ctx.config->optimizer != "sgd", hasV = m_ctx.config->optimizer == "adam";
    const bool hasMaster = m_precision.active();  // the fp32 master, on the servers
    std::vector<float> m(hasM ? size_t(P) : 0), v(hasV ? size_t(P) : 0),
        master(hasMaster ? size_t(P) : 0);
    Tensor staging = compute().tensor({largestShard()}, MemCategory::Comm, m_ctx.memory);
    // Server k's moment shard (`mine`, null elsewhere) to every rank; rank 0 keeps it in `all`.
    auto share = [&](const float* mine, std::vector<float>& all, int k, int64_t b, int64_t n) {
      if (m_ctx.rank == k) compute().copy(staging.data(), mine, n);
      compute().sync();
      comm.broadcast(staging.data(), n, k, device());
      if (m_ctx.rank == 0) compute().download(all.data() + b, staging.data(), n);
    };
    compute().sync();
    for (int k = 0; k < m_servers; ++k) {
      const int64_t b = shardBegin(k, m_servers, P), n = shardLen(k, m_servers, P);
      comm.broadcast(params + b, n, k, device());
      if (hasM) share(m_ctx.rank == k ? m_opt->momentOne() : nullptr, m, k, b, n);
      if (hasV) share(m_ctx.rank == k ? m_opt->momentTwo() : nullptr, v, k, b, n);
      if (hasMaster)
        share(m_ctx.rank == k ? m_opt->currentMaster(params + b) : nullptr, master, k, b, n);
    }
    if (m_ctx.rank != 0) return;
    state.params.resize(size_t(P));
    compute().download(state.params.data(), params, P);
    state.optM = std::move(m);
    state.optV = std::move(v);
    state.master = std::move(master);
    state.optimizerSteps = m_opt ? m_opt->steps() : 0;  // rank 0 is always a server
    state.lossScale = m_precision.lossScaleState();     // the same on every rank
  }

  void loadState(const TrainingState& state) override {
    float* params = m_model->params().params().data();
    const int64_t P = m_model->params().numel();
    if (int64_t(state.params.size()) != P)
      throw std::runtime_error("the saved state does not fit this model");
    compute().upload(params, state.params.data(), P);
    if (m_opt) {  // a server: its shard's optimizer state
      const int64_t b = shardBegin(m_ctx.rank, m_servers, P),
                    n = shardLen(m_ctx.rank, m_servers, P);
      if (m_opt->momentOne() && !state.optM.empty())
        compute().upload(m_opt->momentOne(), state.optM.data() + b, n);
      if (m_opt->momentTwo() && !state.optV.empty())
        compute().upload(m_opt->momentTwo(), state.optV.data() + b, n);
      m_opt->setSteps(state.optimizerSteps);
      if (int64_t(state.master.size()) == P)
        m_opt->loadMaster(state.master.data() + b, n);
      else
        m_opt->retakeMaster();  // mixed precision: from the 16-bit parameters just loaded
    }
    compute().sync();  // the caller's vectors may go once this returns
    m_precision.restoreLossScale(state.lossScale);
  }

 protected:
  // Every rank: the whole model's parameters (16-bit values under mixed precision) and its
  // gradient buffer. Server k: its shard's optimizer state and fp32 master, rows [b, b + n) of
  // the flat buffer ("model (flat)" spans every layer, as the holdings map reads it).
  void addModelStates(std::vector<HeldSlice>& items) const override {
    const ParamSet& ps = m_model->params();
    const Dtype stored = m_ctx.config->precision;
    const size_t first = items.size();
    addWholeTensors(items, ps, HoldingKind::Params);
    for (size_t i = first; i < items.size() && sixteenBit(stored); ++i) {
      items[i].bytes = items[i].bytes / 4 * valueBytes(stored);
      items[i].dtype = stored;
    }
    addWholeTensors(items, ps, HoldingKind::Grads);
    if (!m_opt) return;
    const int64_t P = ps.numel(), b = shardBegin(m_ctx.rank, m_servers, P), n = m_opt->numel();
    const int dim = n == P ? -1 : 0;  // one server: the whole buffer
    const int slots = optimizerStateSlots(m_ctx.config->optimizer);
    if (slots > 0)
      items.push_back(
          {"model (flat)", HoldingKind::Optimizer, dim, b, b + n, P, n, slots, n * slots * 4});
    if (sixteenBit(stored))
      items.push_back({"model (flat)", HoldingKind::Master, dim, b, b + n, P, n, 1, n * 4});
  }

  int64_t largestShard() const {
    int64_t largest = 0;
    for (int k = 0; k < m_servers; ++k)
      largest = std::max(largest, shardLen(k, m_servers, m_model->params().numel()));
    return largest;
  }

  int m_servers;
  std::unique_ptr<Optimizer> m_opt;  // this rank's shard's state (servers only)
};

// [SECTION] ps-sync: every worker pushes each gradient shard to its server, which sums them;
// then each server updates its shard and sends the fresh shard back to every worker. The same
// sum and the same update as the serial run: equals serial. The pushes and pulls are
// point-to-point messages on every backend, as a parameter server's are (lesson 8: rank k
// serves every worker), so their bytes are counted as sent, under MPI too, never modelled.
// Traffic per step: worker r sends 4 P_k bytes of gradient to each server k != r and receives
// 4 P_k bytes of parameters back; server k receives (N-1) gradient shards and sends (N-1)
// parameter shards of 4 P_k bytes. Memory: optimizer state only on servers, P_k of it on server
// k, and one incoming shard.
//
// Mixed precision (--precision bf16|fp16, train/precision.h), as `--strategy sync` does it:
// every rank's parameters are 16-bit values and its backward rounds each unit's weight
// gradients to 16 bits (MixedPrecision::Hooks, in forwardBackward); the server sums the pushed
// shards in fp32, divides the sum by fp16's loss scale S and checks it, and its optimizer
// updates the shard's fp32 master copy (Optimizer's master, "master" memory, 4 P_k bytes on
// server k alone) and rounds it into the 16-bit shard it sends back. A shard's overflow is
// known to its server alone, so the finding is all-reduced over the world (one float, the only
// collective of the step, in 16 bits only): every rank skips the step, or none, and on a
// skipped step no shard is pulled (the parameters stay as they were everywhere). Messages move
// the 16-bit values in fp32 words, as the collectives do.
class ParamServerSync final : public ParamServerBase {
 public:
  explicit ParamServerSync(RankContext& ctx) : ParamServerBase(ctx) {
    if (m_ctx.rank < m_servers)
      m_incoming = compute().tensor({largestShard()}, MemCategory::Comm, ctx.memory);
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    out.samples = takeSlice(step, globalBatch);
    out.lossSum = forwardBackward(step);  // gradients scaled by S / global batch: they sum
    ParamSet& ps = m_model->params();
    const int64_t P = ps.numel();
    compute().sync();  // backward's gradients are complete
    // Push: shard k's gradients from every worker to server k.
    for (int k = 0; k < m_servers; ++k) {
      const int64_t b = shardBegin(k, m_servers, P), n = shardLen(k, m_servers, P);
      float* grads = ps.grads().data() + b;
      if (m_ctx.rank != k) {  // a worker: push the gradient shard
        m_ctx.comm->send(grads, n, k, device());
        continue;
      }
      // The server: every worker's push added to its own, in rank order.
      for (int w = 0; w < m_ctx.worldSize; ++w) {
        if (w == k) continue;
        m_ctx.comm->recv(m_incoming.data(), n, w, device());
        compute().residualAdd(grads, m_incoming.data(), n);
        compute().sync();  // the add has read the message before the next one lands on it
      }
    }
    // 16 bits: each server's summed shard divided by S and checked, agreed over the world.
    std::vector<HeldGradients> held;
    if (m_opt)
      held.push_back({ps.grads().data() + shardBegin(m_ctx.rank, m_servers, P), m_opt->numel()});
    const bool apply = m_precision.finishGradients(held, m_ctx.comm);
    m_precision.report(out);
    if (!apply) return out;  // an overflow: skipped on every rank
    // Pull: server k updates its shard and sends it to every worker.
    for (int k = 0; k < m_servers; ++k) {
      const int64_t b = shardBegin(k, m_servers, P), n = shardLen(k, m_servers, P);
      float* params = ps.params().data() + b;
      if (m_ctx.rank != k) {  // a worker: pull the fresh shard
        m_ctx.comm->recv(params, n, k, device());
        continue;
      }
      update(step, *m_opt, params, ps.grads().data() + b);
      compute().sync();
      for (int w = 0; w < m_ctx.worldSize; ++w)
        if (w != k) m_ctx.comm->send(params, n, w, device());
    }
    return out;
  }

 private:
  Tensor m_incoming;  // server: one worker's gradient shard, counted as comm memory
};

// [SECTION] ps-async: each push is applied alone, at once, and answered with the fresh shard.
//
// Service order. The Communicator receives from a named peer only (no MPI_ANY_SOURCE), so a
// server cannot take pushes in true arrival order; it serves its workers in a fixed
// round-robin, 0, 1, ..., N-1, every step. Shards are served one after another (shard 0's
// round, then shard 1's, ...), all on the rank's own thread: no cycle of blocking sends under
// MPI, no extra thread (MpiComm is initialised for calls from the main thread only), and
// 8 thread ranks on 2 cores just take turns.
//
// What is asynchronous: a worker's gradient is applied without waiting for the others', on
// parameters that other workers' updates have moved since the worker read them. This is the
// cyclic delayed update of Agarwal & Duchi 2011 ("Distributed delayed stochastic
// optimization"): in steady state a remote worker's update lands N-1 versions after the shard
// it was computed on (the others' pushes of one round in between); the server's own
// gradient for its own shard is k versions old (it reads its shard in place). What is not:
// workers still meet once per step (the trainer drives steps globally), and the round-robin
// makes worker w wait for the service of workers < w.
//
// Staleness (RankStep.staleness) is measured, not assumed: with each fresh shard the server
// sends one extra float, its shard version before applying this push (versions count updates,
// modulo 2^24 so that a float holds them exactly); the worker's staleness for that push is that
// version minus the version of the shard it computed on, averaged over the S shards.
// Each push is one optimizer step on the server: with N workers a global step is N updates of
// 1/N of the gradient each (plain SGD: the same total as ps-sync, only stale). Adam normalises
// each update, so its steps are N times larger than ps-sync's.
// Staleness acts like extra momentum (Mitliagkas et al. 2016, "Asynchrony begets momentum"):
// with --optimizer momentum (0.9) a learning rate that suits ps-sync may diverge here.
//
// Traffic per step: worker r sends 4 P_k bytes to each server k != r and receives
// 4 (P_k + 1) back; server k receives (N-1) x 4 P_k and sends (N-1) x 4 (P_k + 1).
constexpr int64_t kVersionModulo = int64_t(1) << 24;  // floats hold integers exactly below this

class ParamServerAsync final : public ParamServerBase {
 public:
  explicit ParamServerAsync(RankContext& ctx) : ParamServerBase(ctx), m_have(size_t(m_servers), 0) {
    // One shard plus its version, for a push (received by a server) or a reply.
    m_message = compute().tensor({largestShard() + 1}, MemCategory::Comm, ctx.memory);
    if (const auto slow = parseStraggler(ctx.config->straggler, ctx.worldSize)) {
      m_straggler = slow->rank;
      m_faults.deferSlowness();
      m_flag = compute().tensor({1}, MemCategory::Comm, ctx.memory);
    }
  }

  // --straggler: the slowed rank computes a gradient, is then busy for FACTOR - 1 times as long
  // (emulated), and pushes it once free; until then it tells each server it has none, and the
  // others are not held up (what asynchrony buys). Without a straggler every rank computes and
  // pushes every step.
  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    if (!m_held.held()) {
      const int samples = takeSlice(step, globalBatch);
      // A server computes on its own shard in place: the version it read is the current one.
      if (m_ctx.rank < m_servers) m_have[size_t(m_ctx.rank)] = m_version;
      m_held.computed(samples, forwardBackward(step));
      compute().sync();  // backward's gradients are complete before the first push
    }
    const bool push = m_held.deliver(m_faults, step + 1, m_ctx.spans);
    double staleness = 0;
    for (int k = 0; k < m_servers; ++k)
      staleness += m_ctx.rank == k ? serve(step, push) : pushPull(k, push);
    RankStep out;
    if (!push) return out;  // nothing delivered this step
    out.samples = m_held.samples();
    out.lossSum = m_held.lossSum();
    out.staleness = staleness / m_servers;
    return out;
  }

 private:
  // The straggler's word to server k before its push: 1 a gradient follows, 0 none yet.
  void sendFlag(bool gradient, int k) {
    const float v = gradient ? 1.f : 0.f;
    compute().upload(m_flag.data(), &v, 1);
    compute().sync();
    m_ctx.comm->send(m_flag.data(), 1, k, device());
  }
  bool recvFlag(int w) {
    m_ctx.comm->recv(m_flag.data(), 1, w, device());
    float v = 0;
    compute().download(&v, m_flag.data(), 1);
    return v != 0;
  }

  // Worker side of shard k: push the gradient shard, pull the fresh shard and its version.
  double pushPull(int k, bool push) {
    if (m_ctx.rank == m_straggler) sendFlag(push, k);
    if (!push) return 0;
    ParamSet& ps = m_model->params();
    const int64_t b = shardBegin(k, m_servers, ps.numel()), n = shardLen(k, m_servers, ps.numel());
    float* reply = m_message.data();
    m_ctx.comm->send(ps.grads().data() + b, n, k, device());
    m_ctx.comm->recv(reply, n + 1, k, device());
    compute().copy(ps.params().data() + b, reply, n);
    float version = 0;
    compute().download(&version, reply + n, 1);  // also: the copy above is done with `reply`
    const int64_t applied = int64_t(version);
    const int64_t stale = (applied - m_have[size_t(k)] + kVersionModulo) % kVersionModulo;
    m_have[size_t(k)] = (applied + 1) % kVersionModulo;  // the shard now includes our update
    return double(stale);
  }

  // Server side of this rank's shard: one push from every worker in round-robin order, each
  // applied at once (`ownPush`: this rank pushes too). Returns the staleness of its own update.
  double serve(int64_t step, bool ownPush) {
    ParamSet& ps = m_model->params();
    const int k = m_ctx.rank;
    const int64_t b = shardBegin(k, m_servers, ps.numel()), n = shardLen(k, m_servers, ps.numel());
    float* shard = ps.params().data() + b;
    float* message = m_message.data();
    double own = 0;
    for (int w = 0; w < m_ctx.worldSize; ++w) {
      if (w == k) {  // this rank's own push: no message
        if (!ownPush) continue;
        own = double((m_version - m_have[size_t(k)] + kVersionModulo) % kVersionModulo);
        update(step, *m_opt, shard, ps.grads().data() + b);
        m_version = (m_version + 1) % kVersionModulo;
        continue;
      }
      if (w == m_straggler && !recvFlag(w)) continue;  // the straggler has no gradient yet
      m_ctx.comm->recv(message, n, w, device());       // worker w's gradient shard
      update(step, *m_opt, shard, message);
      compute().copy(message, shard, n);
      const float version = float(m_version);  // the version this push was applied to
      compute().upload(message + n, &version, 1);
      compute().sync();  // the reply is complete before it is sent, and before the next recv
      m_version = (m_version + 1) % kVersionModulo;
      m_ctx.comm->send(message, n + 1, w, device());
    }
    return own;
  }

  int64_t m_version = 0;        // server: updates applied to its shard (mod 2^24)
  std::vector<int64_t> m_have;  // per shard: the version this worker's copy holds
  Tensor m_message;             // a shard and its version, counted as comm memory
  // --straggler (train/faults.h): the slowed rank (-1: none), its one-float flag, and the
  // gradient it holds until its emulated compute ends (with that step's samples and loss).
  int m_straggler = -1;
  Tensor m_flag;
  HeldGradient m_held;
};

}  // namespace

std::unique_ptr<Strategy> makePsSync(RankContext& ctx) {
  return std::make_unique<ParamServerSync>(ctx);
}
std::unique_ptr<Strategy> makePsAsync(RankContext& ctx) {
  return std::make_unique<ParamServerAsync>(ctx);
}

}  // namespace paralab
