// Expert parallelism (--model moe or --model gpt --ffn moe, --ep G; Lepikhin et al. 2020,
// GShard; Rajbhandari et al. 2022, DeepSpeed-MoE): each MoE block's E experts are spread over an
// expert-parallel group of G ranks (E/G each); a token's row travels to its experts' rank and
// back by all-to-all. The model is any Model with MoE blocks (its moeParts()): the MoE MLP,
// whose tokens are samples, or the GPT, whose tokens are every position of every window.
// The collectives of the step (the MoE layer's are written in this file):
//   per block, forward:  allGather of the routing counts over dp (k x E floats per rank: the
//                        global capacity and both all-to-alls' row counts follow from them),
//                        allToAllv dispatch (token rows), allToAllv combine (expert outputs);
//   per block, backward: allToAllv of the output gradients to the experts, allToAllv of the
//                        input gradients back;
//   data parallelism:    the rank's GradSync (grad_sync.cpp) sums the non-expert gradients over
//                        dp and the expert gradients over expert-dp (the replicas of one expert,
//                        one per group), as --zero and --dp-version say: all-reduce (per tensor or
//                        bucketed with overlap) or ZeRO-1/2/3, each range over its own group.
// With G = 1 and one rank this is the serial model, the reference. With --device cuda the model,
// its gradients and the optimizer state are device memory: the rows' all-to-alls and the
// gradients' sums move device buffers after Compute::sync(), and the routing counts (host
// numbers) travel through a small device buffer, since NCCL moves device memory only.
// See tests/engine/tst_moe.cpp, tst_cuda_moe.cpp, tst_gpt.cpp,
// `paralab-run --model moe --ranks 4 --ep 2 --topk 2` and `paralab-bench ep`.
#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "device/compute.h"
#include "data/dataset.h"
#include "model/model.h"
#include "model/moe_ffn.h"
#include "parallel/data/grad_sync.h"
#include "parallel/holdings.h"
#include "parallel/process_grid.h"
#include "memory/memory_tracker.h"
#include "parallel/data/replica.h"  // shardBegin, shardLen
#include "train/precision.h"

namespace paralab {

namespace {

class ExpertParallel final : public Strategy, private ExpertExchange, private UnitHooks {
 public:
  explicit ExpertParallel(RankContext& ctx)
      : m_ctx(ctx),
        m_grid(std::make_unique<ProcessGrid>(
            GridShape{ctx.config->dpDegree(), 1, 1, ctx.config->ep}, *ctx.comm)),
        m_precision(*ctx.config) {
    ensureCompute(m_ctx, m_ownCompute);
    // Mixed precision (train/precision.h): 16-bit parameters and activations counted at 2 bytes.
    countStoredBytes(ctx.memory, ctx.config->precision);
    m_precision.runOn(compute());  // gradients rounded, unscaled and checked on the rank's device
    const GridCoords& c = m_grid->coords();
    m_topo.tokenRanks = m_grid->dp().size();
    m_topo.tokenRank = c.dp;
    m_topo.epTokenRanks.clear();
    for (int q = 0; q < m_grid->ep().size(); ++q)  // dp index of each member of my EP group
      m_topo.epTokenRanks.push_back(
          ProcessGrid::coordsOf(m_grid->shape(), m_grid->ep().worldRankOf(q)).dp);
    // Every rank builds its shard of the model the serial run would build from the same seed:
    // every dense weight, and its run of each block's experts.
    ModelShard shard;
    shard.epRank = c.ep, shard.epSize = m_grid->shape().ep;
    m_model = makeModel(*ctx.config, *ctx.data, ctx.memory, m_ctx.compute, shard);
    m_moe = m_model->moeParts();
    if (!m_moe) throw std::logic_error("expert parallelism: the model has no experts");
    if (m_precision.active()) {  // the shard's initial weights rounded into their 16-bit store
      m_model->storeActivationsIn(m_precision.dtype());
      roundStored(compute(), m_precision.dtype(), m_model->params().params().data(),
                  m_model->params().numel());
    }
    m_moe->exchange = this;
    // Data parallelism: non-expert weights have dp replicas, each expert dp/ep (expert-dp).
    std::vector<SyncRange> ranges;
    for (auto [b, e] : m_moe->denseRanges) ranges.push_back({b, e, 0, ""});
    for (auto [b, e] : m_moe->expertRanges) ranges.push_back({b, e, 1, ".experts"});
    GradSyncSettings sync = GradSyncSettings::of(*ctx.config);
    sync.callsDuringBackward = true;  // the all-to-alls of the rows
    m_sync = std::make_unique<GradSync>(
        m_model->params(),
        std::vector<SyncGroup>{{&m_grid->dp(), "dp"}, {&m_grid->expertDp(), "expert-dp"}},
        std::move(ranges), sync, compute(), ctx.memory, ctx.spans);
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    m_step = step + 1;
    RankStep out;
    out.samples = takeSlice(globalBatch);
    m_sync->beginStep(step);
    // Mixed precision: each unit's gradients rounded to 16 bits before the hooks; fp16's loss
    // scale folded into the normalizer (the gradients come out times S).
    MixedPrecision::Hooks rounding(m_precision, m_model->params(), this);
    UnitHooks* hooks = m_precision.active() ? static_cast<UnitHooks*>(&rounding) : this;
    out.lossSum = m_model->forwardLoss(m_x.data(), m_labels.data(), m_slice,
                                       m_precision.normalizer(double(globalBatch.size())), hooks);
    m_model->backward(hooks);  // buckets and ZeRO-2/3 start as units finish
    m_sync->reduce();
    // The summed gradients divided by S and checked; an overflow on any rank (each holds other
    // experts) skips the step on every rank.
    if (m_precision.finishGradients(m_sync->heldGradients(0, m_model->params().numel()),
                                    m_ctx.comm))
      m_sync->update();
    m_precision.report(out);
    const MoeStats& st = m_moe->stats;
    out.expertTokens = st.routed;
    out.droppedTokens = st.dropped;
    out.tokens = st.processed;
    out.auxLoss = st.auxLoss;
    return out;
  }

