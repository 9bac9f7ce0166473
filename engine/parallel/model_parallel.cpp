// Model parallelism composed with data parallelism (`--dp D --tp T --pp P [--sp] [--zero 1]`):
// every rank holds one pipeline stage's slice of the model, tensor-parallel within the stage,
// and runs its dp replica's slice of the global batch through the stage in micro-batches.
// Try: paralab-run --dp 2 --tp 2 --pp 2 --layers 4 --microbatches 4 --json
// See tests/engine/tst_model_parallel.cpp and tst_holdings.cpp.
//
// Ranks sit in ProcessGrid's dp x pp x tp mesh (process_grid.h, the only place the layout is).
// Per step, the collectives, in order:
//   1. the pipeline schedule (pipeline.cpp) over micro-batches, with point-to-point send/recv
//      to the neighbouring stages on the pp group, and the tensor-parallel exchanges inside
//      each stage's forward and backward on the tp group (tensor_parallel.cpp);
//   2. SP only: one all-reduce of each block's LayerNorm gradients over tp;
//   3. data parallelism over the dp group, per unit of the stage: one all-reduce of its
//      gradients, or with ZeRO-1 (Rajbhandari et al. 2020) a reduce-scatter, the update of the
//      owned chunk and an all-gather of the parameters (2(D-1)/D x 4 bytes per parameter of
//      the rank's slice either way);
//   4. the optimizer on what the rank holds.
// The loss: each micro-batch's loss is computed on the last stage, counted by its tp rank 0
// only (the others computed the same numbers), so the trainer's sum counts each sample once.
// With --device cuda the shard's parameters, gradients, optimizer state, activations and
// messages are device memory of the rank's Compute; the batch rows stay on the host and are
// uploaded per micro-batch. Every collective and send/recv is given that device and waits for
// the rank's stream first (ready()): the communicator works on its own stream.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "device/compute.h"
#include "optim/optimizer.h"
#include "parallel/pipeline.h"
#include "parallel/process_grid.h"
#include "parallel/replica.h"  // shardBegin, shardLen
#include "parallel/tensor_parallel.h"
#include "parallel/zero.h"

namespace paralab {

namespace {

class ModelParallel final : public Strategy {
 public:
  explicit ModelParallel(RankContext& ctx)
      : m_ctx(ctx),
        m_grid(GridShape{ctx.config->dpDegree(), ctx.config->tp, ctx.config->pp}, *ctx.comm),
        m_micros(ctx.config->microbatches) {
    ensureCompute(m_ctx, m_ownCompute);
    const RunConfig& c = *ctx.config;
    const GridCoords& at = m_grid.coords();
    m_shape.input = ctx.data->inputDim;
    m_shape.classes = ctx.data->classes;
    m_shape.hidden = c.hidden;
    m_shape.layers = c.layers;
    // Stage s: blocks [b0, b1), balanced; the input projection on the first, the classifier on
    // the last (units: 0 = in_proj, 1..L = blocks, L+1 = classifier).
    const int P = c.pp, s = at.pp, L = c.layers;
    const int b0 = int(shardBegin(s, P, L)), b1 = int(shardBegin(s + 1, P, L));
    // This rank's shard, on its device (Mlp draws the whole model on the host, keeps the slices).
    m_model = std::make_unique<Mlp>(
        m_shape, c.seed, ctx.memory,
        MlpShard{at.tp, c.tp, s == 0 ? 0 : b0 + 1, s == P - 1 ? L + 1 : b1}, true, &compute());
    m_stage = std::make_unique<TensorParallelStage>(*m_model, m_grid.tp(), c.sp, compute(),
                                                    ctx.memory, ctx.spans);
    m_schedule = pipelineSchedule(c.schedule, s, P, m_micros);
    // Data parallelism's share of the optimizer: ZeRO-1 chunks over dp, or every unit whole.
    const int D = m_grid.shape().dp;
    m_zero1 = c.zero == 1 && D > 1;
    m_layout = std::make_unique<ZeroLayout>(m_model->params(), m_zero1 ? D : 1);
    OptimizerHyper hyper;
    hyper.lr = float(c.lr);
    ParamSet& ps = m_model->params();
    if (m_zero1) {  // padded buffers so every unit cuts into D equal chunks (zero.h)
      m_params = compute().tensor({m_layout->paddedNumel}, MemCategory::Params, ctx.memory);
      m_grads = compute().tensor({m_layout->paddedNumel}, MemCategory::Grads, ctx.memory);
      for (const ZeroLayout::Unit& u : m_layout->units)
        compute().copy(m_params.data() + u.paddedBegin, ps.params().data() + u.begin, u.len);
      ps.releaseFlat();  // on a GPU the copies are queued ahead of any reuse of that memory
      for (int i = 0; i < int(m_layout->units.size()); ++i) {
        const ZeroLayout::Unit& u = m_layout->units[size_t(i)];
        ps.bindUnit(i, m_params.data() + u.paddedBegin, m_grads.data() + u.paddedBegin);
      }
    }
    for (const ZeroLayout::Unit& u : m_layout->units)
      m_opts.push_back(std::make_unique<Optimizer>(optimizerKind(c.optimizer), hyper, u.chunk,
                                                   ctx.memory, &compute()));
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    takeSlice(step, globalBatch);
    if (m_zero1)
      m_grads.zero();
    else
      m_model->params().zeroGrads();
    const double loss = runSchedule(step);  // 1.
    m_stage->finishBackward();              // 2.
    syncAndUpdate(step);                    // 3. and 4.
    RankStep out;
    if (m_stage->reportsLoss()) {
      out.lossSum = loss;
      out.samples = m_slice;
    }
    return out;
  }

