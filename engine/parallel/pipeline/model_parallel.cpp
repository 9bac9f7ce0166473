// Model parallelism composed with data parallelism (`--dp D --tp T --pp P [--sp] [--zero Z]`):
// every rank holds one pipeline stage's slice of the model, tensor-parallel within the stage,
// and runs its dp replica's slice of the global batch through the stage in micro-batches.
// Try: paralab-run --dp 2 --tp 2 --pp 2 --layers 4 --microbatches 4 --json
// The model is the MLP or the GPT: each rank builds its shard (model.h) and runs it through
// the model's Stage (stage.h: tensor_parallel.cpp, gpt_parallel.cpp); everything here is the
// same for both. See tests/engine/tst_model_parallel.cpp, tst_gpt.cpp and tst_holdings.cpp.
//
// Ranks sit in ProcessGrid's pp x dp x cp x tp mesh (process_grid.h, the only place the layout
// is). Context parallelism (--cp, the GPT only): the cp ranks of a dp index take the same slice
// of the batch, each its pieces of every window's tokens (ring_attention.h); their gradients
// are shares over tokens, so the dp sum below runs over dp x cp.
// Per step, the collectives, in order:
//   1. the stage's list of the pipeline schedule (schedule.h) over micro-batches, executed in
//      order, with point-to-point send/recv to the neighbouring stages on the pp group, and the tensor-parallel exchanges inside
//      each stage's forward and backward on the tp group (tensor_parallel.cpp);
//   2. data parallelism over the dp group: the stage's gradients summed by the rank's GradSync
//      (grad_sync.cpp) as --zero and --dp-version say: all-reduce (per tensor, or buckets started
//      during the last micro-batch's backward), or ZeRO-1/2/3's reduce-scatter (stages 2-3 per
//      unit and micro-batch during backward, stage 3 gathering each unit before it runs);
//   3. SP only: one all-reduce of each block's LayerNorm gradients over tp (where the rank
//      holds their sum over dp: all of them, or with ZeRO its owned chunk's share);
//   4. the optimizer on what the rank holds (ZeRO-1/2: the parameters all-gathered after it).
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
#include "model/gpt.h"
#include "parallel/data/grad_sync.h"
#include "parallel/tensor/gpt_parallel.h"
#include "parallel/pipeline/pipeline.h"
#include "parallel/process_grid.h"
#include "parallel/data/replica.h"  // shardBegin, shardLen
#include "parallel/pipeline/stage.h"

namespace paralab {

namespace {

class ModelParallel final : public Strategy {
 public:
  explicit ModelParallel(RankContext& ctx)
      : m_ctx(ctx),
        m_grid(GridShape{ctx.config->dpDegree(), ctx.config->tp, ctx.config->pp, 1,
                         ctx.config->cp},
               *ctx.comm),
        m_micros(ctx.config->microbatches) {
    ensureCompute(m_ctx, m_ownCompute);
    const RunConfig& c = *ctx.config;
    const GridCoords& at = m_grid.coords();
    // Stage s: blocks [b0, b1), balanced; the input layer on the first, the output layer on
    // the last (units: 0 = input, 1..L = blocks, L+1 = output).
    const int P = c.pp, s = at.pp, L = c.layers;
    const int b0 = int(shardBegin(s, P, L)), b1 = int(shardBegin(s + 1, P, L));
    // This rank's shard, on its device (drawn whole on the host, its slices kept).
    m_model = makeModel(c, *ctx.data, ctx.memory, &compute(),
                        ModelShard{at.tp, c.tp, s == 0 ? 0 : b0 + 1, s == P - 1 ? L + 1 : b1});
    m_stage = makeStage(*m_model, m_grid.tp(), c.sp, compute(), ctx.memory, ctx.spans,
                        m_grid.cp(), c.cpOrder == CpOrder::Zigzag);
    m_schedule = pipelineSchedule(c.schedule, s, P, m_micros);
    for (const PipeStep& p : m_schedule)  // a shard holds one chunk of the model
      if (p.chunk != 0) throw std::invalid_argument("schedule: one model chunk per stage");
    // Data parallelism: the stage's weights have a replica on every rank of the dp group (x cp).
    GradSyncSettings sync = GradSyncSettings::of(c);
    sync.callsDuringBackward = true;  // tp exchanges and pp messages
    m_sync = std::make_unique<GradSync>(
        m_model->params(),
        std::vector<SyncGroup>{{&m_grid.replicas(), c.cp > 1 ? "dp-cp" : "dp"}},
        std::vector<SyncRange>{},
        sync, compute(), ctx.memory, ctx.spans);
  }