  // Whole dense weights and the experts of this shard (their names say which), or ZeRO's
  // chunks of them (flat); this dp slice of the batch.
  RankHoldings holdings() const override {
    RankHoldings h;
    h.rank = m_ctx.rank;
    h.coords = m_grid->coords();
    m_sync->addHoldings(h.items,
                        [&](HoldingKind k) { addWholeTensors(h.items, m_model->params(), k); });
    const int64_t B = m_ctx.config->globalBatch(), D = m_grid->dp().size(), q = h.coords.dp;
    const int64_t begin = shardBegin(int(q), int(D), B), len = shardLen(int(q), int(D), B);
    h.items.push_back(
        {m_ctx.config->model == ModelKind::Gpt ? "global batch (windows)" : "global batch",
         HoldingKind::Batch, 0, begin, begin + len, B, len, m_ctx.data->inputDim,
         len * m_ctx.data->inputDim * 4});
    // The activations the last forward kept, as measured: the experts' share of them follows
    // the routing, which no shape predicts. Rows are tokens (the GPT's: every position).
    const bool gpt = m_ctx.config->model == ModelKind::Gpt;
    const int64_t per = gpt ? m_ctx.config->seq : 1;
    const MemorySnapshot mem = m_ctx.memory ? m_ctx.memory->snapshot() : MemorySnapshot{};
    h.items.push_back({gpt ? "activations (tokens)" : "activations", HoldingKind::Activations, 0,
                       begin * per, (begin + len) * per, B * per, len * per, m_ctx.config->hidden,
                       mem[MemCategory::Activations]});
    for (auto [name, comm] : {std::pair<const char*, Communicator*>{"dp", &m_grid->dp()},
                              {"ep", &m_grid->ep()},
                              {"expert-dp", &m_grid->expertDp()}}) {
      HeldGroup g{name, {}};
      for (int r = 0; r < comm->size(); ++r) g.worldRanks.push_back(comm->worldRankOf(r));
      h.groups.push_back(g);
    }
    return h;
  }