  // Collective over the world: the whole model on rank 0 (sumSlicesToRoot), run there on the
  // rank's device.
  Mlp& beginEval() override {
    const int64_t P = m_model->wholeNumel();
    m_evalBuffer = compute().tensor({P}, MemCategory::Comm, m_ctx.memory);
    sumSlicesToRoot(hostShardParams(), m_evalBuffer);
    if (m_ctx.rank != 0) return *m_model;  // evaluation runs on rank 0 only
    m_eval = std::make_unique<Mlp>(m_shape, m_ctx.config->seed, m_ctx.memory, MlpShard{}, false,
                                   &compute());
    compute().copy(m_eval->params().params().data(), m_evalBuffer.data(), P);
    return *m_eval;
  }
  void endEval() override {
    m_eval.reset();
    m_evalBuffer = Tensor();
  }

  RankHoldings holdings() const override;

  // Live reconfiguration. Save, collective over the world: the slices of the parameters and
  // optimizer moments (ZeRO-1: all-gathered over dp first) summed onto rank 0 in the serial
  // layout as in beginEval, and copied back to the host there. Load: every rank takes its
  // slices from the host state and copies them to its device.
  void saveState(TrainingState& state) override {
    const int64_t P = m_model->wholeNumel();
    const bool root = m_ctx.rank == 0;
    Tensor sum = compute().tensor({P}, MemCategory::Comm, m_ctx.memory);
    auto gatherToRoot = [&](const std::vector<float>& shardFlat, std::vector<float>& out) {
      sumSlicesToRoot(shardFlat, sum);
      if (!root) return;
      out.assign(size_t(P), 0.f);
      compute().download(out.data(), sum.data(), P);
    };
    gatherToRoot(hostShardParams(), state.params);
    for (int k = 0; k < 2; ++k)
      if (moment(0, k)) gatherToRoot(shardMoments(k), k == 0 ? state.optM : state.optV);
    if (root) state.optimizerSteps = m_opts.front()->steps();
  }
  void loadState(const TrainingState& state) override {
    const int64_t P = m_model->wholeNumel();
    if (int64_t(state.params.size()) != P)
      throw std::runtime_error("the saved state holds " + std::to_string(state.params.size()) +
                               " parameters, this model " + std::to_string(P));
    std::vector<float> shard(size_t(m_model->params().numel()));
    m_model->copySlices(const_cast<float*>(state.params.data()), false, true, shard.data());
    ParamSet& ps = m_model->params();
    for (const ParamUnit& u : ps.units())  // wherever each unit is bound (ZeRO-1: padded)
      compute().upload(ps.param(u.firstRef), shard.data() + u.begin, u.numel());
    const int d = m_zero1 ? m_grid.coords().dp : 0;
    for (int k = 0; k < 2; ++k) {
      const std::vector<float>& from = k == 0 ? state.optM : state.optV;
      if (!moment(0, k) || int64_t(from.size()) != P) continue;
      compute().sync();  // `shard` is refilled below: the uploads from it are done
      m_model->copySlices(const_cast<float*>(from.data()), false, true, shard.data());
      for (size_t i = 0; i < m_layout->units.size(); ++i) {  // this rank's chunk of each unit
        const ZeroLayout::Unit& u = m_layout->units[i];
        const int64_t at = d * u.chunk, n = std::clamp<int64_t>(u.len - at, 0, u.chunk);
        if (n > 0) compute().upload(moment(i, k), shard.data() + u.begin + at, n);
      }
    }
    compute().sync();  // `shard` goes when this returns
    for (auto& opt : m_opts) opt->setSteps(state.optimizerSteps);
  }

