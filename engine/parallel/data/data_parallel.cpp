// Synchronous data parallelism (`--strategy sync [--zero 1|2|3]`): every rank holds the model
// (or, with ZeRO, its shard of the model states), takes its slice of the global batch, and the
// ranks sum their gradients before the same update — mini-batch SGD on the global batch,
// whatever the number of ranks. The sum is the rank's GradSync over the world (grad_sync.cpp):
//   per-tensor (`--dp-version per-tensor`): after backward, one all-reduce per parameter tensor;
//   bucket (`--dp-version bucket`, default): buckets of --bucket-mb all-reduced on a
//          communication thread while backward goes on (PyTorch DDP, Li et al. 2020);
//   ZeRO-1/2/3 (Rajbhandari et al. 2020): optimizer state, gradients and parameters sharded
//          over the ranks, with reduce-scatter and all-gather;
//   --zero-shard node (HSDP, FSDP's HYBRID_SHARD): sharded over the G ranks of a node (group
//          "shard"), each node a replica; each owned gradient chunk is all-reduced across the
//          nodes among the ranks holding it (group "replicas"), the only bytes between nodes.
// What each stage shards, holds and sends per step: zero_policy.h.
// Try: paralab-run --ranks 4 --zero 3 --optimizer adam --lr 0.002 --json
//      paralab-run --ranks 8 --gpus-per-node 4 --zero 3 --zero-shard node --allreduce ring --json
// See tests/engine/tst_parallel_equals_serial.cpp, tst_zero.cpp, tst_hsdp.cpp and
// tst_cuda_training.cpp.
#include "comm/communicator.h"
#include "comm/hierarchical_allreduce.h"  // splitByNode
#include "parallel/data/accumulation.h"
#include "parallel/data/grad_sync.h"
#include "parallel/data/replica.h"

namespace paralab {

namespace {

class DataParallel final : public ReplicaStrategy {
 public:
  DataParallel(RankContext& ctx, ZeroStage stage)
      : ReplicaStrategy(ctx),
        m_nodes(nodeGroups(ctx, stage)),
        m_sync(m_model->params(), {syncGroup(ctx)}, {}, settings(stage), compute(), ctx.memory,
               ctx.spans) {}

  // --accumulate K (accumulation.h): K micro-batches, their gradients summed in place; the
  // GradSync counts K backwards per unit, so it all-reduces once, after the last.
  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    RankStep out;
    const int K = m_ctx.config->accumulate;
    m_sync.beginStep(step, K);
    for (int k = 0; k < K; ++k) {
      out.samples += takeSlice(step, microBatchOf(globalBatch, k, K), int(globalBatch.size()));
      // Buckets (after the last micro-batch) and ZeRO-2/3 (every micro-batch) start here.
      out.lossSum += forwardBackward(step, &m_sync, false, k == K - 1);
    }
    m_sync.reduce();
    // Mixed precision (train/precision.h): the summed gradients divided by the loss scale and
    // checked; an inf or NaN skips the update on every rank (ZeRO's shards agree on it).
    const bool sharded = m_ctx.config->zero > 0;
    if (m_precision.finishGradients(m_sync.heldGradients(0, m_model->params().numel()),
                                    sharded ? m_ctx.comm : nullptr))
      m_sync.update();
    m_precision.report(out);
    return out;
  }

  // ZeRO-3: collective, every rank gathers the whole model (Comm memory until endEval).
  Model& beginEval() override {
    m_sync.gatherAll();
    return *m_model;
  }
  void endEval() override { m_sync.releaseAll(); }

  // Live reconfiguration and checkpoints: the model states from wherever they live (ZeRO:
  // gathered, so collective; with mixed precision the fp32 master and the loss scale too);
  // every replica holds the same, rank 0's is the one kept.
  void saveState(TrainingState& state) override {
    const int64_t P = m_model->params().numel();
    m_sync.save(state, *m_ctx.comm, P,
                [&](const std::vector<float>& local, std::vector<float>& serial) {
                  if (m_ctx.rank == 0) serial = local;
                });
    state.lossScale = m_precision.lossScaleState();  // the same on every rank
  }
  void loadState(const TrainingState& state) override {
    m_sync.load(
        state, m_model->params().numel(),
        [](const std::vector<float>& serial, std::vector<float>& local) { local = serial; });
    m_precision.restoreLossScale(state.lossScale);
  }

  // The model states as the GradSync holds them: ZeRO's chunks, or the whole model.
  void addModelStates(std::vector<HeldSlice>& items) const override {
    m_sync.addHoldings(items, [&](HoldingKind k) { addWholeTensors(items, m_model->params(), k); });
  }

  // HSDP: the node's ranks that share the shards, and the ranks of other nodes holding this
  // rank's chunks (its replicas), beside the world.
  RankHoldings holdings() const override {
    RankHoldings h = ReplicaStrategy::holdings();
    for (const Communicator* c : {m_nodes.node.get(), m_nodes.across.get()}) {
      if (!c) continue;
      HeldGroup g{c->group(), {}};
      for (int q = 0; q < c->size(); ++q) g.worldRanks.push_back(c->worldRankOf(q));
      h.groups.push_back(g);
    }
    return h;
  }

 private:
  // --zero-shard node: the world cut into its nodes ("shard") and across them ("replicas").
  static NodeGroups nodeGroups(RankContext& ctx, ZeroStage stage) {
    if (stage == ZeroStage::None || ctx.config->zeroShard != ZeroShard::Node) return {};
    return splitByNode(*ctx.comm, "zero-shard: node", "shard", "replicas");
  }
  SyncGroup syncGroup(RankContext& ctx) const {
    if (!m_nodes.node) return {ctx.comm, "dp"};
    return {m_nodes.node.get(), "shard", m_nodes.across.get()};
  }

  GradSyncSettings settings(ZeroStage stage) const {
    GradSyncSettings s = GradSyncSettings::of(*m_ctx.config);
    s.zero = stage;
    return s;
  }

  NodeGroups m_nodes;  // HSDP's groups (empty otherwise): before m_sync, which uses them
  GradSync m_sync;
};

}  // namespace

std::unique_ptr<Strategy> makeDataParallel(RankContext& ctx) {
  return std::make_unique<DataParallel>(ctx, ZeroStage::None);
}
std::unique_ptr<Strategy> makeZero1(RankContext& ctx) {
  return std::make_unique<DataParallel>(ctx, ZeroStage::OptimizerState);
}
std::unique_ptr<Strategy> makeZero2(RankContext& ctx) {
  return std::make_unique<DataParallel>(ctx, ZeroStage::Gradients);
}
std::unique_ptr<Strategy> makeZero3(RankContext& ctx) {
  return std::make_unique<DataParallel>(ctx, ZeroStage::Parameters);
}

}  // namespace paralab