  // Live reconfiguration through the serial layout (GradSync::save and load), the experts of
  // every block at their serial place: world rank 0 gives the dense weights, the first replica
  // of each expert shard (expert-dp rank 0) its experts (x + 0 is exact, so the saved state is
  // the bits each rank holds); loading, every rank takes its dense weights and its experts.
  void saveState(TrainingState& state) override {
    const bool dense = m_ctx.rank == 0, experts = m_grid->expertDp().rank() == 0;
    m_sync->save(state, *m_ctx.comm, parameterCountOf(*m_ctx.config, *m_ctx.data),
                 [&](const std::vector<float>& local, std::vector<float>& serial) {
                   for (const Segment& s : serialSegments())
                     if (s.expert ? experts : dense)
                       std::copy_n(&local[size_t(s.local)], s.len, &serial[size_t(s.whole)]);
                 });
  }
  void loadState(const TrainingState& state) override {
    m_sync->load(state, parameterCountOf(*m_ctx.config, *m_ctx.data),
                 [&](const std::vector<float>& serial, std::vector<float>& local) {
                   for (const Segment& s : serialSegments())
                     std::copy_n(&serial[size_t(s.whole)], s.len, &local[size_t(s.local)]);
                 });
  }

  // The model for rank 0 alone (the GPT's sampling): only when every expert is here, each
  // MoE layer then routing locally, with no collective.
  Model& beginEval() override {
    if (m_moe->placement.shards != 1)
      throw std::logic_error("expert parallelism: a model of spread experts runs on every rank");
    m_sync->gatherAll();
    m_moe->exchange = nullptr;
    return *m_model;
  }
  void endEval() override {
    m_moe->exchange = this;
    m_sync->releaseAll();
  }

  // Rank 0 evaluates; the other ranks of its EP group run their experts on its rows (with no
  // rows of their own), and every rank takes part in the routing-count all-gathers.
  std::optional<Evaluation> evaluateAll(int64_t n, int chunk) override {
    const Dataset& d = *m_ctx.data;
    Evaluation sum;
    m_sync->gatherAll();  // ZeRO-3: the whole shard, gathered for the evaluation
    for (int64_t i = 0; i < n; i += chunk) {
      const int b = m_ctx.rank == 0 ? int(std::min<int64_t>(chunk, n - i)) : 0;
      const Evaluation e =
          m_model->evaluate(&d.testX[size_t(i) * d.inputDim], &d.testY[size_t(i)], b);
      sum.correct += e.correct, sum.predictions += e.predictions, sum.lossSum += e.lossSum;
    }
    m_sync->releaseAll();
    return sum;
  }

 private:
  // This rank's contiguous part of the global batch, by its dp index: global token order is
  // dp order, which the capacity positions rely on.
  int takeSlice(const std::vector<int>& globalBatch) {
    ScopedSpan s(m_ctx.spans, SpanKind::Data, m_step, "take batch slice");
    const int D = m_grid->dp().size(), q = m_grid->coords().dp;
    const int64_t begin = shardBegin(q, D, int64_t(globalBatch.size()));
    m_slice = int(shardLen(q, D, int64_t(globalBatch.size())));
    const int in = m_ctx.data->inputDim;
    m_x.resize(size_t(m_slice) * in);
    m_labels.resize(size_t(m_slice));
    for (int i = 0; i < m_slice; ++i) {
      const int sample = globalBatch[size_t(begin + i)];
      std::copy_n(&m_ctx.data->trainX[size_t(sample) * in], in, &m_x[size_t(i) * in]);
      m_labels[size_t(i)] = m_ctx.data->trainY[size_t(sample)];
    }
    return m_slice;
  }

  // [SECTION] Where this shard's flat buffer sits in the serial model's. Both list the same
  // weights in the same order, the serial one with every expert of a block where the shard has
  // its E/G (one contiguous run per block, moe.h): a dense run keeps its place, a block's
  // expert run starts firstExpert() experts into the block's E.
  struct Segment {
    int64_t local, whole, len;
    bool expert;
  };
  std::vector<Segment> serialSegments() const {
    std::vector<Segment> out;
    for (auto [b, e] : m_moe->denseRanges) out.push_back({b, 0, e - b, false});
    for (auto [b, e] : m_moe->expertRanges) out.push_back({b, 0, e - b, true});
    std::sort(out.begin(), out.end(),
              [](const Segment& x, const Segment& y) { return x.local < y.local; });
    const int64_t X = m_moe->shape.expertParameterCount();
    int64_t at = 0;  // floats of the serial layout before this segment
    for (Segment& s : out) {
      s.whole = at + (s.expert ? m_moe->firstExpert() * X : 0);
      at += s.expert ? m_moe->shape.experts * X : s.len;
    }
    if (at != parameterCountOf(*m_ctx.config, *m_ctx.data))
      throw std::logic_error("moe: the shard's layout does not map onto the serial model's");
    return out;
  }