 private:
  Compute& compute() { return *m_ctx.compute; }
  // The device of this rank's buffers, as collectives take it.
  Device device() const { return m_ctx.compute->device(); }
  // Before a collective or send/recv on this rank's buffers: the kernels that wrote them are
  // done and none still reads what the communicator, on its own stream, is about to write
  // (a pooled buffer's last backward, a new tensor's zero fill). Nothing to wait for on a CPU.
  void ready() { compute().sync(); }

  // The shard's parameters on the host, laid out like its flat buffer (Mlp::copySlices'
  // shardFlat), copied from wherever each unit is bound (ZeRO-1: the padded buffer).
  std::vector<float> hostShardParams() {
    ParamSet& ps = m_model->params();
    std::vector<float> host(size_t(ps.numel()));
    for (const ParamUnit& u : ps.units())
      compute().download(host.data() + u.begin, ps.param(u.firstRef), u.numel());
    return host;
  }

  // Collective over the world: `sum` (P floats of this rank's device) gets, on rank 0, the whole
  // model's flat layout of `shardFlat` (host, laid out like the shard's parameters): every dp-0
  // rank writes its slices (replicated weights from tp rank 0 only, so each float comes from
  // one rank and the sum is a copy), the others zeros.
  void sumSlicesToRoot(const std::vector<float>& shardFlat, Tensor& sum) {
    const int64_t P = m_model->wholeNumel();
    std::vector<float> whole(size_t(P), 0.f);
    if (m_grid.coords().dp == 0)
      m_model->copySlices(whole.data(), true, m_grid.coords().tp == 0,
                          const_cast<float*>(shardFlat.data()));
    compute().upload(sum.data(), whole.data(), P);
    ready();
    m_ctx.comm->reduce(sum.data(), sum.data(), P, 0, ReduceOp::Sum, device());
  }

  // Optimizer moment k (0: momentum / Adam's m, 1: Adam's v) of unit i, or null.
  float* moment(size_t i, int k) const {
    return k == 0 ? m_opts[i]->momentOne() : m_opts[i]->momentTwo();
  }
  // Moment k of every unit on the host, laid out like the shard's flat parameters (ZeRO-1: the
  // dp ranks' chunks all-gathered on the device first; collective over dp).
  std::vector<float> shardMoments(int k) {
    std::vector<float> shard(size_t(m_model->params().numel()));
    Tensor full;  // ZeRO-1: one unit's moment, every chunk (Comm)
    if (m_zero1) {
      int64_t most = 0;
      for (const ZeroLayout::Unit& u : m_layout->units) most = std::max(most, u.padded);
      full = compute().tensor({most}, MemCategory::Comm, m_ctx.memory);
    }
    for (size_t i = 0; i < m_layout->units.size(); ++i) {
      const ZeroLayout::Unit& u = m_layout->units[i];
      if (!m_zero1) {
        compute().download(shard.data() + u.begin, moment(i, k), u.len);
        continue;
      }
      ready();
      m_grid.dp().allGather(moment(i, k), full.data(), u.chunk, device());
      compute().download(shard.data() + u.begin, full.data(), u.len);
    }
    return shard;
  }

  // This dp replica's slice of the global batch; micro-batch m is chunk m of it.
  void takeSlice(int64_t step, const std::vector<int>& globalBatch) {
    ScopedSpan s(m_ctx.spans, SpanKind::Data, step + 1, "take batch slice");
    const int D = m_grid.shape().dp, d = m_grid.coords().dp;
    m_globalBatch = int(globalBatch.size());
    m_sliceBegin = int(shardBegin(d, D, m_globalBatch));
    m_slice = int(shardLen(d, D, m_globalBatch));
    const int Dim = m_ctx.data->inputDim;
    m_x.resize(m_model->hasUnit(0) ? size_t(m_slice) * Dim : 0);
    m_labels.resize(size_t(m_slice));
    for (int i = 0; i < m_slice; ++i) {
      const int sample = globalBatch[size_t(m_sliceBegin + i)];
      if (!m_x.empty())
        std::memcpy(&m_x[size_t(i) * Dim], &m_ctx.data->trainX[size_t(sample) * Dim],
                    sizeof(float) * Dim);
      m_labels[size_t(i)] = m_ctx.data->trainY[size_t(sample)];
    }
  }
  int microBegin(int m) const { return int(shardBegin(m, m_micros, m_slice)); }
  int microRows(int m) const { return int(shardLen(m, m_micros, m_slice)); }

