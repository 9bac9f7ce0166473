// Local SGD (`--strategy local-sgd --sync-every H`; Stich 2019, "Local SGD converges fast and
// communicates little"; Lin et al. 2020, "Don't use large mini-batches, use local SGD"): each
// rank trains its own replica on its slice of the global batch, and every H steps the ranks
// average their parameters with one all-reduce. Runs with --device cuda too (the average on the
// GPU; the spread's distances on the host, from copies made on averaging steps only).
// See tests/engine/tst_async_strategies.cpp and tst_cuda_training.cpp.
#include "comm/communicator.h"
#include "parallel/async/model_spread.h"
#include "parallel/data/replica.h"

namespace paralab {

namespace {

// A rank's slice is its own mini-batch: gradients are the mean over the slice (not the sum's
// share of the global batch, as in synchronous data parallelism), so each rank takes ordinary
// SGD steps alone. With H = 1 and equal slices, averaging after each step reproduces the serial
// run for SGD and momentum (both are linear in the gradient); Adam is not.
// Optimizer state (momentum, Adam's moments) stays local and is never averaged, as in Lin et
// al.'s local momentum SGD: only parameters travel.
//
// Traffic: nothing on H-1 steps of H; on the H-th, an all-reduce of the P parameters
// (ring: 2(N-1)/N x 4P bytes sent per rank) and one of 4 bytes for the spread.
// Spread (model_spread.h) is measured on averaging steps only, just before averaging: the
// furthest the replicas drifted in the round, from the mean the averaging computes anyway.
// Other steps report none (measuring them would cost an all-reduce a step, the very traffic
// local SGD saves).
class LocalSgd final : public ReplicaStrategy {
 public:
  explicit LocalSgd(RankContext& ctx)
      : ReplicaStrategy(ctx), m_opt(makeOptimizer(m_model->params().numel())),
        m_every(ctx.config->syncEvery) {
    if (m_ctx.worldSize > 1)
      m_mean = compute().tensor({m_model->params().numel()}, MemCategory::Workspace, ctx.memory);
    m_faults.deferSlowness();
  }

  // --straggler (train/faults.h): the slowed rank, busy with its emulated compute, skips local
  // steps meanwhile and waits only where it must meet the others, at the averaging. So the
  // others are held up once per H steps, not every step.
  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    ParamSet& ps = m_model->params();
    float* params = ps.params().data();
    if (!m_faults.busy(step + 1, m_ctx.spans)) {
      out.samples = takeSlice(step, globalBatch);
      m_globalBatch = std::max(1, m_slice);  // normalise by this rank's own mini-batch
      out.lossSum = forwardBackward(step);
      update(step, *m_opt, params, ps.grads().data());  // alone: no communication
    }
    if (m_ctx.worldSize > 1 && (step + 1) % m_every == 0) {
      m_faults.waitUntilFree(step + 1, m_ctx.spans);  // the average needs its model
      const int64_t P = ps.numel();
      compute().sync();  // the update is done
      m_ctx.comm->allReduce(params, m_mean.data(), P, ReduceOp::Avg, AllReduceAlgo::Configured,
                            device());  // the round's average
      out.spread = spreadFromMean(*m_ctx.comm, compute(), params, m_mean.data(), P);
      compute().copy(params, m_mean.data(), P);
    }
    return out;
  }

 private:
  // Live reconfiguration carries rank 0's model and optimizer state.
  Optimizer* fullOptimizer() override { return m_opt.get(); }
  std::unique_ptr<Optimizer> m_opt;  // this rank's own, never averaged
  int m_every;                       // H, steps between averagings
  Tensor m_mean;                     // the all-reduced average (workspace, P floats)
};

}  // namespace

std::unique_ptr<Strategy> makeLocalSgd(RankContext& ctx) { return std::make_unique<LocalSgd>(ctx); }

}  // namespace paralab
