// Gossip, decentralised SGD (`--strategy gossip --topology ring|random`; Lian et al. 2017,
// "Can decentralized algorithms outperform centralized algorithms?", D-PSGD): no global
// all-reduce; every step each rank averages its parameters with its neighbours' only, then
// applies its own gradient. With --device cuda the parameters, the neighbours' copies and the
// mixing stay on the GPU (send/recv with Device::Cuda after the rank's stream is done).
// See tests/engine/tst_async_strategies.cpp and tst_cuda_training.cpp.
#include <algorithm>
#include <numeric>

#include "comm/communicator.h"
#include "parallel/async/model_spread.h"
#include "parallel/data/replica.h"
#include "rng.h"

namespace paralab {

namespace {

// One step of D-PSGD (Lian et al. 2017, Algorithm 1) on rank i:
//   g_i = gradient at x_i on its slice (its own mini-batch, the mean over the slice);
//   x_i <- sum_j W_ij x_j  (neighbours only);  x_i <- optimizer step with g_i.
// W, the mixing matrix, is symmetric and doubly stochastic, so the mean model follows SGD on
// the mean gradient while the replicas contract towards it:
//   ring:   W_ii = W_i,i-1 = W_i,i+1 = 1/3 (Metropolis weights of a cycle; N = 2: 1/2 each);
//   random: a random perfect matching each step, W_ii = W_ij = 1/2 for partners (with N odd one
//           rank sits the step out), drawn from (seed, step) the same way on every rank.
// Optimizer state stays local. Traffic per step (group "world"): ring 2 x 4P bytes sent and
// received per rank (N = 2: 4P); random 4P for a paired rank, 0 for the one left out.
//
// Spread (model_spread.h) is reported every step, after the update. It needs the mean model,
// which gossip never forms: an all-reduce Avg of P floats plus one of 4 bytes, on a
// communicator of its own (group "spread") so the lesson can tell that measurement's traffic
// from the gossip's. It is counted in the rank's bytes like any other; a real deployment would
// not pay it.
class Gossip final : public ReplicaStrategy {
 public:
  explicit Gossip(RankContext& ctx)
      : ReplicaStrategy(ctx), m_opt(makeOptimizer(m_model->params().numel())),
        m_ring(ctx.config->topology == "ring") {
    const int64_t P = m_model->params().numel();
    if (m_ctx.worldSize > 1) {
      // Collective: every rank splits, the measurement gets its own group name.
      m_spreadComm = m_ctx.comm->split(0, m_ctx.rank, "spread");
      m_left = compute().tensor({P}, MemCategory::Comm, ctx.memory);
      if (m_ring && m_ctx.worldSize > 2)
        m_right = compute().tensor({P}, MemCategory::Comm, ctx.memory);
      m_mean = compute().tensor({P}, MemCategory::Workspace, ctx.memory);
    }
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    out.samples = takeSlice(step, globalBatch);
    m_globalBatch = std::max(1, m_slice);  // normalise by this rank's own mini-batch
    out.lossSum = forwardBackward(step);
    ParamSet& ps = m_model->params();
    float* x = ps.params().data();
    const int64_t P = ps.numel();
    if (m_ctx.worldSize > 1) {
      compute().sync();  // x is final (last step's update) before it is sent
      if (m_ring) mixRing(x, P);
      else mixRandom(step, x, P);
    }
    update(step, *m_opt, x, ps.grads().data());
    if (m_ctx.worldSize > 1) {
      compute().sync();
      m_spreadComm->allReduce(x, m_mean.data(), P, ReduceOp::Avg, AllReduceAlgo::Configured,
                              device());
      out.spread = spreadFromMean(*m_spreadComm, compute(), x, m_mean.data(), P);
    }
    return out;
  }

 private:
  // Exchange with both ring neighbours, then x <- (left + x + right) / 3. MpiComm's send may
  // wait for the matching recv, so even ranks send first and odd ranks receive first: every
  // send meets a posted recv within two hops, for any N (also odd N, where ranks N-1 and 0 are
  // both even).
  void mixRing(float* x, int64_t P) {
    const int n = m_ctx.worldSize, me = m_ctx.rank;
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    Communicator& c = *m_ctx.comm;
    float* fromLeft = m_left.data();
    if (n == 2) {  // one neighbour, on both sides
      exchange(x, fromLeft, P, right);
      const float* both[] = {x, fromLeft};
      compute().average(x, both, 2, P);
      return;
    }
    float* fromRight = m_right.data();
    const Device d = device();
    if (me % 2 == 0) {
      c.send(x, P, right, d);
      c.recv(fromLeft, P, left, d);
      c.send(x, P, left, d);
      c.recv(fromRight, P, right, d);
    } else {
      c.recv(fromLeft, P, left, d);
      c.send(x, P, right, d);
      c.recv(fromRight, P, right, d);
      c.send(x, P, left, d);
    }
    const float* three[] = {fromLeft, x, fromRight};
    compute().average(x, three, 3, P);
  }

  // This step's partner from a random perfect matching, then x <- (x + partner's) / 2.
  void mixRandom(int64_t step, float* x, int64_t P) {
    const int n = m_ctx.worldSize;
    // Fisher-Yates shuffle from SplitMix64 (rng.h): identical on every rank, machine and
    // compiler (std::shuffle is not). Pairs are (perm[0], perm[1]), (perm[2], perm[3]), ...
    std::vector<int> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    Rng rng(m_ctx.config->seed * 0x9E3779B97F4A7C15ull + uint64_t(step) + 0x6055);
    for (int i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(rng.below(uint64_t(i) + 1))]);
    const int at = int(std::find(perm.begin(), perm.end(), m_ctx.rank) - perm.begin());
    if ((at ^ 1) >= n) return;  // N odd: the last one sits this step out
    const int partner = perm[size_t(at ^ 1)];
    exchange(x, m_left.data(), P, partner);
    const float* both[] = {x, m_left.data()};
    compute().average(x, both, 2, P);
  }

  // Swap P floats with one peer: the lower rank sends first (no cycle under MpiComm).
  void exchange(const float* mine, float* theirs, int64_t P, int peer) {
    Communicator& c = *m_ctx.comm;
    if (m_ctx.rank < peer) {
      c.send(mine, P, peer, device());
      c.recv(theirs, P, peer, device());
    } else {
      c.recv(theirs, P, peer, device());
      c.send(mine, P, peer, device());
    }
  }

  // Live reconfiguration carries rank 0's model and optimizer state.
  Optimizer* fullOptimizer() override { return m_opt.get(); }
  std::unique_ptr<Optimizer> m_opt;  // this rank's own, never mixed
  bool m_ring;
  std::unique_ptr<Communicator> m_spreadComm;  // group "spread": the measurement only
  Tensor m_left, m_right;  // neighbours' parameters as received (comm buffers, P floats each)
  Tensor m_mean;           // the mean model, for the spread (workspace)
};

}  // namespace

std::unique_ptr<Strategy> makeGossip(RankContext& ctx) { return std::make_unique<Gossip>(ctx); }

}  // namespace paralab