  RankStep step(int64_t step, const std::vector<int>& globalBatch) override {
    takeSlice(step, globalBatch);
    m_sync->beginStep(step, m_micros);      // each unit's backward runs once per micro-batch
    const double loss = runSchedule(step);  // 1. (and 2. begun: buckets, ZeRO-2/3)
    m_sync->reduce();                       // 2.
    m_stage->finishBackward(*m_sync);       // 3.
    m_sync->update();                       // 4.
    RankStep out;
    if (m_stage->reportsLoss()) {
      out.lossSum = loss;  // cp: this rank's tokens' share of its windows' losses
      out.samples = m_grid.coords().cp == 0 ? m_slice : 0;  // each window counted once
    }
    return out;
  }

  // Collective over the world: the whole model on rank 0 (GradSync::sumToRoot), run there on the
  // rank's device.
  Model& beginEval() override {
    const int64_t P = m_model->wholeNumel();
    m_evalBuffer = compute().tensor({P}, MemCategory::Comm, m_ctx.memory);
    m_sync->sumToRoot(
        *m_ctx.comm, m_sync->hostParams(),
        [this](const auto& local, auto& serial) { toSerial(local, serial); }, m_evalBuffer);
    if (m_ctx.rank != 0) return *m_model;  // evaluation runs on rank 0 only
    m_eval = makeModel(*m_ctx.config, *m_ctx.data, m_ctx.memory, &compute(), {}, false);
    compute().copy(m_eval->params().params().data(), m_evalBuffer.data(), P);
    return *m_eval;
  }
  void endEval() override {
    m_eval.reset();
    m_evalBuffer = Tensor();
  }

  RankHoldings holdings() const override;

  // Live reconfiguration through the serial layout (GradSync::save and load): each shard's
  // slices, from dp replica 0 (replicated weights from tp rank 0 only).
  void saveState(TrainingState& state) override {
    m_sync->save(state, *m_ctx.comm, m_model->wholeNumel(),
                 [this](const auto& local, auto& serial) { toSerial(local, serial); });
  }
  void loadState(const TrainingState& state) override {
    m_sync->load(state, m_model->wholeNumel(),
                 [&](const std::vector<float>& serial, std::vector<float>& local) {
                   m_model->copySlices(const_cast<float*>(serial.data()), false, true,
                                       local.data());
                 });
  }

 private:
  Compute& compute() { return *m_ctx.compute; }
  // The device of this rank's buffers, as collectives take it.
  Device device() const { return m_ctx.compute->device(); }
  // Before a collective or send/recv on this rank's buffers: the kernels that wrote them are
  // done and none still reads what the communicator, on its own stream, is about to write
  // (a pooled buffer's last backward, a new tensor's zero fill). Nothing to wait for on a CPU.
  void ready() { compute().sync(); }

  // The whole model's flat layout of `local` (laid out like the shard's parameters), from the
  // dp-0, cp-0 ranks (replicated weights from tp rank 0 only, so each float comes from one rank).
  void toSerial(const std::vector<float>& local, std::vector<float>& serial) {
    if (m_grid.coords().dp == 0 && m_grid.coords().cp == 0)
      m_model->copySlices(serial.data(), true, m_grid.coords().tp == 0,
                          const_cast<float*>(local.data()));
  }