  // 1. The pipeline: the schedule's actions in order; a micro-batch's activations live from
  // its forward to its backward.
  double runSchedule(int64_t step) {
    Communicator& pp = m_grid.pp();
    const int s = m_grid.coords().pp;
    std::vector<std::unique_ptr<MicroActs>> live(static_cast<size_t>(m_micros));
    double loss = 0;
    // A micro-batch's buffers come from the pool and go back after its backward: the pool
    // grows to the most micro-batches in flight (GPipe M, 1F1B at most P - stage), sized for
    // the largest, and stays for the next step as the serial model's activations do.
    const int largest = (m_slice + m_micros - 1) / m_micros;
    if (!m_pool.empty() && m_pool.front()->capacity < largest) m_pool.clear();
    auto acquire = [&](int m, int rows) {
      if (m_pool.empty()) m_pool.push_back(m_stage->allocate(m, largest, m_ctx.memory));
      std::unique_ptr<MicroActs> a = std::move(m_pool.back());
      m_pool.pop_back();
      m_stage->reuse(*a, m, rows);
      return a;
    };
    const int64_t most =
        m_stage->boundaryFloats((m_slice + m_micros - 1) / m_micros);  // largest chunk
    if (m_dOut.numel() < most) {
      m_dOut = compute().tensor({most}, MemCategory::Workspace, m_ctx.memory);
      m_dIn = compute().tensor({most}, MemCategory::Workspace, m_ctx.memory);
    }
    for (const PipeStep& p : m_schedule) {
      const int m = p.micro, rows = microRows(m);
      const int64_t n = m_stage->boundaryFloats(rows);
      std::unique_ptr<MicroActs>& acts = live[size_t(m)];
      switch (p.action) {
        case PipeAction::RecvAct:
          acts = acquire(m, rows);
          ready();
          pp.recv(m_stage->input(*acts), n, s - 1, device());
          break;
        case PipeAction::Forward: {
          if (!acts) acts = acquire(m, rows);
          const int at = microBegin(m);
          loss += m_stage->forward(step, *acts,
                                   m_x.empty() ? nullptr : &m_x[size_t(at) * m_shape.input],
                                   &m_labels[size_t(at)], m_globalBatch);
          break;
        }
        case PipeAction::SendAct:
          ready();
          pp.send(m_stage->output(*acts), n, s + 1, device());
          break;
        case PipeAction::RecvGrad:
          ready();  // the last backward has read m_dOut
          pp.recv(m_dOut.data(), n, s + 1, device());
          break;
        case PipeAction::Backward:
          m_stage->backward(step, *acts, m_dOut.data(), m_dIn.data());
          m_pool.push_back(std::move(acts));  // 1F1B reuses it for the next forward; GPipe holds M
          break;
        case PipeAction::SendGrad:
          ready();
          pp.send(m_dIn.data(), n, s - 1, device());
          break;
      }
    }
    return loss;
  }

  // 3. and 4. Gradients summed over the dp replicas of this slice, then the update.
  void syncAndUpdate(int64_t step) {
    Communicator& dp = m_grid.dp();
    ParamSet& ps = m_model->params();
    const int d = m_grid.coords().dp;
    for (size_t i = 0; i < m_layout->units.size(); ++i) {
      const ZeroLayout::Unit& u = m_layout->units[i];
      if (m_zero1) {
        float* grads = m_grads.data() + u.paddedBegin;
        float* owned = m_params.data() + u.paddedBegin + d * u.chunk;
        ready();  // in place: chunk d gets the sum
        dp.reduceScatter(grads, grads + d * u.chunk, u.chunk, ReduceOp::Sum, device());
        {
          ComputeSpan s(compute(), m_ctx.spans, SpanKind::Optimizer, step + 1, "optimizer");
          m_opts[i]->step(owned, grads + d * u.chunk);
        }
        ready();
        dp.allGather(owned, m_params.data() + u.paddedBegin, u.chunk, device());  // in place
      } else {
        float* grads = ps.grads().data() + u.begin;
        if (dp.size() > 1) {
          ready();
          dp.allReduce(grads, grads, u.len, ReduceOp::Sum, AllReduceAlgo::Configured, device());
        }
        ComputeSpan s(compute(), m_ctx.spans, SpanKind::Optimizer, step + 1, "optimizer");
        m_opts[i]->step(ps.params().data() + u.begin, grads);
      }
    }
  }