  // Where this rank's buffers live and its math runs; collectives take its device, after
  // compute().sync() (the communicator reads and writes them from its own stream).
  Compute& compute() { return *m_ctx.compute; }
  Device device() const { return m_ctx.compute->device(); }

  // [SECTION] The collectives of the MoE layer (ExpertExchange), outside the compute spans.
  const ExpertTopology& topology() const override { return m_topo; }

  void gatherCounts(const float* mine, float* all, int n) override {
    Paused p(*this);
    Communicator& dp = m_grid->dp();
    if (dp.size() == 1) {
      std::copy_n(mine, n, all);
    } else if (!compute().onGpu()) {
      dp.allGather(mine, all, n);
    } else {  // host numbers via a device buffer [mine | everyone's]: NCCL moves no host memory
      const int64_t need = int64_t(n) * (1 + dp.size());
      if (m_counts.numel() < need) {
        m_counts = Tensor();
        m_counts = compute().tensor({need}, MemCategory::Comm, m_ctx.memory);
      }
      float* d = m_counts.data();
      compute().upload(d, mine, n);
      compute().sync();
      dp.allGather(d, d + n, n, Device::Cuda);
      compute().download(all, d + n, int64_t(n) * dp.size());
    }
  }

  void exchangeRows(const float* send, const std::vector<int64_t>& sendRows, float* recv,
                    const std::vector<int64_t>& recvRows, int width) override {
    Paused p(*this);
    std::vector<int64_t> sc(sendRows), rc(recvRows);
    for (int64_t& v : sc) v *= width;
    for (int64_t& v : rc) v *= width;
    compute().sync();  // the rows to send are written
    m_grid->ep().allToAllv(send, sc, recv, rc, device());
  }

  // [SECTION] Forward / backward spans per unit (UnitHooks), paused around collectives so
  // that compute_ms holds no communication, and the GradSync's hooks outside them. Spans of
  // the rank's Compute: on a GPU, CUDA events around the unit's kernels.
  void beforeForward(int u) override {
    m_sync->beforeForward(u);
    open(SpanKind::Forward);
  }
  void afterForward(int u) override {
    close();
    m_sync->afterForward(u);
  }
  void beforeBackward(int u) override {
    m_sync->beforeBackward(u);
    open(SpanKind::Backward);
  }
  void afterBackward(int u) override {
    close();
    m_sync->afterBackward(u);
  }
  void open(SpanKind k) {
    m_kind = k;
    m_span =
        compute().openSpan(m_ctx.spans, k, m_step, k == SpanKind::Forward ? "forward" : "backward");
    m_open = true;
  }
  void close() {
    if (!m_open) return;
    compute().closeSpan(m_span);
    m_open = false;
  }
  struct Paused {
    explicit Paused(ExpertParallel& s) : self(s), was(s.m_open) { self.close(); }
    ~Paused() {
      try {
        if (was) self.open(self.m_kind);
      } catch (...) {  // a CUDA failure: the rank's next call reports it
      }
    }
    ExpertParallel& self;
    bool was;
  };

  std::unique_ptr<Compute> m_ownCompute;  // when the context brought none
  RankContext m_ctx;
  std::unique_ptr<ProcessGrid> m_grid;
  MixedPrecision m_precision;  // --precision bf16|fp16: loss scale, gradient rounding, counts
  ExpertTopology m_topo;
  std::unique_ptr<Model> m_model;
  MoeParts* m_moe = nullptr;  // the model's experts and their routing figures
  std::unique_ptr<GradSync> m_sync;  // the gradient sums, the optimizer, ZeRO's shards
  std::vector<float> m_x;
  std::vector<int> m_labels;
  int m_slice = 0;
  int64_t m_step = 0;
  Tensor m_counts;  // a GPU: the routing counts' staging buffer
  Compute::OpenSpan m_span;
  SpanKind m_kind = SpanKind::Forward;
  bool m_open = false;
};

}  // namespace

std::unique_ptr<Strategy> makeExpertParallel(RankContext& ctx) {
  return std::make_unique<ExpertParallel>(ctx);
}

}  // namespace paralab