  // This dp replica's slice of the global batch; micro-batch m is chunk m of it.
  void takeSlice(int64_t step, const std::vector<int>& globalBatch) {
    ScopedSpan s(m_ctx.spans, SpanKind::Data, step + 1, "take batch slice");
    const int D = m_grid.shape().dp, d = m_grid.coords().dp;
    m_globalBatch = int(globalBatch.size());
    m_sliceBegin = int(shardBegin(d, D, m_globalBatch));
    m_slice = int(shardLen(d, D, m_globalBatch));
    const int Dim = m_ctx.data->inputDim;
    m_x.resize(m_stage->readsInputs() ? size_t(m_slice) * Dim : 0);
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
                                   m_x.empty() ? nullptr : &m_x[size_t(at) * m_ctx.data->inputDim],
                                   &m_labels[size_t(at)], m_globalBatch, m_sync.get());
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
          m_stage->backward(step, *acts, m_dOut.data(), m_dIn.data(), m_sync.get());
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

  std::unique_ptr<Compute> m_ownCompute;  // when the context brought none; outlives the rest
  RankContext m_ctx;
  mutable ProcessGrid m_grid;  // mutable: its group accessors are not const
  int m_micros;
  std::unique_ptr<Model> m_model;  // this rank's shard: its stage's units, its tp slice
  std::unique_ptr<Stage> m_stage;
  std::vector<PipeStep> m_schedule;
  std::unique_ptr<GradSync> m_sync;  // over dp (x cp): the gradient sum, the optimizer, ZeRO
  int m_globalBatch = 0, m_sliceBegin = 0, m_slice = 0;
  std::vector<float> m_x;     // host: this dp replica's input rows, uploaded per micro-batch
  std::vector<int> m_labels;  // host: their labels
  Tensor m_dOut, m_dIn;       // boundary gradients (Workspace)
  std::vector<std::unique_ptr<MicroActs>> m_pool;  // activation buffers not in use
  std::unique_ptr<Model> m_eval;
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
  if (Communicator* cp = m_grid.cp()) {
    HeldGroup g{"cp", {}};
    for (int i = 0; i < cp->size(); ++i) g.worldRanks.push_back(cp->worldRankOf(i));
    h.groups.push_back(g);
  }
  // The weights as this rank's slices of the whole model's (ZeRO: the chunks instead, flat).
  // A weight cut in parts (the GPT's q, k and v) is one item per part.
  const ParamSet& ps = m_model->params();
  m_sync->addHoldings(h.items, [&](HoldingKind k) {
    static const char* const kParts[] = {" (q)", " (k)", " (v)"};
    for (int i = 0; i < int(ps.refs().size()); ++i) {
      const ParamRef& r = ps.ref(i);
      const ParamSlice& s = m_model->sliceOf(i);
      const int64_t total = (s.dim < 0 ? s.whole.at(0) : s.whole.at(size_t(s.dim))) / s.groups;
      const int64_t rows = r.shape.at(0) / (s.dim == 0 ? s.groups : 1),
                    cols = r.numel() / s.groups / rows;
      for (int g = 0; g < s.groups; ++g)
        h.items.push_back({s.groups == 3 ? r.name + kParts[g] : r.name, k, s.dim,
                           s.dim < 0 ? 0 : s.begin, s.dim < 0 ? total : s.end, total, rows, cols,
                           r.numel() / s.groups * 4});
    }
  });
  const RunConfig& c = *m_ctx.config;
  const bool gpt = c.model == ModelKind::Gpt;
  const int64_t B = m_globalBatch > 0 ? m_globalBatch : c.globalBatch();
  const int D = m_grid.shape().dp, input = m_ctx.data->inputDim;
  const int64_t begin = shardBegin(m_grid.coords().dp, D, B),
                len = shardLen(m_grid.coords().dp, D, B);
  // The MLP's first stage reads the images, its last the labels; the GPT's first reads the
  // windows' tokens and its last their targets, from the same windows.
  if (m_stage->readsInputs())
    h.items.push_back({gpt ? "global batch (windows)" : "global batch (inputs)",
                       HoldingKind::Batch, 0, begin, begin + len, B, len, input,
                       len * input * 4});
  if (!gpt && m_model->hasUnit(c.layers + 1))
    h.items.push_back(
        {"global batch (labels)", HoldingKind::Batch, 0, begin, begin + len, B, len, 1, len * 4});
  // The residual stream rows of each micro-batch this rank keeps (SP: its 1/T of them; the
  // GPT's rows are tokens), and the bytes of one micro-batch's buffers (sized for the largest).
  const int64_t microBytes = m_stage->microBytes(int((len + m_micros - 1) / m_micros));
  const auto* gptStage = dynamic_cast<const GptStage*>(m_stage.get());
  if (const RingAttention* ring = gptStage ? gptStage->ring() : nullptr) {
    // cp: the rank's pieces of every window, by position within the window (0 .. T), each
    // micro-batch's buffers shared out over them; and the ring's two K/V(+dK/dV) blocks.
    const int T = c.seq;
    for (int m = 0; m < m_micros; ++m) {
      const int64_t windows = shardLen(m, m_micros, len);
      for (const auto& [p0, n] : ring->chunks().pieces)
        h.items.push_back({"micro-batch " + std::to_string(m) + " " + kStoredActivations +
                               " (positions " + std::to_string(p0) + "–" +
                               std::to_string(p0 + n - 1) + " of each window)",
                           HoldingKind::Activations, 0, p0, p0 + n, T, windows * n, c.hidden,
                           microBytes * n / ring->tokens()});
    }
    const int64_t rows = 2 * ((len + m_micros - 1) / m_micros) * ring->tokens();
    h.items.push_back({"K/V blocks of the ring (the one in hand and the one arriving)",
                       HoldingKind::Activations, -1, 0, rows, rows, rows,
                       4 * int64_t(c.hidden) / c.tp, ring->workspaceBytes(), false, true});
  } else {
    for (int m = 0; m < m_micros; ++m) {
      const MicroRows r = m_stage->rowsOf(int(shardLen(m, m_micros, len)));
      const int64_t per = r.perSample, rows = int64_t(r.rows) * per;
      const int64_t at = (begin + shardBegin(m, m_micros, len)) * per;
      const int64_t a = at + std::min<int64_t>(r.first, rows),
                    b = at + std::min<int64_t>(r.first + r.local, rows);
      h.items.push_back({"micro-batch " + std::to_string(m) +
                             (gpt ? std::string(" ") + kStoredActivations + " (tokens)"
                                  : std::string(" activations")),
                         HoldingKind::Activations, 0, a, b, B * per, b - a, c.hidden, microBytes});
    }
  }
  // The GPT's recomputation: the stage's one set of buffers the backward recomputes into,
  // sized for the largest micro-batch (GptStage::ensureScratch) and used by each in turn, the
  // rank's share of every token of it. Selective: the probabilities of the rank's heads (a row
  // of heads x T per token), which the micro-batches no longer keep; full: a whole block's
  // buffers (the micro-batches keep only the blocks' inputs).
  if (const auto* g = dynamic_cast<const Gpt*>(m_model.get());
      g && g->recompute() != Recompute::None &&
      m_stage->recomputedBytes(int((len + m_micros - 1) / m_micros)) > 0) {
    const int T = g->shape().seq, heads = g->shape().heads / m_grid.shape().tp;
    const int64_t windows = (len + m_micros - 1) / m_micros;
    const int64_t cols = g->recompute() == Recompute::Selective ? int64_t(heads) * T : c.hidden;
    h.items.push_back({recomputedActivationsName(g->recompute()), HoldingKind::Activations, 0,
                       begin * T, (begin + len) * T, B * T, windows * T, cols,
                       m_stage->recomputedBytes(int(windows)), true});
  }
  return h;
}

}  // namespace

std::unique_ptr<Strategy> makeModelParallel(RankContext& ctx) {
  return std::make_unique<ModelParallel>(ctx);
}

}  // namespace paralab