  std::unique_ptr<Compute> m_ownCompute;  // when the context brought none; outlives the rest
  RankContext m_ctx;
  mutable ProcessGrid m_grid;  // mutable: its group accessors are not const
  int m_micros;
  MlpShape m_shape;
  std::unique_ptr<Mlp> m_model;  // this rank's shard: its stage's units, its tp slice
  std::unique_ptr<TensorParallelStage> m_stage;
  std::vector<PipeStep> m_schedule;
  bool m_zero1 = false;
  std::unique_ptr<ZeroLayout> m_layout;            // over dp (ZeRO-1) or one rank (whole units)
  Tensor m_params, m_grads;                        // ZeRO-1: padded copies the model is bound to
  std::vector<std::unique_ptr<Optimizer>> m_opts;  // per unit: its owned chunk
  int m_globalBatch = 0, m_sliceBegin = 0, m_slice = 0;
  std::vector<float> m_x;     // host: this dp replica's input rows, uploaded per micro-batch
  std::vector<int> m_labels;  // host: their labels
  Tensor m_dOut, m_dIn;       // boundary gradients (Workspace)
  std::vector<std::unique_ptr<MicroActs>> m_pool;  // activation buffers not in use
  std::unique_ptr<Mlp> m_eval;
  Tensor m_evalBuffer;
};

// [SECTION] What this rank holds, from the shard's own metadata.
RankHoldings ModelParallel::holdings() const {
  RankHoldings h;
  h.rank = m_ctx.rank;
  h.coords = m_grid.coords();
  for (auto [name, comm] : {std::pair<const char*, Communicator*>{"dp", &m_grid.dp()},
                            {"tp", &m_grid.tp()},
                            {"pp", &m_grid.pp()}}) {
    HeldGroup g{name, {}};
    for (int i = 0; i < comm->size(); ++i) g.worldRanks.push_back(comm->worldRankOf(i));
    h.groups.push_back(g);
  }
  const ParamSet& ps = m_model->params();
  for (const HoldingKind k : {HoldingKind::Params, HoldingKind::Grads})
    for (int i = 0; i < int(ps.refs().size()); ++i) {
      const ParamRef& r = ps.ref(i);
      const ParamSlice& s = m_model->sliceOf(i);
      const int64_t total = s.dim < 0 ? s.whole.at(0) : s.whole.at(size_t(s.dim));
      const int64_t rows = r.shape.at(0), cols = r.numel() / rows;
      h.items.push_back({r.name, k, s.dim, s.dim < 0 ? 0 : s.begin, s.dim < 0 ? total : s.end,
                         total, rows, cols, r.numel() * 4});
    }
  const int slots = optimizerStateSlots(m_ctx.config->optimizer);
  const int d = m_zero1 ? m_grid.coords().dp : 0;
  for (size_t i = 0; slots > 0 && i < m_layout->units.size(); ++i) {
    const ZeroLayout::Unit& u = m_layout->units[i];
    const int64_t begin = std::min(u.len, d * u.chunk), end = std::min(u.len, begin + u.chunk);
    h.items.push_back({ps.units()[i].name + " (flat)", HoldingKind::Optimizer, m_zero1 ? 0 : -1,
                       begin, end, u.len, u.chunk, slots, u.chunk * slots * 4});
  }
  const int64_t B = m_globalBatch > 0 ? m_globalBatch : m_ctx.config->globalBatch();
  const int D = m_grid.shape().dp;
  const int64_t begin = shardBegin(m_grid.coords().dp, D, B),
                len = shardLen(m_grid.coords().dp, D, B);
  if (m_model->hasUnit(0))
    h.items.push_back({"global batch (inputs)", HoldingKind::Batch, 0, begin, begin + len, B, len,
                       m_shape.input, len * m_shape.input * 4});
  if (m_model->hasUnit(m_shape.layers + 1))
    h.items.push_back(
        {"global batch (labels)", HoldingKind::Batch, 0, begin, begin + len, B, len, 1, len * 4});
  // The residual stream rows of each micro-batch this rank keeps (SP: its 1/T of them), and
  // the bytes of one micro-batch's buffers (sized for the largest).
  const int64_t microBytes = m_stage->microBytes(int((len + m_micros - 1) / m_micros));
  for (int m = 0; m < m_micros; ++m) {
    const int rows = int(shardLen(m, m_micros, len));
    const MicroRows r = m_stage->rowsOf(rows);
    const int64_t at = begin + shardBegin(m, m_micros, len);
    const int64_t a = at + std::min(r.first, rows), b = at + std::min(r.first + r.local, rows);
    h.items.push_back({"micro-batch " + std::to_string(m) + " activations",
                       HoldingKind::Activations, 0, a, b, B, b - a, m_shape.hidden, microBytes});
  }
  return h;
}

}  // namespace

std::unique_ptr<Strategy> makeModelParallel(RankContext& ctx) {
  return std::make_unique<ModelParallel>(ctx);
}

}  // namespace paralab
